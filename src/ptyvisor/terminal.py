"""A headless terminal per session: parses program output, snapshots the screen.

Built on pyte 0.8.2's `Screen` (subclassed) with our own parser. pyte faults
fixed here, each with a test in ``tests/test_terminal.py``:

1. **Zero-width non-combining characters drop the rest of the run.** pyte's
   ``draw`` stops at any zero-width character that is not a Unicode combining
   mark (ZWJ U+200D, VS16 U+FE0F in "⚠️", ...). Our ``draw`` attaches every
   zero-width character to the previous cell (skipping a wide character's right
   half) and carries on; non-printable characters are skipped, not fatal.
2. **No alternate screen.** ``CSI ?47/1047/1049 h/l`` now swap in a separate,
   fresh buffer and back, leaving the main screen untouched; 1049 also saves and
   restores the cursor (xterm semantics: one DECSC slot per buffer). Scrollback
   is collected from the main screen only.
3. **OSC misparsed and unbounded.** pyte keys OSC on its first character (so
   ``OSC 133;A`` set the title) and an unterminated OSC swallowed all later
   output. We read the number up to ``;``, accept BEL, ``ESC \\`` and C1 ST as
   terminators, set the title only for 0 and 2 (1, the icon name, and all other
   numbers are ignored), and abandon an unterminated string on the next ESC, CAN
   or SUB, or once it exceeds a bound (4096 characters; 8 Mi for the big
   payloads of OSC 52 clipboard and of DCS/APC graphics), so later output shows.
4. **DCS, APC, PM and SOS payloads drawn as text.** They are consumed silently
   (same terminators and bounds as OSC).

Signals (`TerminalSignal`, taken with `HeadlessTerminal.take_signals`): what any
program's output says about its activity, which the session turns into inferred
activity (see `activity`). Notifications (OSC 9 text, OSC 777;notify, OSC 99) and a
bare BEL (one that ends an OSC is not a bell), progress (OSC 9;4), and shell
integration marks (OSC 133 A/B prompt, C command, D done). They are only noticed:
the sequences themselves stay in the output, as any other.

Also handled: colon SGR sub-parameters (``38:2::r:g:b``, ``4:3``) and dim,
hidden and overline; 256-colour indices kept apart from truecolor;
``CSI S``/``CSI T`` scroll (SU feeds scrollback like a line feed does);
``CSI s``/``CSI u`` save/restore; kitty keyboard ``CSI >u``/``<u``/``=u``/``?u``
and xterm ``CSI >...m`` ignored instead of misread as SGR; REP (``CSI b``, used by
ncurses); CHT/CBT; DEC special graphics (``ESC ( 0``, SO/SI) in UTF-8 mode;
DECSTR; title push/pop (``CSI 22/23 t``, used by vim); DECSCUSR; ED 3 clears
scrollback instead of the screen; DECCOLM is ignored (as xterm does by default)
instead of resizing the screen to 132 columns; xterm's pending-wrap rules (a
wide character that does not fit wraps whole; LF and vertical moves disarm the
pending wrap); overwriting half of a wide character blanks the other half;
erasing uses only the background colour (BCE, as xterm/tmux/xterm.js); cursor
movement outside the scrolling region is bounded by the screen, not the
region; DECRC clamps into the region only in origin mode and no longer restores
visibility; ``delete_lines`` no longer keeps a line that should have moved up;
ICH/DCH/DECALN keep wide characters whole; reverse video (DECSCNM) is a flag
restored by the snapshot instead of being baked into every cell; VPA in origin
mode without margins no longer trips an assertion.

Speed: instead of pyte's per-character generator, complete escape sequences are
matched with one regular expression and printable runs go to ``draw`` whole; a
run of one-cell characters (found with a regex built from the width table) is
stored with a single ``dict.update`` of cached cells. Only a
sequence that is split across feeds or has controls embedded takes a slower
per-character path. Scrollback lines are captured in ``index`` (full-screen
region, main screen) into a bounded deque instead of pyte's slow HistoryScreen.
Whole lines of printable ASCII and SGR after a CR LF (a log, a build, a flood) go
to `_Screen.plain_lines` together: each line that starts on the blank bottom row is
built as one row and the screen scrolls once per batch, not once per line feed; a
row that goes straight into the scrollback is kept as its runs (`_PlainRow`).
A big batch of plain lines is fast-forwarded: what would only scroll out of the
scrollback is not parsed at all (`ptyvisor.fast_forward`, exact).
"""

from __future__ import annotations

import codecs
import itertools
import re
import unicodedata
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, NamedTuple, Protocol

import pyte
from pyte import modes as mo
from pyte.screens import Margins

from ptyvisor import fast_forward
from ptyvisor.snapshot_ansi import (
    ANSI_COLOURS,
    BLANK,
    BRIGHT_COLOURS,
    Cell,
    Line,
    MouseEncoding,
    MouseTracking,
    SavedCursor,
    ScreenState,
    line_ansi,
    render_snapshot,
    runs_line,
    scrollback_line,
)
from ptyvisor.widths import ONE_CELL_RUN, char_width

__all__ = [
    "Cell",
    "HeadlessTerminal",
    "MouseEncoding",
    "MouseTracking",
    "SignalKind",
    "TerminalModes",
    "TerminalSignal",
    "TerminalSnapshot",
]

DA1_REPLY = "\x1b[?1;2c"
"""VT100 with advanced video: what xterm.js and tmux answer, and no graphics claims."""
DA2_REPLY = "\x1b[>0;276;0c"
"""xterm.js's secondary DA: VT100-class, xterm patch 276."""

OSC_LIMIT = 4096
"""Characters after which an unterminated OSC is abandoned (and payload kept)."""
BIG_STRING_LIMIT = 8 * 1024 * 1024
"""The same bound for OSC 52 and DCS/APC/PM/SOS, whose payloads can be large."""
MAX_PARAMS = 256
MAX_SIGNALS = 64
"""Signals kept between two `HeadlessTerminal.take_signals` (the newest)."""
SIGNAL_TEXT_CHARS = 256
"""A notification's text is cut to this many characters (controls removed)."""
"""A control sequence longer than this is dropped; the rest is ordinary output."""
TITLE_STACK_LIMIT = 10

_DECAWM: int = mo.DECAWM
_DECTCEM: int = mo.DECTCEM
_DECOM: int = mo.DECOM
_IRM: int = mo.IRM
_LNM: int = mo.LNM

_MOUSE_TRACKING: dict[int, MouseTracking] = {
    9: "x10",
    1000: "normal",
    1002: "button",
    1003: "any",
}
_MOUSE_ENCODING: dict[int, MouseEncoding] = {
    1005: "utf8",
    1006: "sgr",
    1015: "urxvt",
    1016: "sgr_pixels",
}

_DEC_GRAPHICS_KEYS = "`abcdefghijklmnopqrstuvwxyz{|}~"
_DEC_GRAPHICS_VALUES = "◆▒␉␌␍␊°±␤␋┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£·"
_DEC_GRAPHICS = {ord(k): v for k, v in zip(_DEC_GRAPHICS_KEYS, _DEC_GRAPHICS_VALUES, strict=True)}
"""DEC Special Graphics (``ESC ( 0``): what ncurses uses for line drawing."""

_width = char_width
_ONE_CELL_SPLIT = re.compile(f"({ONE_CELL_RUN.pattern})").split


@dataclass(frozen=True, slots=True)
class TerminalModes:
    """Input-affecting modes a client must mirror to talk to the program."""

    alternate_screen: bool
    application_cursor_keys: bool
    application_keypad: bool
    bracketed_paste: bool
    mouse_tracking: MouseTracking
    mouse_encoding: MouseEncoding
    focus_events: bool
    auto_wrap: bool
    cursor_visible: bool


@dataclass(frozen=True, slots=True)
class TerminalSnapshot:
    """The screen as output for a fresh terminal of ``cols`` x ``rows``, plus metadata."""

    cols: int
    rows: int
    ansi: str
    cursor_row: int
    cursor_col: int
    title: str
    modes: TerminalModes


class _Line(dict[int, Cell]):
    """A sparse screen line: missing columns read as BLANK without being stored."""

    __slots__ = ()

    def __missing__(self, key: int) -> Cell:
        return BLANK


_EMPTY_LINE = _Line()

Runs = list[tuple[Cell, str]]
"""A row of one-cell ASCII text drawn from column 0: (pen, text) in order; a pen is a
cell whose style and link are the run's (its data is not used)."""


class _PlainRow:
    """A scrollback line that `_Screen.plain_lines` built and that was never on the
    screen, kept as the runs it was drawn in: a twentieth of the memory of its cells,
    none of the time to make them, and drawn for snapshots straight from the runs.
    `_Screen.cells_of` makes its cells when something needs them."""

    __slots__ = ("runs",)

    def __init__(self, runs: Runs) -> None:
        self.runs = runs

    @property
    def width(self) -> int:
        return sum(len(text) for _, text in self.runs)

    def text(self, cols: int) -> str:
        return "".join(text for _, text in self.runs).ljust(cols)[:cols]


ScrollbackLine = _Line | _PlainRow


class _CellCache(dict[str, Cell]):
    """Cells of one style by character, so drawing reuses immutable cells."""

    __slots__ = ("style",)

    def __init__(self, attrs: Cell) -> None:
        super().__init__()
        self.style = tuple(attrs[1:])

    def __missing__(self, data: str) -> Cell:
        cell = _new_cell(Cell, (data, *self.style))
        self[data] = cell
        return cell


_new_cell: Callable[[type[Cell], tuple[object, ...]], Cell] = tuple.__new__
"""Builds a Cell from a full tuple without NamedTuple's slower keyword path."""


class _Cursor(Protocol):
    x: int
    y: int
    attrs: Cell
    hidden: bool


class _Saved(NamedTuple):
    """A DECSC slot."""

    x: int
    y: int
    attrs: Cell
    g0_graphics: bool
    g1_graphics: bool
    charset: int
    origin: bool


Buffer = defaultdict[int, _Line]


def _new_buffer() -> Buffer:
    return defaultdict(_Line)


def _num(text: str) -> int:
    """A parameter: empty is 0, junk is -1 (matches nothing), large is capped."""
    if text.isdigit():
        return min(int(text), 9999)
    return 0 if text == "" else -1


@lru_cache(maxsize=2048)
def _ints(params: str) -> tuple[int, ...]:
    """CSI parameters as ints, sub-parameters after ``:`` dropped."""
    if not params:
        return ()
    return tuple(_num(part.split(":", 1)[0]) for part in params.split(";"))


def _colour_from_subparams(sub: list[str]) -> str | None:
    """``5:n`` or ``2:[colourspace:]r:g:b`` (the colon forms of 38/48)."""
    if not sub:
        return None
    if sub[0] == "5" and len(sub) >= 2:
        index = _num(sub[1])
        return str(index) if 0 <= index <= 255 else None
    if sub[0] == "2":
        rgb = sub[2:5] if len(sub) >= 5 else sub[1:4]
        return _rgb([_num(c) for c in rgb])
    return None


def _rgb(values: list[int]) -> str | None:
    if len(values) == 3 and all(0 <= v <= 255 for v in values):
        return "{:02x}{:02x}{:02x}".format(*values)
    return None


# Indices into a Cell, for building one from a list.
_FG, _BG, _BOLD, _ITALICS, _UNDERSCORE, _STRIKE, _REVERSE, _BLINK, _DIM, _HIDDEN, _OVER = range(
    1, 12
)
_SIMPLE_SGR: dict[int, tuple[tuple[int, object], ...]] = {
    1: ((_BOLD, True),),
    2: ((_DIM, True),),
    3: ((_ITALICS, True),),
    4: ((_UNDERSCORE, True),),
    5: ((_BLINK, True),),
    6: ((_BLINK, True),),
    7: ((_REVERSE, True),),
    8: ((_HIDDEN, True),),
    9: ((_STRIKE, True),),
    21: ((_UNDERSCORE, True),),  # double underline
    22: ((_BOLD, False), (_DIM, False)),
    23: ((_ITALICS, False),),
    24: ((_UNDERSCORE, False),),
    25: ((_BLINK, False),),
    27: ((_REVERSE, False),),
    28: ((_HIDDEN, False),),
    29: ((_STRIKE, False),),
    39: ((_FG, "default"),),
    49: ((_BG, "default"),),
    53: ((_OVER, True),),
    55: ((_OVER, False),),
    **{30 + i: ((_FG, name),) for i, name in enumerate(ANSI_COLOURS)},
    **{40 + i: ((_BG, name),) for i, name in enumerate(ANSI_COLOURS)},
    **{90 + i: ((_FG, name),) for i, name in enumerate(BRIGHT_COLOURS)},
    **{100 + i: ((_BG, name),) for i, name in enumerate(BRIGHT_COLOURS)},
}


def apply_sgr(attrs: Cell, params: str) -> Cell:
    """The pen after ``CSI params m``, semicolon and colon forms alike."""
    values: list[Any] = list(attrs)
    parts = params.split(";")
    count = len(parts)
    i = 0
    while i < count:
        part = parts[i]
        i += 1
        if ":" in part:
            sub = part.split(":")
            code = _num(sub[0])
            if code in (38, 48):
                colour = _colour_from_subparams(sub[1:])
                if colour is not None:
                    values[_FG if code == 38 else _BG] = colour
            elif code == 4:  # underline style: 0 off, 1-5 single..dashed
                values[_UNDERSCORE] = len(sub) < 2 or _num(sub[1]) != 0
            elif code != 58:  # 58 (underline colour) is not kept
                for index, value in _SIMPLE_SGR.get(code, ()):
                    values[index] = value
            continue
        code = _num(part)
        if code == 0:  # a hyperlink is not SGR: it outlives a reset
            values = [*BLANK[:-1], values[-1]]
        elif code in (38, 48, 58):
            kind = parts[i] if i < count else ""
            extended: str | None = None
            if kind == "5":
                index = _num(parts[i + 1]) if i + 1 < count else -1
                extended = str(index) if 0 <= index <= 255 else None
                i += 2
            elif kind == "2":
                extended = _rgb([_num(p) for p in parts[i + 1 : i + 4]])
                i += 4
            if extended is not None and code != 58:
                values[_FG if code == 38 else _BG] = extended
        else:
            for index, value in _SIMPLE_SGR.get(code, ()):
                values[index] = value
    values[0] = " "
    return Cell._make(values)


class _Screen(pyte.Screen):
    """pyte's Screen with the fixes listed in the module docstring."""

    columns: int
    lines: int
    buffer: Buffer  # type: ignore[assignment]  # pyte's lines hold pyte Chars
    cursor: _Cursor  # type: ignore[assignment]
    mode: set[int]
    margins: Margins | None
    title: str
    charset: int
    tabstops: set[int]

    def __init__(self, columns: int, lines: int, scrollback: int) -> None:
        self.scrollback: deque[ScrollbackLine] = deque(maxlen=max(0, scrollback))
        self.drawn: dict[int, tuple[ScrollbackLine, int, str]] = {}
        """Scrollback lines as snapshots draw them, by id: (line, cols, text). A line
        in the scrollback never changes, unless a resize pulls it back on screen
        (then it is forgotten here); see `HeadlessTerminal.snapshot`."""
        self.undrawn = 0
        """Lines that went into the scrollback since the last drawing (at most)."""
        self.main_buffer: Buffer | None = None  # the main screen while the alt one shows
        self._sgr_cache: dict[tuple[Cell, str], Cell] = {}
        self._cell_caches: dict[Cell, _CellCache] = {}
        self._init_state()
        super().__init__(columns, lines)
        self.buffer = _new_buffer()

    def _init_state(self) -> None:
        """State pyte does not have; also what RIS resets."""
        self.saved: list[_Saved | None] = [None, None]  # DECSC slots: main, alt
        self.g0_graphics = False
        self.g1_graphics = False
        self.application_cursor_keys = False
        self.application_keypad = False
        self.bracketed_paste = False
        self.mouse_tracking: MouseTracking = "off"
        self.mouse_encoding: MouseEncoding = "default"
        self.focus_events = False
        self.reverse_video = False
        self.cursor_style = 0
        self.title_stack: list[str] = []
        self.last_graphic = ""

    # -- state ---------------------------------------------------------------

    @property
    def default_char(self) -> Cell:  # type: ignore[override]
        """Always BLANK: reverse video (DECSCNM) is a flag, not baked into cells."""
        return BLANK

    @property
    def alt_active(self) -> bool:
        return self.main_buffer is not None

    def reset(self) -> None:
        """RIS: back to the main screen, then pyte's reset plus our own state."""
        if self.main_buffer is not None:
            self.buffer = self.main_buffer
            self.main_buffer = None
        super().reset()
        self._init_state()
        self.cursor.attrs = BLANK

    def _blank(self) -> Cell:
        """What erasing writes: only the background colour survives (BCE)."""
        bg = self.cursor.attrs.bg
        return BLANK if bg == "default" else BLANK._replace(bg=bg)

    # -- drawing -------------------------------------------------------------

    def _cells(self, attrs: Cell) -> _CellCache:
        cache = self._cell_caches.get(attrs)
        if cache is None:
            if len(self._cell_caches) > 1024:
                self._cell_caches.clear()
            cache = self._cell_caches[attrs] = _CellCache(attrs)
        return cache

    def draw(self, data: str) -> None:
        """Draw printable text (the parser never passes control characters)."""
        if self.g1_graphics if self.charset else self.g0_graphics:
            data = data.translate(_DEC_GRAPHICS)
        if _IRM in self.mode:
            self._draw_unicode(data)
        elif data.isascii():
            self._draw_narrow(data)
        else:
            # Alternating: other characters, a run of one-cell ones, other, ...
            for i, part in enumerate(_ONE_CELL_SPLIT(data)):
                if i % 2:
                    self._draw_narrow(part)
                elif part:
                    self._draw_unicode(part)

    def _draw_narrow(self, data: str) -> None:
        """One-cell characters only: whole runs per line with one dict.update."""
        cursor = self.cursor
        x = cursor.x
        end = x + len(data)
        if end <= self.columns:  # the common case, inline: the run fits on its row
            self.last_graphic = data[-1]
            line = self.buffer[cursor.y]
            if line:
                self._split_wide(line, x, end)
            drawn = map(self._cells(cursor.attrs).__getitem__, data)
            line.update(zip(range(x, end), drawn, strict=True))
            cursor.x = end if end < self.columns or _DECAWM in self.mode else end - 1
            return
        cells = self._cells(cursor.attrs)
        get_cell = cells.__getitem__
        cols = self.columns
        autowrap = _DECAWM in self.mode
        self.last_graphic = data[-1]
        count = len(data)
        i = 0
        while i < count:
            x = cursor.x
            if x >= cols:  # only with autowrap: without, the cursor stops at cols - 1
                if not autowrap:  # everything left lands on the last column
                    line = self.buffer[cursor.y]
                    self._split_wide(line, cols - 1, cols)
                    line[cols - 1] = get_cell(data[-1])
                    cursor.x = cols - 1
                    return
                cursor.x = 0
                self.index()
                x = 0
            line = self.buffer[cursor.y]
            end = min(cols, x + count - i)
            self._split_wide(line, x, end)
            line.update(zip(range(x, end), map(get_cell, data[i : i + end - x]), strict=True))
            i += end - x
            cursor.x = end if autowrap or end < cols else cols - 1

    def _draw_unicode(self, data: str) -> None:
        cursor = self.cursor
        cells = self._cells(cursor.attrs)
        cols = self.columns
        autowrap = _DECAWM in self.mode
        insert = _IRM in self.mode
        for char in data:
            width = _width(char)
            if width <= 0:
                if width == 0:
                    self._attach(char)
                continue  # unprintable: skip it, never the rest of the run
            if width > cols:
                continue
            x = cursor.x
            if x + width > cols:
                if autowrap:  # a wide character that does not fit wraps whole
                    cursor.x = 0
                    self.index()
                    x = 0
                else:
                    x = cols - width
            cursor.x = x
            if insert:
                self.insert_characters(width)
            line = self.buffer[cursor.y]
            self._split_wide(line, x, x + width)
            line[x] = cells[char]
            if width == 2:
                line[x + 1] = cells[""]
            cursor.x = x + width if autowrap or x + width < cols else cols - 1
            self.last_graphic = char

    @staticmethod
    def _split_wide(line: _Line, start: int, end: int) -> None:
        """Before overwriting [start, end): blank wide characters cut in half."""
        cell = line.get(start)
        if cell is not None and cell.data == "" and start > 0:
            line[start - 1] = line[start - 1]._replace(data=" ")
        cell = line.get(end)
        if cell is not None and cell.data == "":
            line[end] = cell._replace(data=" ")

    def _attach(self, char: str) -> None:
        """Append a zero-width character (combining, ZWJ, VS16) to the previous cell."""
        x = min(self.cursor.x, self.columns) - 1
        if x < 0:
            return
        line = self.buffer[self.cursor.y]
        cell = line[x]
        if cell.data == "" and x > 0:
            x -= 1
            cell = line[x]
        if len(cell.data) < 32:
            line[x] = cell._replace(data=unicodedata.normalize("NFC", cell.data + char))

    def last_graphic_in(self, text: str) -> str:
        """The character `draw` would leave in ``last_graphic`` after ``text``
        (plain text: no controls but CR, LF, TAB and BS), or "" if none."""
        if self.g1_graphics if self.charset else self.g0_graphics:
            text = text.translate(_DEC_GRAPHICS)
        for char in reversed(text):
            if 0 < _width(char) <= self.columns:
                return char
        return ""

    def scroll_out(self) -> None:
        """What a flood's lines do at the bottom row: scroll the whole screen into
        the scrollback, leaving it blank with the cursor at the bottom left."""
        cursor = self.cursor
        cursor.y = self.lines - 1
        for _ in range(self.lines):
            self.index()
        cursor.x = 0

    def repeat(self, count: int) -> None:
        """REP: repeat the last graphic character."""
        if self.last_graphic:
            self.draw(self.last_graphic * max(1, min(count, self.columns * self.lines)))

    def plain_lines(self, lines: list[str]) -> None:
        """Lines of printable ASCII and SGR (``_PLAIN_BLOCK``), each followed by CR LF:
        exactly what drawing, SGR, CR and LF would do one by one, but a line that
        starts on a blank bottom row of a full-screen region (a log's or a flood's
        line) is built whole, and the rows it pushes up move in one go at the end,
        not one dict renumbering per line feed."""
        fresh: list[Runs] = []
        cols = self.columns
        batched = False
        for text in lines:
            if not batched:
                batched = self._can_batch()
            plain = "\x1b" not in text
            if batched and plain and len(text) <= cols:  # most lines: one run, one row
                if text:
                    fresh.append([(self.cursor.attrs, text)])
                    self.last_graphic = text[-1]
                else:
                    fresh.append([])
                continue
            parts = [text] if plain else _SGR_SPLIT(text)
            if batched and (_DECAWM in self.mode or sum(map(len, parts[::2])) <= cols):
                fresh += self._plain_rows(parts)
                continue
            if fresh:
                self._scroll_in(fresh)
                fresh = []
            batched = False
            for i, part in enumerate(parts):
                if i % 2:
                    self.apply_sgr(part)
                elif part:
                    self.draw(part)
            self.carriage_return()
            self.linefeed()
        if fresh:
            self._scroll_in(fresh)

    def _can_batch(self) -> bool:
        """Whether the next line starts at the left of a blank bottom row whose line
        feed scrolls the whole screen, and draws as plain one-cell characters (insert
        mode draws the same on a blank row)."""
        cursor = self.cursor
        bottom = self.lines - 1
        return (
            cursor.x == 0
            and cursor.y == bottom
            and self.margins is None
            and not self.buffer.get(bottom)
            and not (self.g1_graphics if self.charset else self.g0_graphics)
        )

    def _plain_rows(self, parts: list[str]) -> list[Runs]:
        """The rows drawing ``parts`` (text, SGR, text, ...) from column 0 of the blank
        bottom row makes (more than one when it wraps), as runs."""
        cols = self.columns
        runs: Runs = []
        made = [runs]
        x = 0
        for i, part in enumerate(parts):
            if i % 2:
                self.apply_sgr(part)
                continue
            if not part:
                continue
            pen = self.cursor.attrs
            if x + len(part) <= cols:
                runs.append((pen, part))
                x += len(part)
            else:
                start = 0
                while start < len(part):
                    if x == cols:  # autowrap: the next row scrolls in, as LF would
                        runs, x = [], 0
                        made.append(runs)
                    piece = part[start : start + cols - x]
                    runs.append((pen, piece))
                    x += len(piece)
                    start += len(piece)
            self.last_graphic = part[-1]
        return made

    def _row_of(self, runs: Runs) -> _Line:
        row = _Line()
        x = 0
        for pen, text in runs:
            cells = map(self._cells(pen).__getitem__, text)
            row.update(zip(range(x, x + len(text)), cells, strict=True))
            x += len(text)
        return row

    def cells_of(self, line: ScrollbackLine) -> _Line:
        """A scrollback line's cells."""
        return line if isinstance(line, _Line) else self._row_of(line.runs)

    def _scroll_in(self, fresh: list[Runs]) -> None:
        """Each of ``fresh`` was drawn on the blank bottom row, then a line feed
        scrolled the screen up one row: what leaves the top goes to the scrollback
        (main screen only), and the bottom row is blank again. A fresh row that goes
        straight into the scrollback never had cells on the screen, so it gets none
        (`_PlainRow`): most of a flood's lines."""
        lines = self.lines
        out = len(fresh)
        straight = max(0, out - (lines - 1))
        old: list[_Line | None] = [self.buffer.get(y) for y in range(lines - 1)]
        if self.main_buffer is None:
            self.scrollback.extend(row if row is not None else _Line() for row in old[:out])
            kept = self.scrollback.maxlen or 0
            first = max(0, straight - kept)
            self.scrollback.extend(map(_PlainRow, itertools.islice(fresh, first, straight)))
            self.undrawn += out
        screen = old[out:] + [self._row_of(runs) for runs in fresh[straight:]]
        self.buffer = defaultdict(
            _Line, {y: row for y, row in enumerate(screen) if row is not None}
        )

    def drawing(self, line: ScrollbackLine) -> tuple[ScrollbackLine, int, str]:
        """Scrollback ``line`` as a snapshot draws it, for `drawn`: kept from before,
        drawn from its runs if it has them (and they fit the width), or from its cells."""
        cols = self.columns
        hit = self.drawn.get(id(line))
        if hit is not None and hit[0] is line and hit[1] == cols:
            return hit
        if isinstance(line, _PlainRow) and line.width <= cols:
            return line, cols, runs_line(line.runs)
        return line, cols, scrollback_line(self.cells_of(line), cols)

    # -- scrolling -----------------------------------------------------------

    def _region(self) -> tuple[int, int]:
        if self.margins is None:
            return 0, self.lines - 1
        return int(self.margins.top), int(self.margins.bottom)

    def _move_rows(self, top: int, bottom: int, count: int) -> None:
        """Move rows ``top``..``bottom`` down by ``count`` (up when negative); rows
        that would come from outside that range are blank. Scrolling a partial region,
        inserting and deleting lines are all this."""
        buffer = self.buffer
        rows = range(bottom, top - 1, -1) if count > 0 else range(top, bottom + 1)
        for y in rows:
            source = y - count
            line = buffer.pop(source, None) if top <= source <= bottom else None
            if line is None:
                buffer.pop(y, None)
            else:
                buffer[y] = line

    def index(self) -> None:
        """IND/LF: scroll the region at its bottom, capturing main-screen scrollback."""
        cursor = self.cursor
        if cursor.x >= self.columns:
            cursor.x = self.columns - 1
        top, bottom = self._region()
        if cursor.y != bottom:
            if cursor.y < self.lines - 1:
                cursor.y += 1
            return
        buffer = self.buffer
        if top == 0 and bottom == self.lines - 1:
            first = buffer.pop(0) if 0 in buffer else _Line()
            if self.main_buffer is None:
                self.scrollback.append(first)
                self.undrawn += 1
            # Renumbering in one comprehension beats moving rows one by one.
            self.buffer = defaultdict(_Line, {y - 1: line for y, line in buffer.items()})
            return
        self._move_rows(top, bottom, -1)

    def reverse_index(self) -> None:
        """RI: scroll the region down at its top."""
        cursor = self.cursor
        if cursor.x >= self.columns:
            cursor.x = self.columns - 1
        top, bottom = self._region()
        if cursor.y != top:
            if cursor.y > 0:
                cursor.y -= 1
            return
        self._move_rows(top, bottom, 1)

    def scroll_up(self, count: int = 0) -> None:
        """SU: like that many line feeds at the bottom margin (so the main screen's
        scrollback gets the lines); the cursor stays."""
        self._scroll_in_place(count, self.index, at_top=False)

    def scroll_down(self, count: int = 0) -> None:
        """SD: like that many reverse indexes at the top margin; the cursor stays."""
        self._scroll_in_place(count, self.reverse_index, at_top=True)

    def _scroll_in_place(self, count: int, step: Callable[[], None], *, at_top: bool) -> None:
        top, bottom = self._region()
        x, y = self.cursor.x, self.cursor.y
        self.cursor.y = top if at_top else bottom
        for _ in range(min(count or 1, bottom - top + 1)):
            step()
        self.cursor.x, self.cursor.y = x, y

    def set_margins(self, top: int | None = None, bottom: int | None = None) -> None:
        """DECSTBM: 0 or missing means the screen edge; always homes the cursor."""
        t = max(0, (top or 1) - 1)
        b = min(self.lines - 1, (bottom or self.lines) - 1)
        if b <= t:
            return  # invalid regions are ignored, as xterm does
        self.margins = None if (t, b) == (0, self.lines - 1) else Margins(t, b)
        self.cursor_position()

    def insert_lines(self, count: int | None = None) -> None:
        top, bottom = self._region()
        y0 = self.cursor.y
        if not top <= y0 <= bottom:
            return
        self._move_rows(y0, bottom, min(count or 1, bottom - y0 + 1))
        self.cursor.x = 0

    def delete_lines(self, count: int | None = None) -> None:
        top, bottom = self._region()
        y0 = self.cursor.y
        if not top <= y0 <= bottom:
            return
        self._move_rows(y0, bottom, -min(count or 1, bottom - y0 + 1))
        self.cursor.x = 0

    # -- erasing -------------------------------------------------------------

    def _erase(self, line: _Line, start: int, end: int) -> None:
        if start >= end:
            return
        self._split_wide(line, start, end)
        blank = self._blank()
        if blank is BLANK:
            for x in [x for x in line if start <= x < end]:
                del line[x]
        else:
            line.update(dict.fromkeys(range(start, end), blank))

    def insert_characters(self, count: int | None = None) -> None:
        """ICH, keeping wide characters whole or blanking them."""
        cols = self.columns
        x = min(self.cursor.x, cols - 1)
        count = min(count or 1, cols - x)
        line = self.buffer[self.cursor.y]
        self._split_wide(line, x, x)
        moved = {k + count: c for k, c in line.items() if x <= k < cols - count}
        for k in [k for k in line if k >= x]:
            del line[k]
        line.update(moved)
        blank = self._blank()
        if blank is not BLANK:
            line.update(dict.fromkeys(range(x, x + count), blank))
        last = line.get(cols - 1)
        if last is not None and last.data and _width(last.data[0]) == 2:
            line[cols - 1] = last._replace(data=" ")

    def delete_characters(self, count: int | None = None) -> None:
        """DCH, keeping wide characters whole or blanking them."""
        cols = self.columns
        x = min(self.cursor.x, cols - 1)
        count = min(count or 1, cols - x)
        line = self.buffer[self.cursor.y]
        self._split_wide(line, x, x + count)
        moved = {k - count: c for k, c in line.items() if k >= x + count}
        for k in [k for k in line if k >= x]:
            del line[k]
        line.update(moved)
        blank = self._blank()
        if blank is not BLANK:
            line.update(dict.fromkeys(range(cols - count, cols), blank))

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        x = min(self.cursor.x, self.columns - 1)
        line = self.buffer[self.cursor.y]
        if how == 0:
            self._erase(line, x, self.columns)
        elif how == 1:
            self._erase(line, 0, x + 1)
        elif how == 2:
            self._erase(line, 0, self.columns)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        """ED; 3 clears the scrollback only, as in xterm."""
        if how == 3:
            self.scrollback.clear()
            return
        if how == 0:
            self.erase_in_line(0)
            rows: Iterable[int] = range(self.cursor.y + 1, self.lines)
        elif how == 1:
            self.erase_in_line(1)
            rows = range(self.cursor.y)
        elif how == 2:
            rows = range(self.lines)
        else:
            return
        blank = self._blank()
        for y in rows:
            if blank is BLANK:
                self.buffer.pop(y, None)
            else:
                self.buffer[y] = _Line(dict.fromkeys(range(self.columns), blank))

    def erase_characters(self, count: int | None = None) -> None:
        x = min(self.cursor.x, self.columns - 1)
        self._erase(self.buffer[self.cursor.y], x, min(self.columns, x + (count or 1)))

    # -- cursor --------------------------------------------------------------

    def cursor_up(self, count: int | None = None) -> None:
        """CUU: stops at the top margin only when starting inside the region."""
        top, _ = self._region()
        cursor = self.cursor
        limit = top if cursor.y >= top else 0
        cursor.y = max(cursor.y - (count or 1), limit)
        cursor.x = min(cursor.x, self.columns - 1)

    def cursor_down(self, count: int | None = None) -> None:
        """CUD: stops at the bottom margin only when starting inside the region."""
        _, bottom = self._region()
        cursor = self.cursor
        limit = bottom if cursor.y <= bottom else self.lines - 1
        cursor.y = min(cursor.y + (count or 1), limit)
        cursor.x = min(cursor.x, self.columns - 1)

    def cursor_position(self, line: int | None = None, column: int | None = None) -> None:
        """CUP as pyte's, without its helper calls (TUIs send one per few cells)."""
        y = (line or 1) - 1
        x = (column or 1) - 1
        margins = self.margins
        top, bottom = 0, self.lines - 1
        if margins is not None and _DECOM in self.mode:
            top, bottom = int(margins.top), int(margins.bottom)
            y += top
            if not top <= y <= bottom:
                return
        cursor = self.cursor
        cursor.x = min(max(0, x), self.columns - 1)
        cursor.y = min(max(top, y), bottom)

    def cursor_to_line(self, line: int | None = None) -> None:
        """VPA, relative to the region in origin mode (pyte asserts margins exist)."""
        top, bottom = self._region()
        if _DECOM in self.mode:
            self.cursor.y = min(top + (line or 1) - 1, bottom)
        else:
            self.cursor.y = min((line or 1) - 1, self.lines - 1)
        self.cursor.x = min(self.cursor.x, self.columns - 1)

    def set_tab_stop(self) -> None:
        self.tabstops.add(min(self.cursor.x, self.columns - 1))

    def alignment_display(self) -> None:
        """DECALN: the screen full of E (pyte kept wide characters' right halves)."""
        for y in range(self.lines):
            self.buffer[y] = _Line(dict.fromkeys(range(self.columns), Cell("E")))

    def tab(self) -> None:
        x = self.cursor.x
        stop = min((s for s in self.tabstops if s > x), default=self.columns - 1)
        self.cursor.x = min(stop, self.columns - 1)

    def back_tab(self, count: int = 0) -> None:
        for _ in range(count or 1):
            x = min(self.cursor.x, self.columns - 1)
            self.cursor.x = max((s for s in self.tabstops if s < x), default=0)

    def forward_tab(self, count: int = 0) -> None:
        for _ in range(min(count or 1, self.columns)):
            self.tab()

    def save_cursor(self) -> None:
        """DECSC into the slot of the current buffer (xterm keeps one per buffer)."""
        c = self.cursor
        self.saved[self.alt_active] = _Saved(
            min(c.x, self.columns - 1),
            c.y,
            c.attrs,
            self.g0_graphics,
            self.g1_graphics,
            self.charset,
            _DECOM in self.mode,
        )

    def restore_cursor(self) -> None:
        """DECRC: exact position (clamped into the margins only in origin mode, not
        always as pyte did); visibility untouched."""
        saved = self.saved[self.alt_active]
        if saved is None:
            saved = _Saved(0, 0, BLANK, False, False, 0, False)
        if saved.origin:
            self.mode.add(_DECOM)
        else:
            self.mode.discard(_DECOM)
        self.g0_graphics, self.g1_graphics = saved.g0_graphics, saved.g1_graphics
        self.charset = saved.charset
        self.cursor.attrs = saved.attrs
        self.cursor.x = min(saved.x, self.columns - 1)
        self.cursor.y = min(saved.y, self.lines - 1)
        if saved.origin:  # as xterm: in origin mode the cursor stays in the region
            top, bottom = self._region()
            self.cursor.y = max(top, min(self.cursor.y, bottom))

    def define_charset(self, code: str, mode: str) -> None:
        graphics = code == "0"
        if mode == "(":
            self.g0_graphics = graphics
        elif mode == ")":
            self.g1_graphics = graphics

    def soft_reset(self) -> None:
        """DECSTR (``CSI ! p``)."""
        self.mode.discard(_IRM)
        self.mode.discard(_DECOM)
        self.mode.add(_DECAWM)
        self.mode.add(_DECTCEM)
        self.cursor.hidden = False
        self.application_cursor_keys = False
        self.application_keypad = False
        self.margins = None
        self.cursor.attrs = BLANK
        self.g0_graphics = self.g1_graphics = False
        self.charset = 0
        self.saved[self.alt_active] = None

    # -- modes ---------------------------------------------------------------

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        self._modes(modes, bool(kwargs.get("private")), on=True)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        self._modes(modes, bool(kwargs.get("private")), on=False)

    def _modes(self, modes: Iterable[int], private: bool, *, on: bool) -> None:
        if not private:
            for m in modes:
                if m in (_IRM, _LNM):
                    (self.mode.add if on else self.mode.discard)(m)
            return
        for m in modes:
            if m == 1:
                self.application_cursor_keys = on
            elif m == 5:
                self.reverse_video = on
            elif m == 6:
                (self.mode.add if on else self.mode.discard)(_DECOM)
                self.cursor_position()
            elif m == 7:
                (self.mode.add if on else self.mode.discard)(_DECAWM)
                self.cursor.x = min(self.cursor.x, self.columns - (0 if on else 1))
            elif m == 25:
                (self.mode.add if on else self.mode.discard)(_DECTCEM)
                self.cursor.hidden = not on
            elif m in (47, 1047, 1049):
                if on:
                    self._enter_alt(m)
                else:
                    self._leave_alt(m)
            elif m == 66:
                self.application_keypad = on
            elif m in _MOUSE_TRACKING:
                # As xterm/xterm.js/tmux: one tracking mode; resetting any turns it off.
                self.mouse_tracking = _MOUSE_TRACKING[m] if on else "off"
            elif m in _MOUSE_ENCODING:
                if on:
                    self.mouse_encoding = _MOUSE_ENCODING[m]
                elif self.mouse_encoding == _MOUSE_ENCODING[m]:
                    self.mouse_encoding = "default"
            elif m == 1004:
                self.focus_events = on
            elif m == 2004:
                self.bracketed_paste = on
            # Others (DECCOLM 3, synchronized output 2026, ...) are ignored.

    def _enter_alt(self, mode: int) -> None:
        """Show a fresh alternate buffer (xterm.js and tmux never keep an old one)."""
        if self.main_buffer is not None:
            return
        if mode == 1049:
            self.save_cursor()
        self.main_buffer = self.buffer
        self.buffer = _new_buffer()

    def _leave_alt(self, mode: int) -> None:
        if self.main_buffer is not None:
            self.buffer = self.main_buffer
            self.main_buffer = None
            self.saved[1] = None  # the alternate screen is gone, its DECSC slot too
        if mode == 1049:  # restores even if not in the alt screen, like xterm
            self.restore_cursor()

    # -- size ----------------------------------------------------------------

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """Rows: drop blank-or-not rows below the cursor first, then push the top into
        scrollback (growing pulls it back), as xterm.js does. Columns: no reflow."""
        lines = lines or self.lines
        columns = columns or self.columns
        if (lines, columns) == (self.lines, self.columns):
            return
        old_lines, old_cols = self.lines, self.columns
        if lines != old_lines:
            active = self.alt_active
            shift = self._resize_rows(self.buffer, old_lines, lines, self.cursor.y, not active)
            self.cursor.y += shift
            self._shift_saved(int(active), shift)
            if self.main_buffer is not None:
                anchor = self.saved[0].y if self.saved[0] else old_lines - 1
                self._shift_saved(0, self._resize_rows(self.main_buffer, old_lines, lines, anchor))
        if columns < old_cols:
            for buffer in (self.buffer, self.main_buffer):
                for line in (buffer or {}).values():
                    for x in [x for x in line if x >= columns]:
                        del line[x]
                    last = line.get(columns - 1)
                    if last is not None and last.data and _width(last.data[0]) == 2:
                        line[columns - 1] = last._replace(data=" ")
        else:
            self.tabstops.update(x for x in range(8, columns, 8) if x >= old_cols)
        self.tabstops = {x for x in self.tabstops if x < columns}
        self.lines, self.columns = lines, columns
        self.margins = None
        self.cursor.x = min(self.cursor.x, columns - 1)
        self.cursor.y = max(0, min(self.cursor.y, lines - 1))
        self._shift_saved(0, 0)
        self._shift_saved(1, 0)

    def _resize_rows(
        self, buffer: Buffer, old: int, new: int, anchor: int, history: bool = True
    ) -> int:
        """Resize one buffer's rows; returns how far its content moved down."""
        if new < old:
            excess = old - new
            below = max(0, old - 1 - anchor)
            from_bottom = min(excess, below)
            for y in range(old - from_bottom, old):
                buffer.pop(y, None)
            from_top = excess - from_bottom
            if not from_top:
                return 0
            kept = [buffer.pop(y, None) for y in range(old - from_bottom)]
            if history:
                self.scrollback.extend(line or _Line() for line in kept[:from_top])
                self.undrawn += from_top
            for y, line in enumerate(kept[from_top:]):
                if line is not None:
                    buffer[y] = line
            return -from_top
        if not history or not self.scrollback:
            return 0
        pull = min(new - old, len(self.scrollback))
        moved = [buffer.pop(y, None) for y in range(old)]
        for y, line in enumerate(moved):
            if line is not None:
                buffer[y + pull] = line
        for y in range(pull - 1, -1, -1):
            pulled = self.scrollback.pop()
            self.drawn.pop(id(pulled), None)  # on screen again: it may change
            buffer[y] = self.cells_of(pulled)
        return pull

    def _shift_saved(self, slot: int, shift: int) -> None:
        saved = self.saved[slot]
        if saved is not None:
            y = max(0, min(saved.y + shift, self.lines - 1))
            self.saved[slot] = saved._replace(x=min(saved.x, self.columns - 1), y=y)

    # -- SGR -----------------------------------------------------------------

    def set_link(self, value: str) -> None:
        """OSC 8 ``params;uri``: what follows is drawn inside that link (none when
        the URI is empty). Kept as the program sent it, for snapshots to replay."""
        params, sep, uri = value.partition(";")
        link = f"{_C0.sub('', params)};{_C0.sub('', uri)}" if sep and uri else ""
        self.cursor.attrs = self.cursor.attrs._replace(link=link)

    def apply_sgr(self, params: str) -> None:
        """SGR with a cache: TUIs repeat the same few styles endlessly."""
        if params in ("", "0"):
            link = self.cursor.attrs.link
            self.cursor.attrs = BLANK._replace(link=link) if link else BLANK
            return
        key = (self.cursor.attrs, params)
        attrs = self._sgr_cache.get(key)
        if attrs is None:
            if len(self._sgr_cache) > 4096:
                self._sgr_cache.clear()
            attrs = self._sgr_cache[key] = apply_sgr(self.cursor.attrs, params)
        self.cursor.attrs = attrs

    def select_graphic_rendition(self, *attrs: int, **kwargs: Any) -> None:
        """pyte's entry point, kept for callers that pass ints."""
        self.apply_sgr(";".join(map(str, attrs)))


# -- signals -----------------------------------------------------------------

SignalKind = Literal["notification", "bell", "progress", "prompt", "command", "done"]


@dataclass(frozen=True, slots=True)
class TerminalSignal:
    """One activity hint in a program's output (see the module docstring).

    - ``notification``: OSC 9 text, OSC 777;notify;title;body, OSC 99; ``text``.
    - ``bell``: a BEL on its own.
    - ``progress``: OSC 9;4;state;progress; ``state`` 0 (done) to 4, ``value`` the
      percentage when given.
    - ``prompt`` (OSC 133;A or B), ``command`` (133;C), ``done`` (133;D, ``value``
      the exit status when given).
    """

    kind: SignalKind
    text: str = ""
    state: int = 0
    value: int | None = None


def _signal_text(text: str) -> str:
    return " ".join(_C0.sub(" ", text).split())[:SIGNAL_TEXT_CHARS]


def _small_int(text: str) -> int | None:
    text = text.strip()
    digits = text[1:] if text[:1] == "-" else text
    if not digits.isdigit() or len(digits) > 9:
        return None
    return int(text)


def osc_signal(number: str, value: str) -> TerminalSignal | None:
    """The signal an OSC ``number;value`` carries, if any."""
    if number == "9":
        head, _, rest = value.partition(";")
        if head.isdigit():
            # ConEmu's OSC 9;N commands (9;4 progress, 9;9 working directory, ...):
            # only progress is a signal, never the others' text.
            if head != "4":
                return None
            fields = rest.split(";")
            state = _small_int(fields[0]) if fields[0] else 0
            if state is None or not 0 <= state <= 4:
                return None
            progress = _small_int(fields[1]) if len(fields) > 1 else None
            if progress is not None:
                progress = min(max(progress, 0), 100)
            return TerminalSignal("progress", state=state, value=progress)
        return TerminalSignal("notification", text=_signal_text(value))
    if number == "777":
        command, _, rest = value.partition(";")
        if command != "notify":
            return None
        title, _, body = rest.partition(";")
        title, body = _signal_text(title), _signal_text(body)
        text = f"{title}: {body}" if title and body else title or body
        return TerminalSignal("notification", text=text[:SIGNAL_TEXT_CHARS])
    if number == "99":
        # kitty: metadata;payload. A notification may come in several (each one is
        # a signal); one with no payload (a query, a close) is none.
        _metadata, _, payload = value.partition(";")
        text = _signal_text(payload)
        return TerminalSignal("notification", text=text) if text else None
    if number == "133":
        mark, _, rest = value.partition(";")
        if mark in ("A", "B"):
            return TerminalSignal("prompt")
        if mark == "C":
            return TerminalSignal("command")
        if mark == "D":
            status = rest.partition(";")[0]
            return TerminalSignal("done", value=_small_int(status) if status else None)
    return None


# -- parser ------------------------------------------------------------------

_TEXT = re.compile(r"[^\x00-\x1f\x7f-\x9f]+")
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)([<=>?]?)([0-9:;]*)([ -/]*)([@-~])"  # CSI: groups 1-4
    r"|\x1b([\]P_^X])|([\x90\x98\x9d\x9e\x9f])"  # string start: 5 (7-bit), 6 (C1)
    r"|\x1b([ -/]*)([0-Z\\-~])"  # other escape: 7, 8
)
_CSI_BODY = re.compile(r"([<=>?]?)([0-9:;]*)([ -/]*)")
_OSC_END = re.compile(r"[\x07\x18\x1a\x1b\x9c]")
_STRING_END = re.compile(r"[\x18\x1a\x1b\x9c]")
_C0 = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SIGNAL_OSCS = frozenset({"9", "99", "133", "777"})
_BELL = TerminalSignal("bell")
_STRING_INTRODUCERS = {
    "osc": "\x1b]",
    "dcs": "\x1bP",
    "apc": "\x1b_",
    "pm": "\x1b^",
    "sos": "\x1bX",
}
_STRING_KINDS = {
    "]": "osc",
    "P": "dcs",
    "_": "apc",
    "^": "pm",
    "X": "sos",
    "\x9d": "osc",
    "\x90": "dcs",
    "\x9f": "apc",
    "\x9e": "pm",
    "\x98": "sos",
}
_SEQUENCE_START = frozenset("\x1b\x9b\x90\x98\x9d\x9e\x9f")
_PLAIN_BLOCK = re.compile(r"\r\n(?:[ -~]*(?:\x1b\[[0-9;]{0,64}m[ -~]*)*\r\n)+")
"""CR LF, then whole lines of printable ASCII and plain SGR, each ending in CR LF:
what logs and floods are made of, handed to `_Screen.plain_lines` in one call."""
_SGR_SPLIT = re.compile(r"\x1b\[([0-9;]*)m").split


class _Parser:
    """Turns decoded output into screen calls; see the module docstring."""

    def __init__(self, screen: _Screen, reply: Callable[[bytes], None] | None) -> None:
        self.screen = screen
        self._reply = reply
        self._pending = ""  # an incomplete escape sequence from the previous feed
        self._string = ""  # kind of control string being consumed, "" when none
        self._string_len = 0
        self._string_limit = OSC_LIMIT
        self._string_kept: list[str] = []
        self._string_kept_len = 0
        self.signals: deque[TerminalSignal] = deque(maxlen=MAX_SIGNALS)
        s = screen
        self._controls: dict[str, Callable[[], None]] = {
            "\x07": self._bell,
            "\x08": s.backspace,
            "\t": s.tab,
            "\n": s.linefeed,
            "\x0b": s.linefeed,
            "\x0c": s.linefeed,
            "\r": s.carriage_return,
            "\x0e": s.shift_out,
            "\x0f": s.shift_in,
            "\x84": s.index,
            "\x85": self._next_line,
            "\x88": s.set_tab_stop,
            "\x8d": s.reverse_index,
        }
        self._escapes: dict[str, Callable[[], None]] = {
            "7": s.save_cursor,
            "8": s.restore_cursor,
            "D": s.index,
            "E": self._next_line,
            "M": s.reverse_index,
            "H": s.set_tab_stop,
            "c": s.reset,
            "=": self._keypad_application,
            ">": self._keypad_numeric,
        }
        self._csi_handlers: dict[str, Callable[[tuple[int, ...]], None]] = {
            "@": lambda a: s.insert_characters(a[0] if a else 0),
            "A": lambda a: s.cursor_up(a[0] if a else 0),
            "B": lambda a: s.cursor_down(a[0] if a else 0),
            "C": lambda a: s.cursor_forward(a[0] if a else 0),
            "D": lambda a: s.cursor_back(a[0] if a else 0),
            "E": lambda a: s.cursor_down1(a[0] if a else 0),
            "F": lambda a: s.cursor_up1(a[0] if a else 0),
            "G": lambda a: s.cursor_to_column(a[0] if a else 0),
            "`": lambda a: s.cursor_to_column(a[0] if a else 0),
            "H": lambda a: s.cursor_position(*a[:2]),
            "f": lambda a: s.cursor_position(*a[:2]),
            "I": lambda a: s.forward_tab(a[0] if a else 0),
            "J": lambda a: s.erase_in_display(a[0] if a else 0),
            "K": lambda a: s.erase_in_line(a[0] if a else 0),
            "L": lambda a: s.insert_lines(a[0] if a else 0),
            "M": lambda a: s.delete_lines(a[0] if a else 0),
            "P": lambda a: s.delete_characters(a[0] if a else 0),
            "S": lambda a: s.scroll_up(a[0] if a else 0),
            "T": lambda a: s.scroll_down(a[0] if a else 0) if len(a) <= 1 else None,
            "X": lambda a: s.erase_characters(a[0] if a else 0),
            "Z": lambda a: s.back_tab(a[0] if a else 0),
            "a": lambda a: s.cursor_forward(a[0] if a else 0),
            "b": lambda a: s.repeat(a[0] if a else 0),
            "c": self._device_attributes,
            "d": lambda a: s.cursor_to_line(a[0] if a else 0),
            "e": lambda a: s.cursor_down(a[0] if a else 0),
            "g": lambda a: s.clear_tab_stop(a[0] if a else 0),
            "h": lambda a: s.set_mode(*a),
            "l": lambda a: s.reset_mode(*a),
            "n": self._device_status,
            "r": lambda a: s.set_margins(*a[:2]),
            "s": lambda a: s.save_cursor(),
            "t": self._window_ops,
            "u": lambda a: s.restore_cursor(),
        }

    # -- entry points --------------------------------------------------------

    def reset(self) -> None:
        """Forget any partial sequence or control string (after skipped output)."""
        self._pending = ""
        self._string = ""

    def feed(self, text: str) -> None:
        if self._pending:
            text = self._pending + text
            self._pending = ""
        n = len(text)
        i = self._consume_string(text, 0) if self._string else 0
        screen = self.screen
        draw = screen.draw
        match_text = _TEXT.match
        match_lines = _PLAIN_BLOCK.match
        match_sequence = _SEQUENCE.match
        controls = self._controls
        while i < n:
            m = match_text(text, i)
            if m is not None:
                draw(m.group())
                i = m.end()
                continue
            char = text[i]
            if char in _SEQUENCE_START:
                m = match_sequence(text, i)
                if m is None:
                    i = self._slow_sequence(text, i)
                    continue
                i = m.end()
                last = m.lastindex
                if last == 4:
                    self._csi(*m.group(1, 2, 3, 4))
                elif last == 8:
                    self._esc(*m.group(7, 8))
                else:
                    self._start_string(m.group(last or 0))
                    i = self._consume_string(text, i)
            elif char == "\r" and (m := match_lines(text, i)) is not None:
                screen.carriage_return()
                screen.linefeed()
                screen.plain_lines(m.group()[2:-2].split("\r\n"))
                i = m.end()
            else:
                handler = controls.get(char)
                if handler is not None:
                    handler()
                i += 1

    # -- escape sequences ----------------------------------------------------

    def _slow_sequence(self, text: str, i: int) -> int:
        """An escape sequence the regex did not match whole: incomplete, with embedded
        controls (executed, as a VT500 does) or malformed. Returns where to go on."""
        n = len(text)
        if text[i] == "\x9b":
            return self._slow_csi(text, i + 1)
        intermediates = ""
        j = i + 1
        while j < n:
            char = text[j]
            if char == "[" and not intermediates:
                return self._slow_csi(text, j + 1)
            if char == "\x1b":
                return j  # abandoned: the new ESC starts over
            if char in "\x18\x1a":
                return j + 1  # CAN/SUB cancel
            if char < " ":
                self._control(char)
            elif char == "\x7f":
                pass
            elif char <= "/":
                intermediates += char
                if len(intermediates) > 16:
                    return j + 1
            elif char <= "~":
                if not intermediates and char in _STRING_KINDS:
                    self._start_string(char)
                    return self._consume_string(text, j + 1)
                self._esc(intermediates, char)
                return j + 1
            else:
                return j  # not ASCII: abandoned, the character is text
            j += 1
        self._pending = "\x1b" + intermediates
        return n

    def _slow_csi(self, text: str, j: int) -> int:
        n = len(text)
        body = ""
        while j < n:
            char = text[j]
            if "0" <= char <= "?" or " " <= char <= "/":
                body += char
                if len(body) > MAX_PARAMS:
                    return j + 1
            elif "@" <= char <= "~":
                m = _CSI_BODY.fullmatch(body)
                if m is not None:  # else malformed (e.g. parameters after intermediates)
                    marker, params, intermediates = m.group(1, 2, 3)
                    self._csi(marker, params, intermediates, char)
                return j + 1
            elif char == "\x1b":
                return j
            elif char in "\x18\x1a":
                return j + 1
            elif char < " ":
                self._control(char)
            elif char != "\x7f":
                return j
            j += 1
        self._pending = "\x1b[" + body
        return n

    def _control(self, char: str) -> None:
        handler = self._controls.get(char)
        if handler is not None:
            handler()

    def _esc(self, intermediates: str, final: str) -> None:
        screen = self.screen
        if not intermediates:
            handler = self._escapes.get(final)
            if handler is not None:
                handler()
        elif intermediates in "()":
            screen.define_charset(final, intermediates)
        elif intermediates == "#" and final == "8":
            screen.alignment_display()
        # G2/G3 designation, ESC % (charset coding system), ESC SP F ...: ignored.

    def _bell(self) -> None:
        self.signals.append(_BELL)

    def _next_line(self) -> None:
        self.screen.carriage_return()
        self.screen.index()

    def _keypad_application(self) -> None:
        self.screen.application_keypad = True

    def _keypad_numeric(self) -> None:
        self.screen.application_keypad = False

    def _csi(self, marker: str, params: str, intermediates: str, final: str) -> None:
        screen = self.screen
        if final == "m" and not marker and not intermediates:
            screen.apply_sgr(params)
            return
        args = _ints(params)
        if intermediates:
            if intermediates == " " and final == "q":
                screen.cursor_style = args[0] if args and 0 <= args[0] <= 6 else 0
            elif intermediates == "!" and final == "p":
                screen.soft_reset()
            return
        if marker:
            if marker == "?":
                if final == "h":
                    screen.set_mode(*args, private=True)
                elif final == "l":
                    screen.reset_mode(*args, private=True)
                elif final == "J":
                    screen.erase_in_display(args[0] if args else 0)
                elif final == "K":
                    screen.erase_in_line(args[0] if args else 0)
            elif marker == ">" and final == "c" and (not args or args[0] == 0):
                self._send(DA2_REPLY)
            # kitty keyboard (>u <u =u ?u), xterm >m (modifyOtherKeys), >q, DA3: ignored.
            return
        handler = self._csi_handlers.get(final)
        if handler is not None:
            handler(args)

    def _send(self, reply: str) -> None:
        if self._reply is not None:
            self._reply(reply.encode())

    def _device_attributes(self, args: tuple[int, ...]) -> None:
        if not args or args[0] == 0:
            self._send(DA1_REPLY)

    def _device_status(self, args: tuple[int, ...]) -> None:
        code = args[0] if args else 0
        if code == 5:
            self._send("\x1b[0n")
        elif code == 6:
            screen = self.screen
            row = screen.cursor.y + 1
            if _DECOM in screen.mode and screen.margins is not None:
                row -= int(screen.margins.top)
            col = min(screen.cursor.x, screen.columns - 1) + 1
            self._send(f"\x1b[{row};{col}R")

    def _window_ops(self, args: tuple[int, ...]) -> None:
        """XTWINOPS: only the title stack (22/23; 0 = both, 2 = title)."""
        if not args or args[0] not in (22, 23) or (len(args) > 1 and args[1] not in (0, 2)):
            return
        screen = self.screen
        if args[0] == 22:
            screen.title_stack.append(screen.title)
            del screen.title_stack[:-TITLE_STACK_LIMIT]
        elif screen.title_stack:
            screen.title = screen.title_stack.pop()

    # -- control strings -----------------------------------------------------

    def _start_string(self, introducer: str) -> None:
        kind = _STRING_KINDS[introducer]
        self._string = kind
        self._string_len = 0
        self._string_limit = OSC_LIMIT if kind == "osc" else BIG_STRING_LIMIT
        self._string_kept = []
        self._string_kept_len = 0

    def _keep(self, chunk: str) -> None:
        self._string_len += len(chunk)
        if self._string == "osc" and self._string_kept_len < OSC_LIMIT:
            chunk = chunk[: OSC_LIMIT - self._string_kept_len]
            self._string_kept.append(chunk)
            self._string_kept_len += len(chunk)

    def _consume_string(self, text: str, i: int) -> int:
        """Swallow a control string's payload from ``i``; returns where to go on."""
        n = len(text)
        m = (_OSC_END if self._string == "osc" else _STRING_END).search(text, i)
        end = n if m is None else m.start()
        if end - i > self._string_limit - self._string_len and self._string == "osc":
            prefix = "".join(self._string_kept) + text[i : i + 3]
            if prefix.startswith("52;"):  # clipboard: big by design
                self._string_limit = BIG_STRING_LIMIT
        room = self._string_limit - self._string_len
        if end - i > room:
            self._keep(text[i : i + room])
            self._string = ""  # unterminated for too long: the rest is output again
            return i + room
        self._keep(text[i:end])
        if m is None:
            return n
        char = text[end]
        if char == "\x1b":
            if end + 1 >= n:
                self._pending = "\x1b"  # ST or a new sequence: decided by the next feed
                return n
            if text[end + 1] == "\\":
                self._finish_string()
                return end + 2
            self._string = ""  # any other ESC abandons the string and starts anew
            return end
        if char in "\x07\x9c":
            self._finish_string()
        else:
            self._string = ""  # CAN/SUB cancel
        return end + 1

    def unfinished(self) -> str:
        """The sequence this parser is in the middle of, as text that puts a fresh
        parser in the same state: a control string's introducer (an OSC with what it
        kept, when that is all of it so far), then any incomplete escape sequence."""
        carried = ""
        if self._string:
            introducer = _STRING_INTRODUCERS[self._string]
            complete = self._string_len == self._string_kept_len
            carried = introducer + ("".join(self._string_kept) if complete else "")
        return carried + self._pending

    def _finish_string(self) -> None:
        if self._string == "osc":
            number, sep, value = "".join(self._string_kept).partition(";")
            if sep and number in ("0", "2"):
                self.screen.title = _C0.sub("", value)
            elif sep and number == "8":
                self.screen.set_link(value)
            elif sep and number in _SIGNAL_OSCS:
                signal = osc_signal(number, value)
                if signal is not None:
                    self.signals.append(signal)
        self._string = ""


# -- public ------------------------------------------------------------------

_SKIP_MODES = re.compile(rb"\x1b\[\?([0-9;]*)([hl])|\x1b([=>])")


class HeadlessTerminal:
    """A terminal without a display: feed it a program's output, snapshot its screen.

    ``on_reply`` receives what a real terminal would answer to the program's
    queries (DA1, DA2, DSR 5, CPR), exactly once per query.
    """

    def __init__(
        self,
        cols: int,
        rows: int,
        *,
        scrollback: int = 1000,
        on_reply: Callable[[bytes], None] | None = None,
    ) -> None:
        if cols < 1 or rows < 1:
            raise ValueError(f"terminal size must be positive, got {cols}x{rows}")
        self._screen = _Screen(cols, rows, scrollback)
        self._parser = _Parser(self._screen, on_reply)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.fast_forwarded = 0
        """Bytes of plain floods left unparsed, their effect applied (`_fast_forward`)."""

    @property
    def cols(self) -> int:
        return self._screen.columns

    @property
    def rows(self) -> int:
        return self._screen.lines

    def feed(self, data: bytes) -> None:
        """Raw output bytes; UTF-8 and escape sequences may be split across calls."""
        screen = self._screen
        point = fast_forward.rebuild_point(
            data, rows=screen.lines, scrollback=screen.scrollback.maxlen or 0
        )
        if point is not None:
            self._parse(data[: point.start])
            data = data[point.offset if self._fast_forward(point) else point.start :]
        self._parse(data)

    def _parse(self, data: bytes) -> None:
        text = self._decoder.decode(data)
        if text:
            self._parser.feed(text)

    def _fast_forward(self, point: fast_forward.RebuildPoint) -> bool:
        """Apply the lasting effects of a plain flood's part that would only scroll
        out of the scrollback (see `fast_forward`), if the terminal is at a clean
        boundary on the main screen; exact."""
        screen = self._screen
        if (
            screen.alt_active
            or screen.margins is not None
            or self._parser.unfinished()
            or self._decoder.getstate()[0]
        ):
            return False
        last = screen.last_graphic_in(point.tail)
        if not last:
            return False  # it lies further back: parse it all
        for params in point.sgr:
            screen.apply_sgr(params)
        screen.last_graphic = last
        screen.scroll_out()
        self.fast_forwarded += point.offset - point.start
        return True

    def take_signals(self) -> list[TerminalSignal]:
        """The signals seen since the last call, oldest first (at most `MAX_SIGNALS`,
        the newest). Bytes passed to `skip` give none."""
        signals = self._parser.signals
        if not signals:
            return []
        taken = list(signals)
        signals.clear()
        return taken

    def skip(self, data: bytes, start: int = 0, end: int | None = None) -> None:
        """Bytes not rendered (a flood): apply only their private mode changes and the
        keypad mode, then start the next feed from a clean parser and decoder.
        ``start``/``end`` bound the scan within ``data`` without copying it."""
        screen = self._screen
        stop = len(data) if end is None else end
        for m in _SKIP_MODES.finditer(data, start, stop):
            if m.group(3):
                screen.application_keypad = m.group(3) == b"="
                continue
            modes = [int(p) for p in m.group(1).split(b";") if p.isdigit() and len(p) <= 5]
            if m.group(2) == b"h":
                screen.set_mode(*modes, private=True)
            else:
                screen.reset_mode(*modes, private=True)
        self._decoder.reset()
        self._parser.reset()

    def resize(self, cols: int, rows: int) -> None:
        if cols < 1 or rows < 1:
            raise ValueError(f"terminal size must be positive, got {cols}x{rows}")
        self._screen.resize(rows, cols)

    @property
    def title(self) -> str:
        return self._screen.title

    @property
    def modes(self) -> TerminalModes:
        s = self._screen
        return TerminalModes(
            alternate_screen=s.alt_active,
            application_cursor_keys=s.application_cursor_keys,
            application_keypad=s.application_keypad,
            bracketed_paste=s.bracketed_paste,
            mouse_tracking=s.mouse_tracking,
            mouse_encoding=s.mouse_encoding,
            focus_events=s.focus_events,
            auto_wrap=_DECAWM in s.mode,
            cursor_visible=not s.cursor.hidden,
        )

    @property
    def cursor(self) -> tuple[int, int]:
        """(row, col), 0-based; a pending wrap reads as the last column."""
        s = self._screen
        return s.cursor.y, min(s.cursor.x, s.columns - 1)

    def line(self, row: int) -> list[Cell]:
        """The cells of a visible row (wide characters: the cell, then a ``""`` cell)."""
        line = self._screen.buffer.get(row, _EMPTY_LINE)
        return [line[x] for x in range(self._screen.columns)]

    @property
    def display(self) -> list[str]:
        """The visible rows as text, one character per cell (wide: one per two)."""
        cols = self._screen.columns
        return [_text(self._screen.buffer.get(y, _EMPTY_LINE), cols) for y in range(self.rows)]

    @property
    def scrollback(self) -> list[str]:
        """The main screen's scrollback as text, oldest first."""
        cols = self._screen.columns
        return [
            line.text(cols) if isinstance(line, _PlainRow) else _text(line, cols)
            for line in self._screen.scrollback
        ]

    def text(self, *, scrollback: int = 0, ansi: bool = False) -> tuple[list[str], list[str]]:
        """(the last ``scrollback`` lines of scrollback (-1: all), the visible rows):
        plain text with trailing blanks trimmed, or with SGR colours (``ansi``)."""
        cols = self._screen.columns
        kept = list(self._screen.scrollback)
        if scrollback >= 0:
            kept = kept[len(kept) - scrollback :] if scrollback else []
        history = list(map(self._screen.cells_of, kept))  # cells only for what is asked
        rows = [self._screen.buffer.get(y, _EMPTY_LINE) for y in range(self.rows)]

        def show(line: _Line) -> str:
            return line_ansi(line, cols) if ansi else _text(line, cols).rstrip()

        return [show(line) for line in history], [show(line) for line in rows]

    @property
    def undecoded(self) -> int:
        """Bytes fed but held by the UTF-8 decoder: the start of a character whose
        rest has not arrived (a snapshot is taken before them, see `snapshot`)."""
        return len(self._decoder.getstate()[0])

    @property
    def scrollback_undrawn(self) -> int:
        return self._screen.undrawn

    def draw_scrollback(self) -> None:
        """Draw the lines that went into the scrollback since last time, so that the
        next snapshot finds them drawn (the renderer calls this when it is idle)."""
        s = self._screen
        if not s.undrawn:
            return
        if len(s.drawn) > len(s.scrollback) + 256:  # lines gone from the history
            self._drawn_scrollback()
            return
        for line in itertools.islice(reversed(s.scrollback), s.undrawn):
            s.drawn[id(line)] = s.drawing(line)
        s.undrawn = 0

    def _drawn_scrollback(self) -> list[str]:
        """The scrollback as snapshots draw it, each line drawn once and kept (a cold
        attach with 1000 lines of it would otherwise draw them all each time)."""
        s = self._screen
        drawn = {}
        texts = []
        for line in s.scrollback:
            hit = drawn[id(line)] = s.drawing(line)
            texts.append(hit[2])
        s.drawn = drawn
        s.undrawn = 0
        return texts

    def snapshot(self, *, include_scrollback: bool = True) -> TerminalSnapshot:
        """The screen as output for a fresh terminal. A sequence the parser is in the
        middle of is carried at the end of ``ansi`` (`_Parser.unfinished`), so the
        next bytes of the stream complete it there too; the bytes of an unfinished
        UTF-8 character (`undecoded`) are not, and must be sent again after it."""
        s = self._screen
        cols, rows = s.columns, s.lines
        main_buffer = s.main_buffer if s.main_buffer is not None else s.buffer

        def lines(buffer: Buffer) -> list[Line]:
            return [buffer.get(y, _EMPTY_LINE) for y in range(rows)]

        def saved(slot: _Saved | None) -> SavedCursor | None:
            if slot is None:
                return None
            return SavedCursor(min(slot.x, cols - 1), min(slot.y, rows - 1), slot.attrs)

        modes = self.modes
        state = ScreenState(
            cols=cols,
            rows=rows,
            main=lines(main_buffer),
            alt=lines(s.buffer) if s.alt_active else None,
            scrollback=self._drawn_scrollback() if include_scrollback else [],
            cursor_x=s.cursor.x,
            cursor_y=s.cursor.y,
            pen=s.cursor.attrs,
            cursor_visible=modes.cursor_visible,
            title=s.title,
            saved_main=saved(s.saved[0]),
            saved_alt=saved(s.saved[1]),
            margins=s._region() if s.margins is not None else None,
            origin_mode=_DECOM in s.mode,
            auto_wrap=modes.auto_wrap,
            insert_mode=_IRM in s.mode,
            newline_mode=_LNM in s.mode,
            reverse_video=s.reverse_video,
            application_cursor_keys=modes.application_cursor_keys,
            application_keypad=modes.application_keypad,
            bracketed_paste=modes.bracketed_paste,
            mouse_tracking=modes.mouse_tracking,
            mouse_encoding=modes.mouse_encoding,
            focus_events=modes.focus_events,
            cursor_style=s.cursor_style,
            g0_graphics=s.g0_graphics,
            g1_graphics=s.g1_graphics,
            shifted_out=s.charset == 1,
            tabstops=None if s.tabstops == _default_tabstops(cols) else frozenset(s.tabstops),
        )
        return TerminalSnapshot(
            cols=cols,
            rows=rows,
            ansi=render_snapshot(state, include_scrollback=include_scrollback)
            + self._parser.unfinished(),
            cursor_row=s.cursor.y,
            cursor_col=min(s.cursor.x, cols - 1),
            title=s.title,
            modes=modes,
        )


def _text(line: _Line, cols: int) -> str:
    """A line as text; a wide character cut by the right edge shows as a blank."""
    chars = [line[x].data for x in range(cols)]
    if chars[-1] and _width(chars[-1][0]) == 2:
        chars[-1] = " "
    return "".join(chars)


def _default_tabstops(cols: int) -> set[int]:
    return set(range(8, cols, 8))
