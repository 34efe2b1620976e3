"""`HeadlessTerminal`, what a session's renderer holds: bytes in (decoded as UTF-8
incrementally, plain floods fast-forwarded, see `ptyvisor.terminal.fast_forward`), and out
the screen as a snapshot for a fresh terminal, as text, and the modes a client must
mirror.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass

from pyte.screens import Margins

from ptyvisor.terminal import fast_forward
from ptyvisor.terminal.modes import KEYPAD, InputModes
from ptyvisor.terminal.parser import Parser
from ptyvisor.terminal.rows import EMPTY_LINE, Buffer, PlainRow, ScreenLine
from ptyvisor.terminal.screen import (
    DECAWM,
    DECOM,
    IRM,
    LNM,
    SavedSlot,
    Screen,
    default_tabstops,
)
from ptyvisor.terminal.signals import TerminalSignal
from ptyvisor.terminal.snapshot import (
    Cell,
    Line,
    SavedCursor,
    ScreenState,
    line_ansi,
    render_snapshot,
)
from ptyvisor.terminal.widths import char_width


@dataclass(frozen=True, slots=True)
class TerminalModes(InputModes):
    """The input modes, and the screen's modes a client shows: what the wire's
    `TerminalModesModel` carries."""

    alternate_screen: bool = False
    auto_wrap: bool = True
    cursor_visible: bool = True


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
        self._screen = Screen(cols, rows, scrollback)
        self._parser = Parser(self._screen, on_reply)
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
            data, rows=screen.lines, scrollback=screen.scrollback.limit
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
        for params in point.sgr:
            screen.apply_sgr(params)
        screen.last_graphic = ""  # it ends with a line feed: REP repeats nothing then
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
                modes = [KEYPAD]
                on = m.group(3) == b"="
            else:
                modes = [int(p) for p in m.group(1).split(b";") if p.isdigit() and len(p) <= 5]
                on = m.group(2) == b"h"
            if on:
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
            **asdict(s.input_modes),
            alternate_screen=s.alt_active,
            auto_wrap=DECAWM in s.mode,
            cursor_visible=not s.cursor.hidden,
        )

    @property
    def cursor(self) -> tuple[int, int]:
        """(row, col), 0-based; a pending wrap reads as the last column."""
        s = self._screen
        return s.cursor.y, min(s.cursor.x, s.columns - 1)

    def line(self, row: int) -> list[Cell]:
        """The cells of a visible row (wide characters: the cell, then a ``""`` cell)."""
        line = self._screen.buffer.get(row, EMPTY_LINE)
        return [line[x] for x in range(self._screen.columns)]

    @property
    def display(self) -> list[str]:
        """The visible rows as text, one character per cell (wide: one per two)."""
        cols = self._screen.columns
        return [_text(self._screen.buffer.get(y, EMPTY_LINE), cols) for y in range(self.rows)]

    @property
    def scrollback(self) -> list[str]:
        """The main screen's scrollback as text, oldest first."""
        cols = self._screen.columns
        return [
            line.text(cols) if isinstance(line, PlainRow) else _text(line, cols)
            for line in self._screen.scrollback
        ]

    def text(self, *, scrollback: int = 0, ansi: bool = False) -> tuple[list[str], list[str]]:
        """(the last ``scrollback`` lines of scrollback (-1: all), the visible rows):
        plain text with trailing blanks trimmed, or with SGR colours (``ansi``)."""
        cols = self._screen.columns
        kept = list(self._screen.scrollback)
        if scrollback >= 0:
            kept = kept[max(len(kept) - scrollback, 0) :] if scrollback else []
        history = list(map(self._screen.scrollback.cells_of, kept))  # cells only for what is asked
        rows = [self._screen.buffer.get(y, EMPTY_LINE) for y in range(self.rows)]

        def show(line: ScreenLine) -> str:
            return line_ansi(line, cols) if ansi else _text(line, cols).rstrip()

        return [show(line) for line in history], [show(line) for line in rows]

    @property
    def undecoded(self) -> int:
        """Bytes fed but held by the UTF-8 decoder: the start of a character whose
        rest has not arrived (a snapshot is taken before them, see `snapshot`)."""
        return len(self._decoder.getstate()[0])

    @property
    def scrollback_undrawn(self) -> int:
        return self._screen.scrollback.undrawn

    def draw_scrollback(self) -> None:
        """Draw the lines that went into the scrollback since last time, so that the
        next snapshot finds them drawn (the renderer calls this when it is idle)."""
        self._screen.scrollback.draw_new(self._screen.columns)

    def snapshot(self, *, include_scrollback: bool = True) -> TerminalSnapshot:
        """The screen as output for a fresh terminal. A sequence the parser is in the
        middle of is carried at the end of ``ansi`` (`Parser.unfinished`), so the
        next bytes of the stream complete it there too; the bytes of an unfinished
        UTF-8 character (`undecoded`) are not, and must be sent again after it."""
        s = self._screen
        cols, rows = s.columns, s.lines
        main_buffer = s.main_buffer if s.main_buffer is not None else s.buffer

        def lines(buffer: Buffer) -> list[Line]:
            return [buffer.get(y, EMPTY_LINE) for y in range(rows)]

        def saved(slot: SavedSlot | None) -> SavedCursor | None:
            if slot is None:
                return None
            y = max(0, min(slot.y, rows - 1))  # above the top: DECRC restores to the top
            return SavedCursor(min(slot.x, cols), y, slot.attrs, slot.charsets)

        def stops(tabstops: set[int]) -> frozenset[int] | None:
            visible = {x for x in tabstops if x < cols}  # a snapshot sets no others
            return None if visible == default_tabstops(cols) else frozenset(visible)

        def region(margins: Margins | None) -> tuple[int, int] | None:
            return None if margins is None else (int(margins.top), int(margins.bottom))

        modes = self.modes
        main = s.other_layout if s.alt_active and s.other_layout else None
        state = ScreenState(
            cols=cols,
            rows=rows,
            main=lines(main_buffer),
            alt=lines(s.buffer) if s.alt_active else None,
            scrollback=self._screen.scrollback.drawn_all(self._screen.columns)
            if include_scrollback
            else [],
            cursor_x=s.cursor.x,
            cursor_y=s.cursor.y,
            pen=s.cursor.attrs,
            cursor_visible=modes.cursor_visible,
            title=s.title,
            saved_main=saved(s.saved[0]),
            saved_alt=saved(s.saved[1]),
            margins=region(s.margins),
            origin_mode=DECOM in s.mode,
            auto_wrap=modes.auto_wrap,
            insert_mode=IRM in s.mode,
            newline_mode=LNM in s.mode,
            reverse_video=s.reverse_video,
            input_modes=s.input_modes,
            cursor_style=s.cursor_style,
            charsets=s.charsets,
            tabstops=stops(s.tabstops),
            main_margins=region(main.margins) if main else None,
            main_y=s.main_y if s.alt_active else 0,
            main_tabstops=stops(main.tabstops) if main else None,
            last_graphic=s.last_graphic,
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


def _text(line: ScreenLine, cols: int) -> str:
    """A line as text; a wide character cut by the right edge shows as a blank."""
    chars = [line[x].data for x in range(cols)]
    if chars[-1] and char_width(chars[-1][0]) == 2:
        chars[-1] = " "
    return "".join(chars)
