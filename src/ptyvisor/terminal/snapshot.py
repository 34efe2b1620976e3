"""The cell model of the headless screen and its serialisation to ANSI output.

`render_snapshot` turns a plain `ScreenState` record into terminal output that,
written to a fresh terminal of the same size (xterm, xterm.js, tmux), reproduces
what the program drew and the state it relies on for its next bytes:

* It starts with a *targeted* reset instead of RIS (``ESC c``): RIS would also
  wipe the client's scrollback, reset its palette, font and other settings the
  user chose, and flashes on some terminals. We reset only what changes how the
  rest of the snapshot draws: normal screen buffer, SGR, insert mode, origin
  mode, scrolling region, G0/GL character set; then home and erase.
* Scrollback lines are written from the top and pushed off the screen with
  exactly as many line feeds at the bottom row as needed, so they land in the
  client's history without blank lines in between.
* Every row is drawn with absolute positioning (``CSI row;1H``); runs of default
  blanks are skipped with ``CUF`` (the screen was erased), trailing ones are not
  written at all. Writing the last column only arms the pending wrap, and the
  next ``CUP`` disarms it, so the screen never scrolls.
* Except a row that continues the one above it (the program's text wrapped onto
  it): that one is reached by wrapping, its text going on from the row above (filled
  to the edge), so that the client's row continues the other too and a later width
  change re-wraps them as the live view does (`terminal.reflow`). In the scrollback
  the same goes for the rows' joins, and rows of the screen that continue the last
  row of the scrollback go on in its stream before the line feeds push it out.
* Each style change is a full ``CSI 0;...m`` so no attribute leaks between runs.
* With the alternate screen active, the main screen is drawn first, then
  ``CSI ?1049h`` (saving the cursor saved on entry) and the alternate screen, so
  leaving it later shows the right main screen and restores that cursor. xterm.js
  keeps a cursor row per buffer, around which a change of height moves the main
  screen's rows: where the program's main cursor row is not the saved one (it used
  ``?47h`` or ``?1047h``), the snapshot saves with DECSC, moves to that row and
  shows the alternate screen with ``?1047h``.
* The tail restores the title, saved cursors, tab stops, scrolling region, every
  tracked mode explicitly (set *or* reset, so a reused terminal converges too;
  the mouse encoding is always restored along with tracking), the cursor
  position — re-arming a pending wrap by rewriting the last cell — charset,
  visibility and finally the pen (the SGR the program is drawing with).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from .charsets import RESET as RESET_CHARSETS
from .charsets import Charsets
from .modes import InputModes
from .widths import char_width

ESC = "\x1b"
CSI = "\x1b["
ST = "\x1b\\"


class Cell(NamedTuple):
    """One styled screen cell; the first nine fields match ``pyte.screens.Char``.

    ``data`` is the base character plus any zero-width characters attached to it;
    ``""`` marks the right half of a wide character. Colours are ``"default"``,
    a pyte ANSI name (``"red"``, ``"brightred"``, ``"brown"`` for yellow), a
    256-palette index as a decimal string (``"196"``), or ``"rrggbb"`` truecolor.
    Keeping palette indices apart from truecolor lets the client apply its own
    palette, as it would for the live stream. ``link`` is the OSC 8 hyperlink the
    cell was drawn inside, as ``params;uri`` (``""``: none), so a snapshot keeps links.
    """

    data: str
    fg: str = "default"
    bg: str = "default"
    bold: bool = False
    italics: bool = False
    underscore: bool = False
    strikethrough: bool = False
    reverse: bool = False
    blink: bool = False
    dim: bool = False
    hidden: bool = False
    overline: bool = False
    link: str = ""


BLANK = Cell(" ")


class Erased(Cell):
    """A cell erased with a background colour (BCE): blank, but without content, as
    xterm.js keeps it (a written space has content). Reflow measures a line up to its
    last cell with content, and a snapshot erases such cells (ECH) rather than
    writing spaces; the type says which blanks those are."""

    __slots__ = ()


class Left(Cell):
    """The last cell of a row that a wide character left when it wrapped onto the next:
    blank in the whole pen, but without content, as xterm.js keeps it. A snapshot
    draws it as a space in that pen; reflow does not count it as text (the wide
    character that follows it moves up into it when the row widens)."""

    __slots__ = ()


NO_CONTENT = (Erased, Left)
"""The blanks that are cells without content in xterm.js."""


def erased(bg: str) -> Cell:
    """What erasing writes with background ``bg`` (BLANK for the default one)."""
    return BLANK if bg == "default" else Erased(*BLANK._replace(bg=bg))


"""An erased, unstyled cell: what a freshly cleared terminal holds everywhere."""

Line = Mapping[int, Cell]
"""A screen line, keyed by column; missing columns read as the line's default."""

ANSI_COLOURS = ("black", "red", "green", "brown", "blue", "magenta", "cyan", "white")
BRIGHT_COLOURS = tuple("bright" + name for name in ANSI_COLOURS)
_COLOUR_SGR: dict[str, tuple[int, int]] = {
    **{name: (30 + i, 40 + i) for i, name in enumerate(ANSI_COLOURS)},
    **{name: (90 + i, 100 + i) for i, name in enumerate(BRIGHT_COLOURS)},
}
_FLAG_SGR = (
    ("bold", "1"),
    ("dim", "2"),
    ("italics", "3"),
    ("underscore", "4"),
    ("blink", "5"),
    ("reverse", "7"),
    ("hidden", "8"),
    ("strikethrough", "9"),
    ("overline", "53"),
)


def _colour_params(colour: str, background: bool) -> list[str]:
    if colour == "default":
        return []
    ansi = _COLOUR_SGR.get(colour)
    if ansi is not None:
        return [str(ansi[1] if background else ansi[0])]
    base = "48" if background else "38"
    if len(colour) == 6:
        try:
            r, g, b = (int(colour[i : i + 2], 16) for i in (0, 2, 4))
        except ValueError:
            return []
        return [base, "2", str(r), str(g), str(b)]
    if colour.isdigit():
        return [base, "5", colour]
    return []


@lru_cache(maxsize=1024)
def sgr(style: tuple[object, ...]) -> str:
    """Full ``CSI 0;...m`` for a cell's style (``cell[1:]``): resets first, never leaks.
    The hyperlink is not SGR: see `hyperlink`."""
    cell = Cell(" ", *style)  # type: ignore[arg-type]
    params = ["0"]
    params += _colour_params(cell.fg, background=False)
    params += _colour_params(cell.bg, background=True)
    params += [code for name, code in _FLAG_SGR if getattr(cell, name)]
    return CSI + ";".join(params) + "m"


def hyperlink(link: str) -> str:
    """OSC 8 that opens ``link`` (``params;uri``), or closes the open one for ``""``."""
    return f"{ESC}]8;{link or ';'}{ST}"


def _forward(n: int) -> str:
    """CUF over ``n`` cells, in its shortest form (no parameter for one)."""
    return "" if n <= 0 else f"{CSI}{n}C" if n > 1 else CSI + "C"


def _erase(n: int) -> str:
    """ECH over ``n`` cells from the cursor, which stays; shortest form, as `_forward`."""
    return f"{CSI}{n}X" if n > 1 else CSI + "X"


def line_ansi(line: Line, cols: int) -> str:
    """One line as text with SGR colours and attributes (no cursor movement, no
    trailing blanks): what ``capture --ansi`` prints, one line at a time."""
    end = min(cols, max(line, default=-1) + 1)
    while end > 0 and line.get(end - 1, BLANK) == BLANK:
        end -= 1
    out: list[str] = []
    style = _PLAIN
    for x in range(end):
        cell = line.get(x, BLANK)
        if cell.data == "":
            continue  # the right half of the wide character just written
        cell_style = tuple(cell[1:_LINK])
        if cell_style != style:
            out.append(sgr(cell_style))
            style = cell_style
        out.append(cell.data if x + 1 < cols or not _is_wide(cell.data) else " ")
    if style != _PLAIN:
        out.append(CSI + "0m")
    return "".join(out)


@lru_cache(maxsize=4096)
def _is_wide(data: str) -> bool:
    return bool(data) and char_width(data[0]) == 2


@lru_cache(maxsize=1024)
def _is_lone_mark(data: str) -> bool:
    """A zero-width character in a cell of its own (one that followed a sequence)."""
    return bool(data) and char_width(data[0]) == 0


@dataclass(frozen=True, slots=True)
class SavedCursor:
    """A DECSC slot: 0-based position and the pen at save time."""

    x: int  # may equal the width: saved in the pending-wrap state
    y: int
    attrs: Cell
    charsets: Charsets = field(default_factory=Charsets)


@dataclass(frozen=True, slots=True)
class ScreenState:
    """Everything the snapshot reproduces, decoupled from the emulator's internals."""

    cols: int
    rows: int
    main: Sequence[Line]
    alt: Sequence[Line] | None
    scrollback: Sequence[Drawn]
    """The history's rows as drawn (`drawn_line`, `drawn_runs`): rows in the history
    never change, so the terminal keeps them drawn and a snapshot does not draw a
    thousand lines again."""
    cursor_x: int  # may equal cols: the pending-wrap state
    cursor_y: int
    pen: Cell
    cursor_visible: bool
    title: str = ""
    saved_main: SavedCursor | None = None
    saved_alt: SavedCursor | None = None
    margins: tuple[int, int] | None = None  # 0-based inclusive, None = full screen
    origin_mode: bool = False
    auto_wrap: bool = True
    insert_mode: bool = False
    newline_mode: bool = False
    reverse_video: bool = False
    input_modes: InputModes = field(default_factory=InputModes)
    cursor_style: int = 0
    charsets: Charsets = field(default_factory=Charsets)
    tabstops: frozenset[int] | None = None  # None = the default, every 8 columns
    main_margins: tuple[int, int] | None = None
    """The main screen's region and tab stops while the alternate one shows (xterm.js
    keeps them per buffer)."""
    main_tabstops: frozenset[int] | None = None
    last_graphic: str = ""
    """The character just printed, with no control or sequence since: what REP repeats
    and a combining mark joins (xterm.js forgets it at any sequence)."""
    main_y: int = 0
    """The main screen's cursor row while the alternate one shows: a change of height
    moves the main screen's rows to and from the scrollback around it (xterm.js keeps
    each buffer's own cursor)."""


PROLOGUE = (
    CSI
    + "?1049l"  # draw the main screen into the main buffer
    + CSI
    + "0m"
    + CSI
    + "4l"  # replace mode
    + CSI
    + "?6l"  # absolute origin
    + CSI
    + "r"  # full-screen scrolling region
    + RESET_CHARSETS  # ASCII in G0 and G1, G0 in use
    + CSI
    + "H"
    + CSI
    + "2J"
)


_LINK = Cell._fields.index("link")
_PLAIN = tuple(BLANK[1:_LINK])


class _Writer:
    """Accumulates output and remembers the current pen to avoid redundant SGR."""

    __slots__ = ("link", "out", "style")

    def __init__(self) -> None:
        self.out: list[str] = []
        self.style: tuple[object, ...] | None = None
        self.link = ""

    def pen(self, cell: Cell) -> None:
        style = tuple(cell[1:_LINK])
        if style != self.style:
            self.out.append(sgr(style))
            self.style = style
        if cell.link != self.link:
            self.out.append(hyperlink(cell.link))
            self.link = cell.link

    def reset_pen(self) -> None:
        if self.style != _PLAIN:
            self.out.append(CSI + "0m")
            self.style = _PLAIN
        if self.link:
            self.out.append(hyperlink(""))
            self.link = ""

    def goto(self, y: int, x: int) -> None:
        """Absolute 0-based move; also disarms any pending wrap."""
        self.out.append(f"{CSI}{y + 1};{x + 1}H" if x else f"{CSI}{y + 1}H")

    def line(self, line: Line, cols: int, row: int | None = None) -> None:
        """Draw one line on an erased row: at ``row`` (absolute), or from the cursor
        when it is already at column 0 (scrollback lines)."""
        out = self.out
        gap = 0
        resync = False
        x = 0
        end = min(cols, max(line, default=-1) + 1)  # lines are sparse: stop at the last key
        while x < end:
            cell = line[x]
            if cell == BLANK:
                gap += 1
                x += 1
                continue
            if type(cell) is Erased:  # erased in its colour (ECH), not written: no content
                run = 1
                while x + run < end and type(line[x + run]) is Erased and line[x + run] == cell:
                    run += 1
                if row is not None:
                    self.goto(row, x)
                    row = None
                elif resync:
                    out.append(f"{CSI}{x + 1}G")
                elif gap:
                    out.append(_forward(gap))
                resync = False
                self.pen(cell)
                out.append(_erase(run))
                gap = run  # ECH leaves the cursor where it is
                x += run
                continue
            if row is not None:
                self.goto(row, x)
                row = None
                resync = False
            elif resync or _is_lone_mark(cell.data):
                # A mark that had a cell of its own must not join the character
                # printed before it: a sequence between them keeps them apart.
                out.append(f"{CSI}{x + 1}G")
                resync = False
            elif gap:
                out.append(_forward(gap))
            gap = 0
            data = cell.data
            self.pen(cell)
            if data == "":  # orphaned right half of a wide character
                out.append(" ")
            elif x + 1 < cols and line[x + 1].data == "":
                out.append(data)
                x += 1
            elif _is_wide(data):  # lost its right half: cannot be shown whole
                out.append(" ")
            else:
                out.append(data)
            # Terminals disagree on the width of emoji and of clusters with
            # zero-width parts: re-synchronise the column after them.
            resync = len(data) > 1 or (data >= "\U0001f000")
            x += 1


def scrollback_line(line: Line, cols: int) -> str:
    """A scrollback line as a snapshot draws it: from a plain pen, back to plain at
    its end (lines scrolled in take the current background), so that it is the same
    text in every snapshot and can be kept."""
    w = _Writer()
    w.style = _PLAIN
    if not _ascii_runs(w, line, cols):
        w.line(line, cols)
    w.reset_pen()
    return "".join(w.out)


def runs_line(runs: Sequence[tuple[Cell, str]]) -> str:
    """`scrollback_line` of a line drawn from column 0 as runs of one-cell ASCII
    text, each with its pen (a cell's style and link; its data is ignored), known
    without reading the line's cells."""
    return _runs_drawing(runs)[0]


def _runs_drawing(runs: Sequence[tuple[Cell, str]]) -> tuple[str, int]:
    """`runs_line`, and how many cells at its end it does not draw (blanks in the
    plain pen)."""
    runs = list(runs)
    undrawn = 0
    while runs:
        pen, text = runs[-1]
        if pen[1:] != BLANK[1:]:
            break
        kept = text.rstrip(" ")
        undrawn += len(text) - len(kept)
        if kept:
            runs[-1] = (pen, kept)
            break
        runs.pop()
    w = _Writer()
    w.style = _PLAIN
    for pen, text in runs:
        w.pen(pen)
        w.out.append(text)
    w.reset_pen()
    return "".join(w.out), undrawn


class Drawn(NamedTuple):
    """A scrollback row as a snapshot draws it (`scrollback_line`, `runs_line`), and
    what joining it to the row above takes: the column its text ends at, whether it
    continues that row (its text wrapped onto it), whether it starts with a wide
    character."""

    text: str
    end: int
    wrapped: bool = False
    wide_first: bool = False
    edge: Cell = BLANK
    """Its cell in the last column, which `fill` writes when the row below continues it."""
    left: bool = False
    """Its last cell is one a wide character left wrapping onto the row below
    (`Left`), not drawn: the wide character leaves it again by itself."""


def wrap_onto(line: Line) -> str:
    """The start of a row that continues the one above, in the plain pen: a stand-in
    for its first character (a wide one for a wide one, which wraps by itself from the
    last column) makes the text wrap onto the row, so the client's row continues the
    one above as the live one does (reflow reads that), and a row it scrolls in takes
    no colour; then back to the left edge, where the row is drawn over it. An empty
    first cell is erased again: no content, as on the live row."""
    first = line.get(0)
    wide = first is not None and _is_wide(first.data)
    stand_in = first.data if wide and first is not None else " "
    return stand_in + "\b" * (2 if wide else 1) + ("" if first is not None else CSI + "X")


def continues(line: object, cols: int) -> bool:
    """Whether a screen row continues the row above it (`rows.WrappedLine`), as a
    snapshot at ``cols`` shows: not in a screen of one column, where nothing wraps
    onto a row without filling it (xterm.js has two columns at least)."""
    return cols >= 2 and bool(getattr(line, "continues", False))


def drawn_end(line: Line, cols: int) -> int:
    """The column the cursor is at after a drawing of ``line`` (`_Writer.line`): past
    its last written cell, or at the start of a run of cells erased in their colour
    after it (ECH does not move the cursor)."""
    if not line:
        return 0
    last = max(line)
    cell = line[last]
    if last < cols and cell != BLANK and type(cell) is not Erased:  # most rows: one look
        return last + 1
    end = 0
    x = 0
    stop = min(cols, last + 1)
    while x < stop:
        cell = line.get(x, BLANK)
        if cell == BLANK:
            x += 1
        elif type(cell) is Erased:  # as `_Writer.line` takes a run of them
            end = x
            x += 1
            while x < stop and type(line.get(x)) is Erased and line[x] == cell:
                x += 1
        else:
            x += 1
            end = x
    return end


def fill(cols: int, end: int, edge: Cell) -> str:
    """What takes a row's drawing from column ``end`` to the edge, so that the next
    character wraps onto the row below: over the blank cells, then the last one
    (``edge``) written as a blank in its own colours (the pending wrap needs a
    printed cell)."""
    if end >= cols:
        return ""
    w = _Writer()
    w.style = _PLAIN
    skip = cols - 1 - end
    if skip:
        w.out.append(_forward(skip))
    w.pen(edge)
    w.out.append(" ")
    w.reset_pen()
    return "".join(w.out)


def drawn_line(line: Line, cols: int, wrapped: bool) -> Drawn:
    text = scrollback_line(line, cols)
    if wrapped:
        text = wrap_onto(line) + text
    end = drawn_end(line, cols)
    wide_first = _is_wide(line.get(0, BLANK).data)
    edge = line.get(cols - 1, BLANK) if end < cols else BLANK  # used only short of it
    return Drawn(text, end, wrapped, wide_first, edge)


def drawn_runs(runs: Sequence[tuple[Cell, str]], wrapped: bool, width: int) -> Drawn:
    """`drawn_line` of a row kept as runs, ``width`` cells wide (its drawing ends
    where `runs_line` stops: trailing plain blanks are not drawn)."""
    text, undrawn = _runs_drawing(runs)
    end = width - undrawn
    if wrapped:
        text = (" \b" if runs else " \b" + CSI + "X") + text
    return _new_drawn(Drawn, (text, end, wrapped, False, BLANK, False))  # the hot path: no kwargs


_new_drawn: Callable[[type[Drawn], tuple[object, ...]], Drawn] = tuple.__new__
_TEXT = operator.attrgetter("text")
_WRAPPED = operator.attrgetter("wrapped")


def bridge(above: Drawn, row: Drawn, cols: int) -> str:
    """What goes between two rows: a new line, or, for a row that continues the one
    above, a `fill` of that one up to the edge, so that the next character wraps onto it
    (none where a wide character does by itself from the last column)."""
    if not row.wrapped:
        return "\r\n"
    if row.wide_first and (above.left or (above.end == cols - 1 and above.edge == BLANK)):
        skip = cols - 1 - above.end  # to the last column, from which it wraps
        return _forward(skip)
    return fill(cols, above.end, above.edge)


_DATA = operator.itemgetter(0)
_STYLE_AND_LINK = operator.itemgetter(slice(1, None))


def _ascii_runs(w: _Writer, line: Line, cols: int, row: int | None = None) -> bool:
    """`_Writer.line` for a line of one-cell ASCII characters (most lines: logs,
    compiler output, a shell), drawn a run of one style at a time instead of cell by
    cell, at ``row`` from its first non-blank cell if given. Blanks inside are
    written as spaces, which on an erased row is the same as moving over them.
    False, drawing nothing, for any other line."""
    end = min(cols, max(line, default=-1) + 1)
    cells = list(map(line.__getitem__, range(end)))
    text = "".join(map(_DATA, cells))
    if len(text) != end or not text.isascii():
        return False  # wide, combining or emoji: the cell-by-cell path handles them
    while end and cells[end - 1] == BLANK:
        end -= 1
    x = 0
    if row is not None:
        while x < end and cells[x] == BLANK:
            x += 1
        w.goto(row, x)
    skip = 0  # cells erased in their colour (ECH) that the cursor has yet to pass
    for _, run in itertools.groupby(cells[x:end], _STYLE_AND_LINK):
        same = list(run)
        w.pen(same[0])
        parts = [(False, len(same))]
        if same[0].bg != "default" and Erased in set(map(type, same)):  # rare: split
            parts = [(erased, len(list(cells))) for erased, cells in _by_erased(same)]
        for erased, count in parts:
            if skip:
                w.out.append(_forward(skip))
                skip = 0
            if erased:
                w.out.append(_erase(count))
                skip = count
            else:
                w.out.append(text[x : x + count])
            x += count
    return True


def _by_erased(cells: Sequence[Cell]) -> Iterator[tuple[bool, Iterator[Cell]]]:
    return itertools.groupby(cells, _is_erased)


def _is_erased(cell: Cell) -> bool:
    return type(cell) is Erased


def _screen_line(w: _Writer, line: Line, cols: int, row: int) -> None:
    """One row of the screen, on an erased row; blank rows are not drawn."""
    if any(cell != BLANK for cell in line.values()) and not _ascii_runs(w, line, cols, row):
        w.line(line, cols, row)


class _Blanks(dict[int, Cell]):
    """A copy of a row: a missing column reads as BLANK."""

    __slots__ = ()

    def __missing__(self, key: int) -> Cell:
        return BLANK


def _wrapped_group(w: _Writer, lines: Sequence[Line], cols: int, row: int) -> None:
    """Rows from ``row`` on, each continuing the one above (the program's text wrapped
    onto them): drawn in one stream from the first row's left edge, each row's text
    wrapping onto the next as it did live, so that the client's rows continue each
    other too and re-wrap as the live ones do when the width changes."""
    w.goto(row, 0)
    above = Drawn("", 0)
    for i, row_cells in enumerate(lines):
        line = row_cells
        edge = line.get(cols - 1, BLANK)
        left = type(edge) is Left and i + 1 < len(lines)
        if left and _is_wide(lines[i + 1].get(0, BLANK).data):
            line = _Blanks((x, cell) for x, cell in line.items() if x != cols - 1)
        else:
            left = False
        end = drawn_end(line, cols)
        wide = _is_wide(line.get(0, BLANK).data)
        drawn = Drawn("", end, bool(i), wide, edge, left)
        if i:
            if above.left:  # the wide character's stand-in leaves that cell in its pen
                w.pen(above.edge)
            else:
                w.reset_pen()
            w.out.append(bridge(above, drawn, cols))
            w.out.append(wrap_onto(line))
        if not _ascii_runs(w, line, cols):
            w.line(line, cols)
        above = drawn


def _cursor_tail(w: _Writer, state: ScreenState, lines: Sequence[Line]) -> None:
    """Place the cursor, re-arming a pending wrap by rewriting the last cell(s)
    (autowrap is on here; it is turned off after, if it was, keeping the state)."""
    top = state.margins[0] if state.origin_mode and state.margins else 0
    _place(w, state.cols, lines[state.cursor_y], state.cursor_y - top, state.cursor_x)


def _place(w: _Writer, cols: int, line: Line, y: int, x: int) -> None:
    """Put the cursor at row ``y`` (as CUP counts it) and column ``x``; ``x == cols``
    is the pending-wrap state, re-armed by rewriting the row's last cell(s) as they
    are (the pen is left at that cell's)."""
    if x < cols:
        w.goto(y, x)
        return
    last = line[cols - 1]
    if last.data == "" and cols >= 2 and _is_wide(line[cols - 2].data):
        w.goto(y, cols - 2)
        w.pen(line[cols - 2])
        w.out.append(line[cols - 2].data)
    else:
        w.goto(y, cols - 1)
        w.pen(last)
        w.out.append(last.data if last.data and not _is_wide(last.data) else " ")


DECSC = ESC + "7"


def _saved_cursor(
    w: _Writer, saved: SavedCursor | None, lines: Sequence[Line], cols: int, save: str = DECSC
) -> None:
    """Have ``save`` (DECSC, or ``?1049h``, which saves the cursor too) keep ``saved``,
    leaving the character sets as they were (`charsets.RESET`: text is still to be
    drawn). A cursor saved in the pending-wrap state is saved in it again (``lines``:
    the screen it was saved on, whose last cell re-arms it)."""
    if saved is None:
        if save != DECSC:
            w.out.append(save)
        return
    _place(w, cols, lines[saved.y], saved.y, saved.x)
    w.pen(saved.attrs)
    sets = saved.charsets.replay()
    w.out.append(sets + save + (RESET_CHARSETS if sets else ""))


def _layout(
    w: _Writer,
    margins: tuple[int, int] | None,
    tabstops: frozenset[int] | None,
    cols: int,
    rows: int,
) -> None:
    """The buffer's tab stops (None: the default ones) and scrolling region."""
    if tabstops is not None:
        w.out.append(CSI + "3g")
        for stop in sorted(tabstops):
            if stop < cols:
                w.goto(0, stop)
                w.out.append(ESC + "H")
    if margins is not None and margins != (0, rows - 1):
        w.out.append(f"{CSI}{margins[0] + 1};{margins[1] + 1}r")


def _mode(number: int, on: bool, private: bool = True) -> str:
    return f"{CSI}{'?' if private else ''}{number}{'h' if on else 'l'}"


def render_snapshot(state: ScreenState, *, include_scrollback: bool = True) -> str:
    """Terminal output that recreates ``state`` on a fresh terminal of the same size."""
    cols, rows = state.cols, state.rows
    w = _Writer()
    out = w.out
    out.append(PROLOGUE)
    w.style = _PLAIN

    history = state.scrollback if include_scrollback else ()
    joined = any(map(_WRAPPED, history))
    if joined or any(continues(line, cols) for line in state.main):
        out.append(_mode(7, True))  # rows that continue others are drawn by wrapping
    lead = 0
    if history:
        if joined:
            parts = [history[0].text]
            for above, row in itertools.pairwise(history):
                parts += (bridge(above, row, cols), row.text)
        else:  # the common case, at C speed: no row continues another
            parts = ["\r\n".join(map(_TEXT, history))]
        # Screen rows that continue the last row of the history go on in the stream.
        above = history[-1]
        while lead < rows and continues(state.main[lead], cols):
            row = drawn_line(state.main[lead], cols, True)
            parts += (bridge(above, row, cols), row.text)
            above = row
            lead += 1
        out.append("".join(parts))
        # The stream ends on row min(count + lead, rows) - 1; line feeds on the bottom
        # row push exactly the history's lines out of the screen.
        count = len(history)
        w.goto(rows - 1, 0)
        out.append("\n" * (count - max(0, count + lead - rows)))

    y = lead
    while y < rows:
        last = y + 1
        while last < rows and continues(state.main[last], cols):
            last += 1
        if last == y + 1:
            _screen_line(w, state.main[y], cols, y)
        else:
            _wrapped_group(w, state.main[y:last], cols, y)
        y = last

    if state.title:
        out.append(f"{ESC}]2;{state.title}{ST}")

    if state.alt is not None:
        _layout(w, state.main_margins, state.main_tabstops, cols, rows)
        saved = state.saved_main
        if saved is not None and saved.y == state.main_y:
            # As the program showed it (nearly always): ?1049h saves the cursor, and
            # the main screen's cursor row is the saved one.
            _saved_cursor(w, saved, state.main, cols, save=CSI + "?1049h")
        else:  # with ?47h or ?1047h: the saved cursor and the cursor row apart
            _saved_cursor(w, saved, state.main, cols)
            w.goto(state.main_y, 0)
            out.append(CSI + "?1047h")
        w.reset_pen()  # the erase below must not paint a background
        out.append(CSI + "H" + CSI + "2J")
        for y in range(rows):
            _screen_line(w, state.alt[y], cols, y)
        _saved_cursor(w, state.saved_alt, state.alt, cols)
        lines = state.alt
    else:
        _saved_cursor(w, state.saved_main, state.main, cols)
        lines = state.main

    _layout(w, state.margins, state.tabstops, cols, rows)
    out.append(_mode(6, state.origin_mode))
    out.append(_mode(5, state.reverse_video))
    out.append(state.input_modes.replay())
    out.append(f"{CSI}{state.cursor_style} q")
    out.append(_mode(25, state.cursor_visible))

    out.append(_mode(7, True))
    _cursor_tail(w, state, lines)
    # Only now: these change how the cell rewritten above would be drawn.
    if not state.auto_wrap:
        out.append(_mode(7, False))
    if state.insert_mode:
        out.append(_mode(4, True, private=False))
    if state.newline_mode:
        out.append(_mode(20, True, private=False))
    out.append(state.charsets.replay())
    w.pen(state.pen)
    _print_last_again(w, state, lines)
    return "".join(out)


def _print_last_again(w: _Writer, state: ScreenState, lines: Sequence[Line]) -> None:
    """End with the character the program printed last, printed again where it is, so
    that a REP or a combining mark that comes next acts on it as it would have live
    (xterm.js forgets that character at any sequence, and the snapshot is sequences).
    Only where printing it changes nothing else: the pen, the character set and
    insert mode must draw it as it is."""
    cols, x, y = state.cols, state.cursor_x, state.cursor_y
    if not state.last_graphic or state.insert_mode:
        return
    line = lines[y]
    at = min(x, cols) - 1
    if at > 0 and line[at].data == "" and _is_wide(line[at - 1].data):
        at -= 1
    if at < 0:
        return
    cell = line[at]
    table = state.charsets.table
    if (
        not cell.data
        or cell.data[0] != state.last_graphic
        or cell[1:] != state.pen[1:]
        or (table is not None and cell.data.translate(table) != cell.data)
        or at + (2 if _is_wide(cell.data) else 1) != min(x, cols)
    ):
        return
    top = state.margins[0] if state.origin_mode and state.margins else 0
    w.goto(y - top, at)
    w.out.append(cell.data)
