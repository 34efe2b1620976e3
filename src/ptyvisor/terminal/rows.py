"""What the screen and its scrollback are made of: sparse rows of immutable cells,
rows kept as the runs they were drawn in, and the pens that make cells.

Rows are sparse `ScreenLine` dicts of `Cell` tuples, so a row that is mostly blank
costs little. A row that goes straight into the scrollback without ever being on
screen is kept as its runs (`PlainRow`): a twentieth of the memory of its cells.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from ptyvisor.terminal.snapshot import BLANK, Cell


class ScreenLine(dict[int, Cell]):
    """A sparse screen line: missing columns read as BLANK without being stored."""

    __slots__ = ()

    def __missing__(self, key: int) -> Cell:
        return BLANK


class WrappedLine(ScreenLine):
    """A row that continues the one above it: the program's text wrapped onto it
    (xterm.js's ``isWrapped``). A resize reflows such rows with the row above, as
    the page's terminal does. The flag is the row's class, so it costs no memory and
    moves with the row (into the scrollback too); `wrap` and `unwrap` set it."""

    __slots__ = ()
    continues = True
    """What a snapshot reads (`snapshot.continues`)."""


def wrap(line: ScreenLine) -> None:
    """Mark ``line`` as continuing the row above it."""
    line.__class__ = WrappedLine


def unwrap(line: ScreenLine | None) -> None:
    """``line`` no longer continues the row above it (erased, or a line feed came)."""
    if isinstance(line, WrappedLine):
        _become(line, ScreenLine)


def _become(line: ScreenLine, kind: type[ScreenLine]) -> None:
    line.__class__ = kind


EMPTY_LINE = ScreenLine()

Buffer = defaultdict[int, ScreenLine]
"""A screen's rows by number; rows never written are not stored."""


def new_buffer() -> Buffer:
    return defaultdict(ScreenLine)


Runs = list[tuple[Cell, str]]
"""A row of one-cell ASCII text drawn from column 0: (pen, text) in order; a pen is a
cell whose style and link are the run's (its data is not used)."""


class PlainRow:
    """A scrollback line built by the plain-lines fast path (`terminal.plain_lines`)
    that was never on the screen, kept as the runs it was drawn in: none of the time
    to make its cells, and drawn for snapshots straight from the runs. `Pens.row_of`
    makes its cells when something needs them."""

    __slots__ = ("runs",)

    def __init__(self, runs: Runs) -> None:
        self.runs = runs

    @property
    def width(self) -> int:
        return sum(len(text) for _, text in self.runs)

    def text(self, cols: int) -> str:
        return "".join(text for _, text in self.runs).ljust(cols)[:cols]


class WrappedRuns(list[tuple[Cell, str]]):
    """`Runs` of a row that continues the row above it (see `WrappedLine`)."""

    __slots__ = ()


class WrappedPlainRow(PlainRow):
    """A `PlainRow` that continues the row above it (see `WrappedLine`)."""

    __slots__ = ()


def plain_row(runs: Runs) -> PlainRow:
    return WrappedPlainRow(runs) if isinstance(runs, WrappedRuns) else PlainRow(runs)


ScrollbackLine = ScreenLine | PlainRow


def is_wrapped(row: ScrollbackLine | None) -> bool:
    return isinstance(row, (WrappedLine, WrappedPlainRow))


class CellsOfPen(dict[str, Cell]):
    """Cells of one pen by character, so drawing reuses immutable cells."""

    __slots__ = ("style",)

    def __init__(self, pen: Cell) -> None:
        super().__init__()
        self.style = tuple(pen[1:])

    def __missing__(self, data: str) -> Cell:
        cell = _new_cell(Cell, (data, *self.style))
        self[data] = cell
        return cell


_new_cell: Callable[[type[Cell], tuple[object, ...]], Cell] = tuple.__new__
"""Builds a Cell from a full tuple without NamedTuple's slower keyword path."""

PENS_KEPT = 1024
"""Pens whose cells are cached; TUIs use a few dozen, so the cache starts over past it."""


class Pens:
    """Cells by pen and character, shared by the screen and its scrollback."""

    __slots__ = ("_by_pen",)

    def __init__(self) -> None:
        self._by_pen: dict[Cell, CellsOfPen] = {}

    def cells(self, pen: Cell) -> CellsOfPen:
        cells = self._by_pen.get(pen)
        if cells is None:
            if len(self._by_pen) > PENS_KEPT:
                self._by_pen.clear()
            cells = self._by_pen[pen] = CellsOfPen(pen)
        return cells

    def row_of(self, runs: Runs) -> ScreenLine:
        """The cells of a row kept as runs."""
        row = WrappedLine() if isinstance(runs, WrappedRuns) else ScreenLine()
        x = 0
        for pen, text in runs:
            row.update(
                zip(range(x, x + len(text)), map(self.cells(pen).__getitem__, text), strict=True)
            )
            x += len(text)
        return row

    def cells_of(self, line: ScrollbackLine) -> ScreenLine:
        """A scrollback line's cells."""
        if isinstance(line, ScreenLine):
            return line
        row = self.row_of(line.runs)
        if isinstance(line, WrappedPlainRow):
            wrap(row)
        return row
