"""The screen's grid: pyte's `Screen` subclassed with the fixes the package docstring
lists, the cursor, modes and an alternate screen. Runs of one-cell characters are
stored with one ``dict.update``. Rows are `rows.ScreenLine`; what scrolls off the top
goes to a `scrollback.Scrollback`; whole plain lines take `plain_lines` instead.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, NamedTuple, Protocol

import pyte
from pyte import modes as mo
from pyte.screens import Margins

from ptyvisor.terminal import grid, reflow, resize
from ptyvisor.terminal.charsets import Charsets
from ptyvisor.terminal.modes import InputModes
from ptyvisor.terminal.rows import (
    Buffer,
    Pens,
    ScreenLine,
    ScrollbackLine,
    is_wrapped,
    new_buffer,
    unwrap,
    wrap,
)
from ptyvisor.terminal.scrollback import Scrollback
from ptyvisor.terminal.sgr import apply_sgr
from ptyvisor.terminal.signals import CONTROLS
from ptyvisor.terminal.snapshot import BLANK, Cell, Erased, Left, erased
from ptyvisor.terminal.widths import ONE_CELL_RUN, char_width

DECAWM: int = mo.DECAWM
_DECTCEM: int = mo.DECTCEM
DECOM: int = mo.DECOM
IRM: int = mo.IRM
LNM: int = mo.LNM

_width = char_width
_ONE_CELL_SPLIT = re.compile(f"({ONE_CELL_RUN.pattern})").split


class _Cursor(Protocol):
    x: int
    y: int
    attrs: Cell
    hidden: bool


class Layout(NamedTuple):
    """What xterm.js keeps per buffer besides the cells: the scrolling region and the
    tab stops (the main screen's come back when the alternate one is left)."""

    margins: Margins | None
    tabstops: set[int]


class SavedSlot(NamedTuple):
    """A DECSC slot (origin mode is not in it: xterm.js's DECRC leaves the mode)."""

    x: int
    y: int
    attrs: Cell
    charsets: Charsets


class Screen(pyte.Screen):
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
        self.pens = Pens()
        self.scrollback = Scrollback(scrollback, self.pens)
        self.main_buffer: Buffer | None = None  # the main screen while the alt one shows
        self._sgr_cache: dict[tuple[Cell, str], Cell] = {}
        self._init_state()
        super().__init__(columns, lines)
        self.buffer = new_buffer()

    def _init_state(self) -> None:
        """State pyte does not have; also what RIS resets."""
        self.saved: list[SavedSlot | None] = [None, None]  # DECSC slots: main, alt
        self.set_charsets(Charsets())
        self.input_modes = InputModes()
        self.reverse_video = False
        self.cursor_style = 0
        self.title_stack: list[str] = []
        self.last_graphic = ""
        self.other_layout: Layout | None = None  # the buffer not shown; None: defaults
        self.main_y = 0
        """The main screen's cursor row while the alternate one shows (a resize keeps
        that row on screen, as xterm.js keeps each buffer's own cursor)."""

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
        self.tabstops = default_tabstops(self.columns)

    def _blank(self) -> Cell:
        """What erasing writes: only the background colour survives (BCE)."""
        bg = self.cursor.attrs.bg
        return erased(bg)

    def fill_blank(self, rows: Iterable[int]) -> None:
        """Rows that scrolled in take the background colour, as xterm.js (BCE) fills them;
        with the default one they are simply absent."""
        blank = self._blank()
        if blank is not BLANK:
            for y in rows:
                self.buffer[y] = ScreenLine(dict.fromkeys(range(self.columns), blank))

    # -- drawing -------------------------------------------------------------

    def draw(self, data: str) -> None:
        """Draw printable text (the parser never passes control characters)."""
        if self.table is not None:
            data = data.translate(self.table)
        if IRM in self.mode:
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
            cells = self.pens.cells(cursor.attrs)
            if line:
                grid.split_wide(line, x, end, cells[" "])
            drawn = map(cells.__getitem__, data)
            line.update(zip(range(x, end), drawn, strict=True))
            cursor.x = end  # the edge: the pending wrap, or with autowrap off the same
            return
        cells = self.pens.cells(cursor.attrs)
        get_cell = cells.__getitem__
        cols = self.columns
        autowrap = DECAWM in self.mode
        self.last_graphic = data[-1]
        count = len(data)
        i = 0
        while i < count:
            x = cursor.x
            if x >= cols:  # the edge: wrap, or (autowrap off) overwrite the last column
                if not autowrap:  # everything left lands on the last column
                    line = self.buffer[cursor.y]
                    grid.split_wide(line, cols - 1, cols, get_cell(" "))
                    line[cols - 1] = get_cell(data[-1])
                    return
                cursor.x = 0
                self.index()
                wrap(self.buffer[cursor.y])
                x = 0
            line = self.buffer[cursor.y]
            end = min(cols, x + count - i)
            grid.split_wide(line, x, end, get_cell(" "))
            line.update(zip(range(x, end), map(get_cell, data[i : i + end - x]), strict=True))
            i += end - x
            cursor.x = end

    def _draw_unicode(self, data: str) -> None:
        cursor = self.cursor
        cells = self.pens.cells(cursor.attrs)
        cols = self.columns
        autowrap = DECAWM in self.mode
        insert = IRM in self.mode
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
                    if x < cols:  # the cell it leaves: blank, in the pen (as xterm.js)
                        self._leave_blank(x, cells[" "])
                    cursor.x = 0
                    self.index()
                    wrap(self.buffer[cursor.y])
                    x = 0
                elif width == 2:  # as xterm.js: without autowrap it is dropped
                    cursor.x = cols - 1
                    continue
                else:
                    x = cols - width
            cursor.x = x
            if insert:
                self.insert_characters(width)
            line = self.buffer[cursor.y]
            grid.split_wide(line, x, x + width, cells[" "])
            line[x] = cells[char]
            if width == 2:
                line[x + 1] = cells[""]
            cursor.x = x + width
            self.last_graphic = char

    def _leave_blank(self, x: int, pen: Cell) -> None:
        """A wide character wraps from column ``x`` (the last): xterm.js leaves that
        cell blank in every attribute of the pen (a colour, inverse, underline: not
        only the background, as erasing does), without content (`snapshot.Left`)."""
        line = self.buffer[self.cursor.y]
        grid.split_wide(line, x, x + 1, pen)
        line[x] = Left(*pen)

    def _attach(self, char: str) -> None:
        """Append a zero-width character (combining, ZWJ, VS16) to the previous cell,
        the character printed just before it."""
        x = min(self.cursor.x, self.columns) - 1
        if x < 0 or not self.last_graphic:
            # Nothing printed just before it (a control or sequence came between): as
            # xterm.js draws it, the page's terminal, it takes a cell of its own.
            self._draw_narrow(char)
            return
        line = self.buffer[self.cursor.y]
        cell = line[x]
        if cell.data == "" and x > 0:
            x -= 1
            cell = line[x]
        if len(cell.data) < 32:  # as the program wrote it: xterm.js keeps the code points
            line[x] = cell._replace(data=cell.data + char)

    def scroll_out(self) -> None:
        """What a flood's lines do at the bottom row: scroll the whole screen into
        the scrollback, leaving it blank with the cursor at the bottom left."""
        cursor = self.cursor
        cursor.y = self.lines - 1
        for _ in range(self.lines):
            self.index()
        cursor.x = 0

    def repeat(self, count: int) -> None:
        """REP: repeat the last graphic character, as xterm.js does: what the cell it
        was printed in holds now (a resize in between may have moved it away)."""
        if not self.last_graphic:
            return
        x = self.cursor.x - max(1, char_width(self.last_graphic))
        cell = self.buffer[self.cursor.y].get(x) if x >= 0 else None
        if cell is not None and cell.data and not isinstance(cell, Erased):
            self.draw(cell.data * max(1, min(count, self.columns * self.lines)))

    # -- scrolling -----------------------------------------------------------

    def _region(self) -> tuple[int, int]:
        if self.margins is None:
            return 0, self.lines - 1
        return int(self.margins.top), int(self.margins.bottom)

    def index(self, fill: bool = True) -> None:
        """IND/LF: scroll the region at its bottom; on the main screen, a region at its
        top sends its first row to the scrollback."""
        cursor = self.cursor
        if cursor.x >= self.columns:
            cursor.x = self.columns - 1
        top, bottom = self._region()
        if cursor.y != bottom:
            if cursor.y < self.lines - 1:
                cursor.y += 1
            return
        buffer = self.buffer
        if top == 0 and (bottom == self.lines - 1 or self.main_buffer is None):
            # A region at the top of the main screen feeds the scrollback too, as in
            # xterm.js (and xterm): a footer kept below it stays where it is.
            first = buffer.pop(0) if 0 in buffer else ScreenLine()
            if self.main_buffer is None:
                self.history_grows(1)
                self.scrollback.append(first)
            if bottom == self.lines - 1:
                # Renumbering in one comprehension beats moving rows one by one.
                self.buffer = defaultdict(ScreenLine, {y - 1: line for y, line in buffer.items()})
                self.fill_blank((bottom,) if fill else ())
                return
        grid.move_rows(self.buffer, top, bottom, -1)
        self.fill_blank((bottom,) if fill else ())

    def linefeed(self) -> None:
        """LF (and VT, FF): an index, after which the row the cursor moved onto no
        longer continues the row above it, as in xterm.js (IND and NEL leave that);
        with LNM, a carriage return too."""
        y = self.cursor.y
        self.index()
        if self.cursor.y == y + 1:
            unwrap(self.buffer.get(y + 1))
        if LNM in self.mode:
            self.carriage_return()

    def history_grows(self, count: int) -> None:
        """``count`` rows are about to go into the scrollback. xterm.js counts the row
        of the main screen's saved cursor from the top of its scrollback, so while that
        is not full, DECRC comes back that much higher (above the top: to the top)."""
        saved = self.saved[0]
        grown = min(count, self.scrollback.limit - len(self.scrollback))
        if saved is not None and grown > 0:
            self.saved[0] = saved._replace(y=saved.y - grown)

    def reverse_index(self, fill: bool = True) -> None:
        """RI: scroll the region down at its top."""
        cursor = self.cursor
        if cursor.x >= self.columns:
            cursor.x = self.columns - 1
        top, bottom = self._region()
        if cursor.y != top:
            if cursor.y > 0:
                cursor.y -= 1
            return
        grid.move_rows(self.buffer, top, bottom, 1)
        self.fill_blank((top,) if fill else ())

    def scroll_up(self, count: int = 0) -> None:
        """SU: like that many line feeds at the bottom margin (so the main screen's
        scrollback gets the lines); the cursor stays."""
        self._scroll_in_place(count, lambda: self.index(fill=False), at_top=False)

    def scroll_down(self, count: int = 0) -> None:
        """SD: like that many reverse indexes at the top margin; the cursor stays, and
        the rows that come in are blank (xterm.js gives them no background)."""
        self._scroll_in_place(count, lambda: self.reverse_index(fill=False), at_top=True)

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
        count = min(count or 1, bottom - y0 + 1)
        grid.move_rows(self.buffer, y0, bottom, count)
        self.fill_blank(range(y0, y0 + count))
        self.cursor.x = 0

    def delete_lines(self, count: int | None = None) -> None:
        top, bottom = self._region()
        y0 = self.cursor.y
        if not top <= y0 <= bottom:
            return
        count = min(count or 1, bottom - y0 + 1)
        grid.move_rows(self.buffer, y0, bottom, -count)
        self.fill_blank(range(bottom - count + 1, bottom + 1))
        self.cursor.x = 0

    # -- erasing -------------------------------------------------------------

    def _disarm(self) -> int:
        """Leave the pending-wrap state, as xterm.js does before ICH, DCH and ECH; the
        cursor's column."""
        x = self.cursor.x = min(self.cursor.x, self.columns - 1)
        return x

    def insert_characters(self, count: int | None = None) -> None:
        """ICH, keeping wide characters whole or blanking them."""
        x = self._disarm()
        line = self.buffer[self.cursor.y]
        grid.insert_cells(line, self._blank(), x, min(count or 1, self.columns - x), self.columns)

    def delete_characters(self, count: int | None = None) -> None:
        """DCH, keeping wide characters whole or blanking them."""
        x = self._disarm()
        line = self.buffer[self.cursor.y]
        grid.delete_cells(line, self._blank(), x, min(count or 1, self.columns - x), self.columns)

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        """EL. In the pending-wrap state the cursor is past the last column, as in
        xterm.js: EL 0 keeps the character written there (xterm would erase it, the
        page's terminal does not) and the pending wrap."""
        x = self.cursor.x
        line = self.buffer[self.cursor.y]
        if how == 0:
            grid.erase(line, self._blank(), x, self.columns)
            if x == 0:  # as xterm.js: the whole row erased no longer continues another
                unwrap(line)
        elif how == 1:
            grid.erase(line, self._blank(), 0, min(x + 1, self.columns))
        elif how == 2:
            grid.erase(line, self._blank(), 0, self.columns)
            unwrap(line)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        """ED; 3 clears the scrollback only, as in xterm."""
        if how == 3:
            saved = self.saved[0]
            if saved is not None:  # xterm.js: the saved row stays counted from the old top
                self.saved[0] = saved._replace(y=saved.y + len(self.scrollback))
            self.scrollback.clear()
            return
        if how == 0:
            self.erase_in_line(0)
            rows: Iterable[int] = range(self.cursor.y + 1, self.lines)
        elif how == 1:
            self.erase_in_line(1)
            unwrap(self.buffer.get(self.cursor.y))
            if self.cursor.x + 1 >= self.columns:  # the row above it is all erased
                unwrap(self.buffer.get(self.cursor.y + 1))
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
                self.buffer[y] = ScreenLine(dict.fromkeys(range(self.columns), blank))

    def erase_characters(self, count: int | None = None) -> None:
        x = self._disarm()
        grid.erase(
            self.buffer[self.cursor.y], self._blank(), x, min(self.columns, x + (count or 1))
        )

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
        """CUP as pyte's, without its helper calls (TUIs send one per few cells); in
        origin mode a row past the region stops at its edge (pyte ignored the move)."""
        y = (line or 1) - 1
        x = (column or 1) - 1
        margins = self.margins
        top, bottom = 0, self.lines - 1
        if margins is not None and DECOM in self.mode:
            top, bottom = int(margins.top), int(margins.bottom)
            y += top
        cursor = self.cursor
        cursor.x = min(max(0, x), self.columns - 1)
        cursor.y = min(max(top, y), bottom)

    def cursor_to_line(self, line: int | None = None) -> None:
        """VPA, relative to the region in origin mode (pyte asserts margins exist)."""
        top, bottom = self._region()
        if DECOM in self.mode:
            self.cursor.y = min(top + (line or 1) - 1, bottom)
        else:
            self.cursor.y = min((line or 1) - 1, self.lines - 1)
        self.cursor.x = min(self.cursor.x, self.columns - 1)

    def set_tab_stop(self) -> None:
        self.tabstops.add(self.cursor.x)  # as xterm.js: at the pending-wrap column too

    def alignment_display(self) -> None:
        """DECALN: the screen full of E (pyte kept wide characters' right halves)."""
        for y in range(self.lines):
            self.buffer[y] = ScreenLine(dict.fromkeys(range(self.columns), Cell("E")))

    def tab(self) -> None:
        """HT; in the pending-wrap state nothing moves (as xterm.js), as for CHT and CBT."""
        x = self.cursor.x
        if x >= self.columns:
            return
        stop = min((s for s in self.tabstops if s > x), default=self.columns - 1)
        self.cursor.x = min(stop, self.columns - 1)

    def back_tab(self, count: int = 0) -> None:
        if self.cursor.x >= self.columns:
            return
        for _ in range(count or 1):
            x = min(self.cursor.x, self.columns - 1)
            self.cursor.x = max((s for s in self.tabstops if s < x), default=0)

    def forward_tab(self, count: int = 0) -> None:
        for _ in range(min(count or 1, self.columns)):
            self.tab()

    def save_cursor(self) -> None:
        """DECSC into the slot of the current buffer (xterm keeps one per buffer)."""
        c = self.cursor
        self.saved[self.alt_active] = SavedSlot(
            c.x,  # may be the pending-wrap column, as xterm.js keeps it (DECRC clamps)
            c.y,
            c.attrs,
            self.charsets,
        )

    def restore_cursor(self) -> None:
        """DECRC: exact position (clamped into the margins only in origin mode, not
        always as pyte did); visibility and, as in xterm.js, origin mode untouched."""
        saved = self.saved[self.alt_active]
        if saved is None:
            saved = SavedSlot(0, 0, BLANK, Charsets())
        self.set_charsets(saved.charsets)
        self.cursor.attrs = saved.attrs
        self.cursor.x = min(saved.x, self.columns - 1)  # the pending wrap is not restored
        self.cursor.y = max(0, min(saved.y, self.lines - 1))
        if DECOM in self.mode:  # in origin mode the cursor stays in the region
            top, bottom = self._region()
            self.cursor.y = max(top, min(self.cursor.y, bottom))

    def set_charsets(self, charsets: Charsets) -> None:
        self.charsets = charsets
        self.table = charsets.table

    def define_charset(self, code: str, mode: str) -> None:
        self.set_charsets(self.charsets.designate(mode, code))

    def shift_in(self) -> None:
        """SI: G0 in use."""
        self.set_charsets(replace(self.charsets, shifted=False))

    def shift_out(self) -> None:
        """SO: G1 in use."""
        self.set_charsets(replace(self.charsets, shifted=True))

    def soft_reset(self) -> None:
        """DECSTR (``CSI ! p``)."""
        self.mode.discard(IRM)
        self.mode.discard(DECOM)
        self.mode.add(DECAWM)
        self.mode.add(_DECTCEM)
        self.cursor.hidden = False
        self.input_modes = replace(
            self.input_modes, application_cursor_keys=False, application_keypad=False
        )
        self.margins = None
        self.cursor.attrs = BLANK
        self.set_charsets(Charsets())
        self.saved[self.alt_active] = None

    # -- modes ---------------------------------------------------------------

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        self._modes(modes, bool(kwargs.get("private")), on=True)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        self._modes(modes, bool(kwargs.get("private")), on=False)

    def _modes(self, modes: Iterable[int], private: bool, *, on: bool) -> None:
        if not private:
            for m in modes:
                if m in (IRM, LNM):
                    (self.mode.add if on else self.mode.discard)(m)
            return
        for m in modes:
            changed = self.input_modes.changed(m, on)
            if changed is not None:
                self.input_modes = changed
            elif m == 5:
                self.reverse_video = on
            elif m == 6:
                (self.mode.add if on else self.mode.discard)(DECOM)
                self.cursor_position()
            elif m == 7:
                (self.mode.add if on else self.mode.discard)(DECAWM)
            elif m == 25:
                (self.mode.add if on else self.mode.discard)(_DECTCEM)
                self.cursor.hidden = not on
            elif m in (47, 1047, 1049):
                if on:
                    self._enter_alt(m)
                else:
                    self._leave_alt(m)
            # Others (DECCOLM 3, synchronized output 2026, ...) are ignored.

    def _enter_alt(self, mode: int) -> None:
        """Show a fresh alternate buffer (xterm.js and tmux never keep an old one).
        1049 saves the cursor first, into the slot of the screen in use: the alternate
        one's, if 47 or 1047 showed it already (which then stays as it is)."""
        if mode == 1049:
            self.save_cursor()
        if self.main_buffer is not None:
            return
        self.main_buffer = self.buffer
        self.main_y = self.cursor.y
        self.buffer = new_buffer()
        self.fill_blank(range(self.lines))  # as xterm.js fills the new alternate screen
        self._swap_layout()

    def _leave_alt(self, mode: int) -> None:
        if self.main_buffer is not None:
            self.buffer = self.main_buffer
            self.main_buffer = None
            self.saved[1] = None  # the alternate screen is gone, its DECSC slot too
            self._swap_layout()
        if mode == 1049:  # restores even if not in the alt screen, like xterm
            self.restore_cursor()

    def _swap_layout(self) -> None:
        """The other buffer's region and tab stops in use, this one's kept. The
        alternate screen's are always fresh: xterm.js clears that buffer on leaving it
        (region and tab stops too) and sets its tab stops up again on showing it."""
        if self.alt_active:  # just shown
            self.other_layout = Layout(self.margins, self.tabstops)
            self.margins, self.tabstops = None, default_tabstops(self.columns)
        else:
            main = self.other_layout or Layout(None, default_tabstops(self.columns))
            self.margins, self.tabstops = main
            self.other_layout = None

    # -- size ----------------------------------------------------------------

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """As xterm.js: see `ptyvisor.terminal.resize`."""
        lines = lines or self.lines
        columns = columns or self.columns
        if (lines, columns) == (self.lines, self.columns):
            return
        old_lines, old_cols = self.lines, self.columns
        if lines != old_lines:
            active = self.alt_active
            history = None if active else self.scrollback
            shift = resize.rows(self.buffer, history, old_lines, lines, self.cursor.y)
            self.cursor.y += shift
            self._shift_saved(int(active), shift)
            if self.main_buffer is not None:
                shift = resize.rows(
                    self.main_buffer, self.scrollback, old_lines, lines, self.main_y
                )
                self.main_y = max(0, min(self.main_y + shift, lines - 1))
                self._shift_saved(0, shift)
        if columns != old_cols:
            self._reflow(old_cols, columns, lines)
        alt = self.buffer if self.alt_active else None
        main = self.main_buffer if alt is not None else self.buffer
        if columns < old_cols:  # after its reflow, the main screen is cut at the edge
            for line in (main or {}).values():
                grid.cut(line, columns)
        elif alt is not None:
            # The alternate screen does not reflow, and xterm.js (and xterm) keep its
            # rows' cells past a narrower width: they show again when it widens, up to
            # the new width (what lies past it is gone then). A snapshot shows them once
            # widened; one taken while narrower cannot carry them.
            for line in alt.values():
                grid.cut(line, columns)
        widen_tabstops(self.tabstops, columns)
        if self.other_layout is not None:
            widen_tabstops(self.other_layout.tabstops, columns)
            self.other_layout = Layout(None, self.other_layout.tabstops)
        self.lines, self.columns = lines, columns
        self.margins = None
        self.cursor.x = min(self.cursor.x, columns - 1)
        self.cursor.y = max(0, min(self.cursor.y, lines - 1))
        self._fit_saved()

    def _reflow(self, old_cols: int, columns: int, lines: int) -> None:
        """The main screen's wrapped lines re-wrapped at ``columns`` (`terminal.reflow`),
        its scrollback with it, whichever screen shows."""
        alt = self.main_buffer is not None
        buffer = self.main_buffer if self.main_buffer is not None else self.buffer
        y = self.main_y if alt else self.cursor.y
        saved = self.saved[0]
        history = list(self.scrollback)
        screen: list[ScrollbackLine] = []
        for k in range(lines):
            line = buffer.get(k)
            screen.append(ScreenLine() if line is None else line)
        state = reflow.Lines(
            history + screen,
            len(history),
            max(0, min(y, lines - 1)),
            0 if saved is None else len(history) + saved.y,  # xterm.js counts from the top
            self.scrollback.limit + lines,
        )
        reflow.reflow(state, old_cols, columns, lines, self.pens.cells_of)
        history = state.rows[: state.base]
        if columns < old_cols:  # as xterm.js, the scrollback's rows are cut at the edge too
            reflow.cut_rows(history, columns, self.pens.cells_of)
        self.scrollback.replace(history)
        rebuilt = new_buffer()
        for k, kept in enumerate(state.rows[state.base : state.base + lines]):
            if kept or is_wrapped(kept):
                rebuilt[k] = self.pens.cells_of(kept)
        if alt:
            self.main_buffer, self.main_y = rebuilt, state.y
        else:
            self.buffer, self.cursor.y = rebuilt, state.y
        if saved is not None or state.saved_y:
            # xterm.js moves even a cursor never saved (its row 0 at the top of the
            # scrollback) by the rows reflow adds or takes away: a later DECRC goes there.
            slot = saved or SavedSlot(0, 0, BLANK, Charsets())
            self.saved[0] = slot._replace(y=state.saved_y - state.base)

    def _shift_saved(self, slot: int, shift: int) -> None:
        """The saved cursor's row moves with the rows. It is not clamped to the screen:
        xterm.js keeps it counted from the top of the scrollback (above the top or
        below the bottom), and DECRC clamps."""
        saved = self.saved[slot]
        if saved is not None and shift:
            self.saved[slot] = saved._replace(y=saved.y + shift)

    def _fit_saved(self) -> None:
        """After a resize, a saved cursor past the new last column (or in the
        pending-wrap state) goes to that column, as xterm.js does (``savedX``)."""
        for slot, saved in enumerate(self.saved):
            if saved is not None and saved.x > self.columns - 1:
                self.saved[slot] = saved._replace(x=self.columns - 1)

    # -- SGR -----------------------------------------------------------------

    def set_link(self, value: str) -> None:
        """OSC 8 ``params;uri``: what follows is drawn inside that link (none when
        the URI is empty). Kept as the program sent it, for snapshots to replay."""
        params, sep, uri = value.partition(";")
        link = f"{CONTROLS.sub('', params)};{CONTROLS.sub('', uri)}" if sep and uri else ""
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


def widen_tabstops(stops: set[int], columns: int) -> None:
    """After a resize to ``columns``, as xterm.js: stops every 8 columns from the last
    one left of the new edge to it; none is removed (those past the edge are back when
    it widens again)."""
    start = columns
    if start not in stops:
        start = max((x for x in stops if x < columns), default=0)
    stops.update(range(start, columns, 8))


def default_tabstops(cols: int) -> set[int]:
    """Every 8 columns from the first, as xterm.js sets them (the one at 0 changes
    nothing a tab does, but a resize counts from it)."""
    return set(range(0, cols, 8))
