"""The main screen's scrollback: a bounded history of the rows that scrolled off
its top, and each row drawn once for snapshots.

A row in the scrollback never changes, unless a resize pulls it back on screen, so
snapshots keep each row's drawing (by identity and width) instead of drawing 1000
rows for every cold attach. The renderer draws new rows ahead while it is idle
(`draw_new`), and a snapshot draws only what that has not (`drawn_all`).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Sequence

from ptyvisor.terminal.rows import (
    Pens,
    PlainRow,
    Runs,
    ScreenLine,
    ScrollbackLine,
    is_wrapped,
    plain_row,
)
from ptyvisor.terminal.snapshot import Drawn, drawn_line, drawn_runs

Drawing = tuple[ScrollbackLine, int, Drawn]
"""(row, width it was drawn at, what a snapshot shows for it)."""

STALE_DRAWINGS = 256
"""Drawings of rows gone from the history kept at most before they are swept."""


class Scrollback:
    """Rows that left the main screen's top, oldest first, at most ``limit``."""

    def __init__(self, limit: int, pens: Pens) -> None:
        self._rows: deque[ScrollbackLine] = deque(maxlen=max(0, limit))
        self._pens = pens
        self.drawn: dict[int, Drawing] = {}
        """Rows as snapshots draw them, by ``id``; see the module's notes."""
        self.undrawn = 0
        """Rows that came in since the last drawing (at most)."""

    @property
    def limit(self) -> int:
        return self._rows.maxlen or 0

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[ScrollbackLine]:
        return iter(self._rows)

    def __getitem__(self, index: int) -> ScrollbackLine:
        return self._rows[index]

    def append(self, row: ScreenLine) -> None:
        """One row off the top of the screen (a line feed's: the hot path)."""
        self._rows.append(row)
        self.undrawn += 1

    def extend(self, rows: Sequence[ScreenLine | None], fresh: Sequence[Runs] = ()) -> None:
        """``rows`` off the top of the screen (None: a blank row), then ``fresh`` rows
        that never had cells on it, kept as their runs (those that stay in the
        history only)."""
        self._rows.extend(row if row is not None else ScreenLine() for row in rows)
        first = max(0, len(fresh) - self.limit)
        self._rows.extend(map(plain_row, itertools.islice(fresh, first, None)))
        self.undrawn += len(rows) + len(fresh)

    def pull(self) -> ScreenLine:
        """The newest row, taken back onto the screen (where it may change)."""
        row = self._rows.pop()
        self.drawn.pop(id(row), None)
        return self._pens.cells_of(row)

    def replace(self, rows: Iterable[ScrollbackLine]) -> None:
        """The history a reflow made (`terminal.reflow`), oldest first; every row is
        drawn again, at the new width."""
        self._rows = deque(rows, maxlen=self.limit)
        self.drawn = {}
        self.undrawn = len(self._rows)

    def clear(self) -> None:
        self._rows.clear()
        self.drawn.clear()
        self.undrawn = 0

    def cells_of(self, row: ScrollbackLine) -> ScreenLine:
        return self._pens.cells_of(row)

    def drawing(self, row: ScrollbackLine, cols: int) -> Drawing:
        """``row`` as a snapshot draws it at ``cols``: kept from before, drawn from its
        runs if it has them (and they fit the width), or from its cells."""
        hit = self.drawn.get(id(row))
        if hit is not None and hit[0] is row and hit[1] == cols:
            return hit
        wrapped = is_wrapped(row) and cols >= 2  # as `snapshot.continues`
        if isinstance(row, PlainRow):
            width = row.width
            if width <= cols:
                return row, cols, drawn_runs(row.runs, wrapped, width)
        return row, cols, drawn_line(self._pens.cells_of(row), cols, wrapped)

    def draw_new(self, cols: int) -> None:
        """Draw the rows that came in since last time, so the next snapshot finds
        them drawn."""
        if not self.undrawn:
            return
        if len(self.drawn) > len(self._rows) + STALE_DRAWINGS:
            self.drawn_all(cols)
            return
        for row in itertools.islice(reversed(self._rows), self.undrawn):
            self.drawn[id(row)] = self.drawing(row, cols)
        self.undrawn = 0

    def drawn_all(self, cols: int) -> list[Drawn]:
        """Every row as a snapshot draws it, oldest first; drawings of rows gone from
        the history are dropped."""
        drawn = {}
        texts = []
        for row in self._rows:
            hit = drawn[id(row)] = self.drawing(row, cols)
            texts.append(hit[2])
        self.drawn = drawn
        self.undrawn = 0
        return texts
