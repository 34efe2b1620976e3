// The terminal pane: one xterm.js terminal for the selected session, kept exactly
// in step with the server's output stream by the client's `Attachment` (its
// position in the stream, exact replay after a reconnect, redraws from snapshots):
// this file only draws what it is given.

import { Terminal } from "./vendor/xterm.mjs";
import { FitAddon } from "./vendor/addon-fit.mjs";
import { SearchAddon } from "./vendor/addon-search.mjs";
import { Unicode11Addon } from "./vendor/addon-unicode11.mjs";
import { WebLinksAddon } from "./vendor/addon-web-links.mjs";
import { isPageShortcut } from "./keys.js";
import { Attachment } from "./client/attachment.js";

/**
 * @typedef {import("./client/connection.js").Connection} Connection
 * @typedef {import("./store.js").SessionStore} SessionStore
 * @typedef {import("./client/protocol.js").ServerMessage} ServerMessage
 * @typedef {import("./client/protocol.js").Snapshot} Snapshot
 * @typedef {import("./client/protocol.js").Attached} Attached
 * @typedef {import("./client/protocol.js").TermSize} TermSize
 */

const THEME = {
  background: "#0b0f14",
  foreground: "#d8dee6",
  cursor: "#f2c14e",
  selectionBackground: "#35506b",
  // A thin, quiet thumb instead of xterm's heavy grey block.
  scrollbarSliderBackground: "rgba(138, 150, 166, 0.22)",
  scrollbarSliderHoverBackground: "rgba(138, 150, 166, 0.4)",
  scrollbarSliderActiveBackground: "rgba(138, 150, 166, 0.55)",
};

/**
 * The page's monospace stack. "ptyvisor symbols" (app.css) is a vendored fallback
 * for the few glyphs agents draw that common monospace fonts lack (⎿ ⏵ ⏺ …); it
 * only covers those code points (unicode-range), so it never replaces a letter.
 */
export const FONT_FAMILY =
  '"DejaVu Sans Mono", "Cascadia Mono", Menlo, Consolas, "Liberation Mono", ' +
  '"ptyvisor symbols", monospace';

/**
 * Rows 1.2 × the font size. At 1.0 xterm's DOM renderer gives DejaVu Sans Mono
 * 14 px rows of 16 px at 1× density, and the row below clips the underscore
 * (drawn under the baseline): `snake_case` showed as `snake case`.
 */
const LINE_HEIGHT = 1.2;

/** A pane change this soon after a window resize counts as the user's resize. */
const WINDOW_RESIZE_MS = 1000;

/** What the key bar's keys send. */
const KEYS = /** @type {Record<string, string>} */ ({
  escape: "\x1b",
  tab: "\t",
  enter: "\r",
  "ctrl-c": "\x03",
  "ctrl-d": "\x04",
});
const ARROWS = /** @type {Record<string, string>} */ ({ up: "A", down: "B", right: "C", left: "D" });

/** Schemes a link in the terminal may open; anything else is left as text. */
const LINK_SCHEMES = new Set(["http:", "https:", "mailto:"]);

/** Scrollback a pane keeps when the server does not say how much its sessions keep. */
const SCROLLBACK_LINES = 5000;

/**
 * The scrollback a pane keeps: what the server's terminals keep (hello), so a reload,
 * whose attach brings that much history back, shows what the pane showed before it.
 * @param {{scrollback?: number} | null} hello
 */
export function scrollbackOf(hello) {
  const lines = hello?.scrollback;
  return typeof lines === "number" && lines > 0 ? lines : SCROLLBACK_LINES;
}
/** Bytes typed before the terminal is attached that are kept to send once it is. */
/**
 * Events: `status` (detail: string — "", or a note to show over the pane);
 * `title` (detail: string — the title the program set with OSC 0/2, "" for none).
 */
export class TerminalPane extends EventTarget {
  /**
   * @param {HTMLElement} host the element xterm renders into
   * @param {Connection} connection
   * @param {SessionStore} store
   */
  constructor(host, connection, store) {
    super();
    this.host = host;
    this.connection = connection;
    this.store = store;
    /** @type {string | null} */
    this.sessionId = null;
    /** @type {Terminal | null} */
    this.term = null;
    /** @type {FitAddon | null} */
    this.fitAddon = null;
    /** @type {SearchAddon | null} */
    this.searchAddon = null;
    /** The selected session's stream, while one is open. */
    this.attachment = /** @type {Attachment | null} */ (null);
    this._encoder = new TextEncoder();
    this._fitQueued = false;
    // Size policy (the server's sizing.py, tmux's "latest"): the program has the
    // size of the client that last typed or resized. So this terminal always draws
    // at the program's size (scrolling when the pane is smaller), and the pane's
    // own size is only what we would like: sent with the attach, and as a resize
    // when the pane itself changes; typing here takes it back on the server's side.
    new ResizeObserver(() => this._queueFit()).observe(host);
    // The terminal may be smaller than the pane: a click anywhere in it focuses it.
    host.addEventListener("click", (event) => {
      if (event.target === host) this.focus();
    });
    /** The size this pane would like (the last one sent), or null before the first. */
    this._wanted = /** @type {TermSize | null} */ (null);
    /** Watch only: never types, never resizes the program. */
    this.viewOnly = false;
    /** When the window was last resized: a pane change soon after is the user's doing. */
    this._windowResizedAt = 0;
    window.addEventListener("resize", () => {
      this._windowResizedAt = performance.now();
    });
    connection.addEventListener("message", (event) =>
      this._message(/** @type {CustomEvent<ServerMessage>} */ (event).detail),
    );
    connection.addEventListener("open", () => {
      // A restarted server may keep another amount (serve --scrollback).
      if (this.term !== null) this.term.options.scrollback = scrollbackOf(connection.hello);
    });
  }

  /** Seq of the next byte expected; null until attached. */
  get position() {
    return this.attachment?.position ?? null;
  }

  get attached() {
    return this.attachment?.attached ?? false;
  }

  /** How the last attach caught up: "exact" replay or a "snapshot" redraw. */
  get lastReplay() {
    return this.attachment?.lastReplay ?? null;
  }

  /** How many times the server redrew us from a snapshot because we fell behind. */
  get lagged() {
    return this.attachment?.lagged ?? 0;
  }

  /**
   * Show `id` in the pane: a fresh terminal, attached from its current screen.
   * @param {string} id
   */
  open(id) {
    if (this.sessionId === id && this.term !== null) return;
    this.close();
    this.sessionId = id;
    const { term, fitAddon, searchAddon } = createTerminal(scrollbackOf(this.connection.hello));
    // The page's own shortcuts must reach the page even while xterm has focus
    // (xterm would otherwise swallow them, Tab included).
    term.attachCustomKeyEventHandler((event) => !isPageShortcut(event));
    term.onData((data) => this._input(this._encoder.encode(data)));
    // Non-UTF-8 mouse reports: one byte per char code.
    term.onBinary((data) => this._input(Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff)));
    // Agents keep their task in the title (Claude Code does); snapshots restore it.
    term.onTitleChange((title) => this._emit("title", title));
    term.open(this.host);
    const name = this.store.get(id)?.name ?? id;
    term.textarea?.setAttribute("aria-label", `Terminal of ${name}`);
    this.term = term;
    this.fitAddon = fitAddon;
    this.searchAddon = searchAddon;
    this._wanted = null;
    const size = this.store.get(id)?.size;
    if (size) term.resize(size.cols, size.rows);
    this._subscribe(id, term);
  }

  /**
   * Follow session `id`'s stream into `term`.
   * @param {string} id
   * @param {Terminal} term
   */
  _subscribe(id, term) {
    const attachment = new Attachment(this.connection, id, {
      viewOnly: this.viewOnly,
      answersQueries: true,
      size: () => {
        const wanted = this._paneSize();
        if (wanted !== null) this._wanted = wanted;
        return wanted;
      },
    });
    this.attachment = attachment;
    attachment.addEventListener("attached", (event) => {
      const message = /** @type {CustomEvent<Attached>} */ (event).detail;
      this.store.patch(id, message.session);
      this._syncInput();
      this._status("");
      this._queueFit(); // the pane may have changed while the attach was on its way
      if (message.replay === "exact") this._follow(term, message.session.size);
    });
    attachment.addEventListener("snapshot", (event) =>
      this._draw(/** @type {CustomEvent<Snapshot>} */ (event).detail),
    );
    attachment.addEventListener("output", (event) => {
      const { bytes } = /** @type {CustomEvent<{bytes: Uint8Array}>} */ (event).detail;
      if (this.term === term) term.write(bytes);
    });
    attachment.addEventListener("resized", (event) => {
      // The program has a new size (ours or another client's): draw at it, in
      // stream order, so output lines up.
      this._follow(term, /** @type {CustomEvent<TermSize>} */ (event).detail);
    });
    attachment.addEventListener("failed", (event) => {
      const { code, message } = /** @type {CustomEvent<{code: string, message: string}>} */ (
        event
      ).detail;
      this._status(
        code === "unknown_session"
          ? "This session no longer exists."
          : `Could not attach: ${message}`,
      );
    });
    if (attachment.attach(null)) this._status("Attaching…");
  }

  /** Detach and drop the terminal (session deselected or closed). */
  close() {
    this.attachment?.close();
    this.attachment = null;
    this.sessionId = null;
    this.term?.dispose();
    this.term = null;
    this.fitAddon = null;
    this.searchAddon = null;
    this.host.replaceChildren();
    this._status("");
    this._emit("title", "");
  }

  focus() {
    this.term?.focus();
  }

  /**
   * The size a new session should get: what this pane would show.
   * @returns {TermSize}
   */
  proposedSize() {
    const dims = this.fitAddon?.proposeDimensions();
    if (dims && dims.cols > 0 && dims.rows > 0) return { cols: dims.cols, rows: dims.rows };
    return estimateSize(this.host);
  }

  /**
   * The terminal's text, one string per logical line (wrapped rows joined),
   * trailing blanks trimmed: for tests and debugging, read-only.
   * @returns {string[]}
   */
  lines() {
    const buffer = this.term?.buffer.active;
    if (!buffer) return [];
    /** @type {string[]} */
    const lines = [];
    for (let y = 0; y < buffer.length; y += 1) {
      const line = buffer.getLine(y);
      if (!line) continue;
      const text = line.translateToString(true);
      if (line.isWrapped && lines.length > 0) lines[lines.length - 1] += text;
      else lines.push(text);
    }
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    return lines;
  }

  /**
   * Every row of the terminal's buffer as cells (see `cellsOf`): for tests.
   * @returns {(string | null)[][]}
   */
  cells() {
    const term = this.term;
    return term ? cellsOf(term, 0, term.buffer.active.length) : [];
  }

  /** @param {ServerMessage} message */
  _message(message) {
    if (message.type === "process" && message.session === this.sessionId) this._syncInput();
  }

  /**
   * Reset the terminal and draw a snapshot at the size it was taken at, then fit
   * the pane (the program redraws at our size once the server passes it on).
   * @param {Snapshot} snapshot
   */
  _draw(snapshot) {
    const term = this.term;
    if (term === null) return;
    // xterm parses writes later, in order, and runs a write's callback before the
    // next one: so the reset and resize go through the write queue too. Done now,
    // output received before this snapshot but not parsed yet would land after it.
    inOrder(term, () => {
      if (this.term !== term) return; // closed meanwhile
      term.reset();
      if (snapshot.size.cols !== term.cols || snapshot.size.rows !== term.rows) {
        term.resize(snapshot.size.cols, snapshot.size.rows);
      }
    });
    term.write(snapshot.screen.ansi);
    // The program may have been resized since the snapshot was taken.
    const size = this.store.get(this.sessionId)?.size;
    if (size) this._follow(term, size);
  }

  /**
   * Draw at the program's size from here on in the stream.
   * @param {Terminal} term
   * @param {TermSize} size
   */
  _follow(term, size) {
    inOrder(term, () => {
      if (this.term === term && (size.cols !== term.cols || size.rows !== term.rows)) {
        term.resize(size.cols, size.rows);
      }
    });
  }

  /**
   * Watch only (true) or take part (false): attached again the new way.
   * @param {boolean} viewOnly
   */
  setViewOnly(viewOnly) {
    if (viewOnly === this.viewOnly) return;
    this.viewOnly = viewOnly;
    this._syncInput();
    this.attachment?.setViewOnly(viewOnly);
  }

  /**
   * Send a named key as the program's modes want it (the key bar's keys):
   * escape, tab, enter, ctrl-c, ctrl-d, up, down, left, right.
   * @param {string} name
   */
  sendKey(name) {
    const term = this.term;
    if (term === null) return;
    const arrow = ARROWS[name];
    let text = KEYS[name];
    if (arrow !== undefined) {
      // Application cursor keys (DECCKM), as full-screen programs ask for.
      text = (term.modes.applicationCursorKeysMode ? "\x1bO" : "\x1b[") + arrow;
    }
    if (text === undefined) return;
    this._input(this._encoder.encode(text));
  }

  /**
   * Keys for the program; typed before the attach completes, they are sent once it has.
   * @param {Uint8Array} bytes
   */
  _input(bytes) {
    if (this._exited() || this.viewOnly) return;
    this.attachment?.input(bytes);
  }

  _exited() {
    return this.store.get(this.sessionId)?.process.state === "exited";
  }

  _syncInput() {
    if (this.term) this.term.options.disableStdin = this.viewOnly || this._exited();
  }

  _queueFit() {
    if (this._fitQueued) return;
    this._fitQueued = true;
    requestAnimationFrame(() => {
      this._fitQueued = false;
      this._paneChanged();
    });
  }

  /**
   * The cols × rows this pane has room for, or null while it has none (hidden).
   * @returns {TermSize | null}
   */
  _paneSize() {
    const dims = this.fitAddon?.proposeDimensions();
    if (!dims || !(dims.cols > 0 && dims.rows > 0)) return null;
    return { cols: Math.min(dims.cols, 1000), rows: Math.min(dims.rows, 500) };
  }

  /**
   * The pane changed size. After the user resized the window that claims the size
   * (tmux's latest); a layout that merely settled (the header filled in, the list
   * folded) only updates the size we would like (`claim: false`).
   */
  _paneChanged() {
    if (this.term === null || this.sessionId === null || !this.attached) return;
    if (this.viewOnly || this._exited()) return;
    const size = this._paneSize();
    if (size === null) return;
    const wanted = this._wanted;
    if (wanted && wanted.cols === size.cols && wanted.rows === size.rows) return;
    this._wanted = size;
    const claim = performance.now() - this._windowResizedAt < WINDOW_RESIZE_MS;
    this.connection.send({ type: "resize", session: this.sessionId, ...size, claim });
  }

  /** @param {string} text */
  _status(text) {
    this._emit("status", text);
  }

  /**
   * @param {"status" | "title"} type
   * @param {string} detail
   */
  _emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}

/**
 * A terminal as the page draws every session: its font, widths and links. The
 * layout check in the tests builds its terminals here too, so what they compare
 * with the server's headless terminal is what the page shows.
 * @param {number} [scrollback]
 * @returns {{term: Terminal, fitAddon: FitAddon, searchAddon: SearchAddon}}
 */
export function createTerminal(scrollback = SCROLLBACK_LINES) {
  const term = new Terminal({
    cursorBlink: true,
    scrollback,
    fontFamily: FONT_FAMILY,
    fontSize: 14,
    lineHeight: LINE_HEIGHT,
    theme: THEME,
    // The width and search APIs are "proposed" in xterm.js 6.
    allowProposedApi: true,
    // OSC 8 hyperlinks: opened like plain URLs, never in this tab.
    linkHandler: { activate: (event, uri) => openLink(event, uri), allowNonHttpProtocols: true },
  });
  const fitAddon = new FitAddon();
  term.loadAddon(fitAddon);
  // The widths programs and the server's headless terminal use (widths.py);
  // xterm's default, Unicode 6, draws most emoji one cell wide.
  term.loadAddon(new Unicode11Addon());
  term.unicode.activeVersion = "11";
  term.loadAddon(new WebLinksAddon((event, uri) => openLink(event, uri)));
  const searchAddon = new SearchAddon();
  term.loadAddon(searchAddon);
  remeasureWhenFontsLoad(term);
  return { term, fitAddon, searchAddon };
}

/**
 * xterm's DOM renderer measures each character's advance once and keeps it, to
 * space the character to its cell. A glyph measured before its fallback face
 * ("ptyvisor symbols", fetched on first use) had loaded keeps the advance of
 * whatever font drew it meanwhile, and the characters after it on the row shift
 * (on a busy machine the glyph test saw ⏸ and ⎯ drawn outside their cells). When
 * a face finishes loading, an equivalent spelling of the font list makes xterm
 * drop the widths it measured and redraw the rows.
 * @param {Terminal} term
 */
function remeasureWhenFontsLoad(term) {
  if (typeof document === "undefined" || !document.fonts) return;
  const spellings = [FONT_FAMILY, FONT_FAMILY.replaceAll(", ", ",")];
  const loaded = () => {
    const now = term.options.fontFamily;
    term.options.fontFamily = now === spellings[0] ? spellings[1] : spellings[0];
  };
  document.fonts.addEventListener("loadingdone", loaded);
  term.loadAddon({
    activate() {},
    dispose() {
      document.fonts.removeEventListener("loadingdone", loaded);
    },
  });
}

/**
 * Open a link from the terminal in a new tab, with no way back to this page.
 * @param {MouseEvent} event
 * @param {string} uri
 */
function openLink(event, uri) {
  let url;
  try {
    url = new URL(uri);
  } catch {
    return;
  }
  if (!LINK_SCHEMES.has(url.protocol)) return;
  event.preventDefault();
  window.open(url.href, "_blank", "noopener,noreferrer");
}

/**
 * The cells of rows [start, end) of `term`'s active buffer: per column the text it
 * shows, " " for a blank, null for the right half of a wide character. For the
 * tests' layout comparison with the headless terminal; read-only.
 * @param {Terminal} term
 * @param {number} start
 * @param {number} end
 * @returns {(string | null)[][]}
 */
export function cellsOf(term, start, end) {
  const buffer = term.buffer.active;
  const cell = buffer.getNullCell();
  /** @type {(string | null)[][]} */
  const rows = [];
  for (let y = start; y < end; y += 1) {
    const line = buffer.getLine(y);
    /** @type {(string | null)[]} */
    const row = [];
    for (let x = 0; line && x < term.cols; x += 1) {
      line.getCell(x, cell);
      row.push(cell.getWidth() === 0 ? null : cell.getChars() || " ");
    }
    rows.push(row);
  }
  return rows;
}

/**
 * The cells `text` gives on a fresh page terminal of `cols` × `rows`: what the
 * tests compare with the headless terminal, code point by code point.
 * @param {string} text
 * @param {number} cols
 * @param {number} rows
 * @returns {Promise<(string | null)[][]>}
 */
export function layoutOf(text, cols, rows) {
  const { term } = createTerminal(0);
  term.resize(cols, rows);
  return new Promise((resolve) => {
    term.write(text, () => {
      resolve(cellsOf(term, 0, rows));
      term.dispose();
    });
  });
}

/**
 * Run `action` once everything written to `term` so far has been parsed, and
 * before anything written after this call.
 * @param {Terminal} term
 * @param {() => void} action
 */
function inOrder(term, action) {
  term.write("", action);
}

/**
 * Cols × rows of a 14 px monospace font in `el` when no terminal is open yet.
 * @param {HTMLElement} el
 * @returns {TermSize}
 */
function estimateSize(el) {
  const probe = document.createElement("span");
  probe.className = "measure-probe";
  probe.textContent = "W".repeat(10);
  el.append(probe);
  const box = probe.getBoundingClientRect();
  probe.remove();
  const charWidth = box.width / 10 || 8.4;
  const lineHeight = box.height || 17;
  // A hidden pane (no session open yet) measures 0×0: the main area is what the
  // terminal will get, less the session header's few rows.
  let rect = el.getBoundingClientRect();
  if (rect.width <= 0 || rect.height <= 0) {
    const main = document.getElementById("main")?.getBoundingClientRect();
    if (!main || main.width <= 0 || main.height <= 0) return { cols: 80, rows: 24 };
    rect = new DOMRect(0, 0, main.width, main.height - 6 * lineHeight);
  }
  return {
    cols: Math.max(20, Math.min(500, Math.floor((rect.width - 16) / charWidth) || 80)),
    rows: Math.max(5, Math.min(200, Math.floor((rect.height - 8) / lineHeight) || 24)),
  };
}
