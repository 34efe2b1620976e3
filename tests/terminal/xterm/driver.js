// Draws byte streams into @xterm/headless with the Unicode 11 widths, as the web page
// does, and describes the result cell by cell (support.py drives it).
//
//   node driver.js <node_modules folder>
//
// One JSON request per stdin line, one JSON answer per stdout line, in order:
//   {"cols": 80, "rows": 24, "scrollback": 1000,
//    "steps": [["write", "<base64>"], ["resize", cols, rows], ...]}
// -> {"buffer": "normal" | "alternate", "cursor": [x, y], "state": {...},
//     "normal": [line, ...], "alternate": [line, ...] | null}
// A line is {"wrapped": bool, "runs": [[count, chars, width, fg, bg, flags], ...]}:
// runs of equal cells, left to right. Each step waits for xterm.js to parse the write
// before the next, so a resize lands exactly between the bytes around it.
"use strict";

const path = require("path");
const readline = require("readline");

const modules = process.argv[2];
const { Terminal } = require(path.join(modules, "@xterm/headless"));
const { Unicode11Addon } = require(path.join(modules, "@xterm/addon-unicode11"));

const FLAGS = [
  "isBold", "isItalic", "isDim", "isUnderline", "isBlink",
  "isInverse", "isInvisible", "isStrikethrough", "isOverline",
];

function cellKey(cell) {
  let flags = 0;
  FLAGS.forEach((name, bit) => { if (cell[name]()) flags |= 1 << bit; });
  const width = cell.getWidth();
  // A cell never written reads "", one written with a space " ": both look the same.
  const chars = cell.getChars() || (width ? " " : "");
  return [chars, width, cell.getFgColorMode() + cell.getFgColor(),
    cell.getBgColorMode() + cell.getBgColor(), flags];
}

function describeLine(line, cols, cell) {
  const runs = [];
  for (let x = 0; x < cols; x++) {
    const key = cellKey(line.getCell(x, cell));
    const last = runs[runs.length - 1];
    if (last && last.slice(1).every((v, i) => v === key[i])) last[0]++;
    else runs.push([1, ...key]);
  }
  return { wrapped: line.isWrapped, runs };
}

function describeBuffer(buffer, cols) {
  const cell = buffer.getNullCell();
  const lines = [];
  for (let y = 0; y < buffer.length; y++) lines.push(describeLine(buffer.getLine(y), cols, cell));
  return lines;
}

// A pen's colour word: flags, colour mode, colour. xterm.js leaves the bits of an
// earlier truecolour behind a palette colour (they are never drawn): masked off.
function colourWord(word) {
  const mode = word & 0x3000000;
  const colour = mode === 0x3000000 ? word & 0xffffff : mode ? word & 0xff : 0;
  return (word & ~0x3ffffff) | mode | colour;
}

function attrs(data) {
  return data ? [colourWord(data.fg), colourWord(data.bg)] : null;
}

// What the cells do not show but the next bytes draw with (internals: no public API).
function hiddenState(term, title) {
  const core = term._core;
  const buffer = core.buffer;
  const modes = core.coreService.decPrivateModes;
  return {
    title,
    cursorHidden: core.coreService.isCursorHidden,
    insertMode: core.coreService.modes.insertMode,
    modes: { ...modes },
    mouse: [core.coreMouseService.activeProtocol, core.coreMouseService.activeEncoding],
    margins: [buffer.scrollTop, buffer.scrollBottom],
    // savedY counts from the top of the scrollback: made relative to the screen, and
    // clamped as DECRC clamps it (a row above the top restores to the top).
    saved: [buffer.savedX, Math.max(0, Math.min(buffer.savedY - buffer.ybase, term.rows - 1)),
      attrs(buffer.savedCurAttrData)],
    pen: attrs(core._inputHandler._curAttrData),
    // The table drawing uses now; xterm.js's DECRC restores it but not the G0..G3
    // designations (see KNOWN_XTERM_FAULTS), so those are not compared.
    charset: [core._charsetService.glevel, JSON.stringify(core._charsetService.charset || null)],
    // Stops past the right edge are kept, but no snapshot can set them: not compared.
    tabs: Object.keys(buffer.tabs).filter((k) => buffer.tabs[k] && k < term.cols).map(Number),
  };
}

async function run(request) {
  const term = new Terminal({
    cols: request.cols, rows: request.rows, scrollback: request.scrollback, allowProposedApi: true,
  });
  term.loadAddon(new Unicode11Addon());
  term.unicode.activeVersion = "11";
  let title = "";
  term.onTitleChange((t) => { title = t; });
  for (const step of request.steps) {
    if (step[0] === "write") {
      await new Promise((resolve, reject) => {
        failWrite = reject;
        term.write(Buffer.from(step[1], "base64"), resolve);
      });
      failWrite = null;
    } else if (step[0] === "resize") {
      term.resize(step[1], step[2]);
    }
  }
  const active = term.buffer.active;
  const answer = {
    buffer: active.type,
    cols: term.cols,
    rows: term.rows,
    baseY: active.baseY,
    cursor: [active.cursorX, active.cursorY],
    state: hiddenState(term, title),
    normal: describeBuffer(term.buffer.normal, term.cols),
    alternate: active.type === "alternate" ? describeBuffer(term.buffer.alternate, term.cols) : null,
  };
  term.dispose();
  return answer;
}

// xterm.js parses a write in a timer: what it throws there ends up here, not in `run`.
let failWrite = null;
process.on("uncaughtException", (error) => {
  if (failWrite === null) throw error;
  failWrite(error);
});

const input = readline.createInterface({ input: process.stdin, terminal: false });
let queue = Promise.resolve();
input.on("line", (text) => {
  queue = queue.then(async () => {
    let answer;
    try {
      answer = await run(JSON.parse(text));
    } catch (error) {
      answer = { error: String(error && error.stack || error) };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  });
});
