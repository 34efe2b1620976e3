"""Reflow: what a width change does to the main screen's wrapped lines, as xterm.js
(6.0, the page's terminal) does it, so that a client attaching after a resize sees
the rows the clients that watched it see.

A row the program's text wrapped onto continues the row above it (`rows.WrappedLine`).
Narrower, every line longer than the new width is cut into rows of that width, the
new rows inserted below it (pushing rows into the scrollback, or, at the top of a
screen that is not full yet, taking the blank rows below the cursor); wider, each
wrapped line is pulled back up into fewer rows, and the rows it no longer needs are
removed (pulling rows back from the scrollback). A wide character never splits:
it moves whole to the next row, leaving the last cell empty. The line the cursor is
on is left alone (xterm.js's ``reflowCursorLine`` is off by default): the program
redraws it. The alternate screen is never reflowed.

The rules, corner cases included (where a wide character ended a row, how many rows
the list may hold while lines are inserted, where the cursor and the saved cursor
go), are those xterm.js's ``Buffer._reflowLarger``/``_reflowSmaller`` follow,
written here for this terminal's sparse rows: the point is to end with the same
rows, cell for cell, which tests/terminal/xterm/test_fidelity.py checks against
xterm.js itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ptyvisor.terminal import grid
from ptyvisor.terminal.rows import (
    PlainRow,
    ScreenLine,
    ScrollbackLine,
    WrappedLine,
    is_wrapped,
)
from ptyvisor.terminal.snapshot import NO_CONTENT
from ptyvisor.terminal.widths import char_width

Cells = Callable[[ScrollbackLine], ScreenLine]
"""A row's cells (`rows.Pens.cells_of`): reflow only reads a row it changes that way."""


@dataclass
class Lines:
    """The main screen as xterm.js holds it: scrollback and screen rows in one list,
    ``base`` of them in the scrollback, the cursor on row ``y`` of the screen."""

    rows: list[ScrollbackLine]
    base: int
    y: int
    saved_y: int
    """The saved cursor's row (DECSC) counted from the top of the list, as xterm.js
    keeps it, which reflow moves as xterm.js does."""
    limit: int
    """How many rows the list may hold: the scrollback's limit plus the screen's rows."""


def trimmed(row: ScrollbackLine) -> int:
    """Cells up to the last one with content (xterm.js ``getTrimmedLength``): not an
    empty cell, nor one erased with a background colour or left by a wide character
    (`snapshot.NO_CONTENT`)."""
    if isinstance(row, PlainRow):
        return row.width
    for x in sorted(row, reverse=True):
        if not isinstance(row[x], NO_CONTENT):
            return x + 1
    return 0


def _content(row: ScreenLine, x: int) -> bool:
    cell = row.get(x)
    return cell is not None and not isinstance(cell, NO_CONTENT)


def _width(row: ScreenLine, x: int) -> int:
    """A cell's width as xterm.js stores it: 0 for a wide character's right half, 2 for
    its left, 1 for anything else (an empty cell too)."""
    cell = row.get(x)
    if cell is None:
        return 1
    if cell.data == "":
        return 0
    return 2 if char_width(cell.data[0]) == 2 else 1


def _wrapped_length(rows: Sequence[ScreenLine], i: int, cols: int) -> int:
    """How many cells of row ``i`` of a wrapped line belong to the line: its trimmed
    length for the last row, else all of them but an empty last cell left by a wide
    character that wrapped onto the next row."""
    if i == len(rows) - 1:
        return trimmed(rows[i])
    ends_empty = not _content(rows[i], cols - 1) and _width(rows[i], cols - 1) == 1
    if ends_empty and _width(rows[i + 1], 0) == 2:
        return cols - 1
    return cols


def _copy(dest: ScreenLine, src: ScreenLine, src_x: int, dest_x: int, count: int) -> None:
    """``count`` cells from ``src`` at ``src_x`` to ``dest`` at ``dest_x``, empty
    cells included; ordered so that an overlapping copy within one row is right."""
    order = range(count) if dest is not src or dest_x <= src_x else range(count - 1, -1, -1)
    for k in order:
        cell = src.get(src_x + k)
        if cell is None:
            dest.pop(dest_x + k, None)
        else:
            dest[dest_x + k] = cell


def _clear(row: ScreenLine, start: int, end: int) -> None:
    for x in [x for x in row if start <= x < end]:
        del row[x]


def _own(lines: Lines, start: int, count: int, cells: Cells) -> list[ScreenLine]:
    """Rows ``start``..``start + count`` as cells this reflow may change: a scrollback
    row's drawing is keyed by its identity, so a changed one must be a new object."""
    owned: list[ScreenLine] = []
    for k in range(start, start + count):
        row = cells(lines.rows[k])
        copy = WrappedLine(row) if is_wrapped(lines.rows[k]) else ScreenLine(row)
        lines.rows[k] = copy
        owned.append(copy)
    return owned


def reflow(lines: Lines, old_cols: int, new_cols: int, new_rows: int, cells: Cells) -> None:
    """Reflow ``lines`` from ``old_cols`` to ``new_cols`` (``new_rows`` on screen)."""
    if new_cols > old_cols:
        _larger(lines, old_cols, new_cols, new_rows, cells)
    elif new_cols < old_cols:
        _smaller(lines, old_cols, new_cols, new_rows, cells)


def _larger(lines: Lines, old_cols: int, new_cols: int, new_rows: int, cells: Cells) -> None:
    rows = lines.rows
    cursor = lines.base + lines.y
    removed: list[tuple[int, int]] = []
    y = 0
    while y < len(rows) - 1:
        end = y + 1
        while end < len(rows) and is_wrapped(rows[end]):
            end += 1
        if end == y + 1 or y <= cursor < end:
            y = end
            continue
        group = _own(lines, y, end - y, cells)
        dest_i, dest_x = 0, _wrapped_length(group, 0, old_cols)
        src_i, src_x = 1, 0
        while src_i < len(group):
            src_len = _wrapped_length(group, src_i, old_cols)
            count = min(src_len - src_x, new_cols - dest_x)
            _copy(group[dest_i], group[src_i], src_x, dest_x, count)
            dest_x += count
            if dest_x == new_cols:
                dest_i, dest_x = dest_i + 1, 0
            src_x += count
            if src_x == src_len:
                src_i, src_x = src_i + 1, 0
            if dest_x == 0 and dest_i != 0 and _width(group[dest_i - 1], new_cols - 1) == 2:
                # A wide character does not end a row: it moves down whole.
                _copy(group[dest_i], group[dest_i - 1], new_cols - 1, 0, 1)
                dest_x = 1
                group[dest_i - 1].pop(new_cols - 1, None)
        _clear(group[dest_i], dest_x, new_cols)
        unused = 0
        for i in range(len(group) - 1, 0, -1):
            if i > dest_i or trimmed(group[i]) == 0:
                unused += 1
            else:
                break
        if unused:
            removed.append((end - unused, unused))
        y = end
    if not removed:
        return
    gone = {k for start, count in removed for k in range(start, start + count)}
    lines.rows = [row for k, row in enumerate(rows) if k not in gone]
    for _ in range(len(gone)):
        if lines.base == 0:
            lines.y = max(0, lines.y - 1)
            if len(lines.rows) < new_rows:
                lines.rows.append(ScreenLine())
        else:
            lines.base -= 1
    lines.saved_y = max(lines.saved_y - len(gone), 0)


def _new_lengths(group: Sequence[ScreenLine], old_cols: int, new_cols: int) -> list[int]:
    """The lengths of the rows a wrapped line takes at ``new_cols``: full rows, one a
    cell short where a wide character would straddle the edge, then the rest."""
    needed = sum(_wrapped_length(group, i, old_cols) for i in range(len(group)))
    lengths: list[int] = []
    src_x = src_i = available = 0
    while available < needed:
        if needed - available < new_cols:
            lengths.append(needed - available)
            break
        src_x += new_cols
        old_len = _wrapped_length(group, src_i, old_cols)
        if src_x > old_len:
            src_x -= old_len
            src_i += 1
        wide_end = new_cols > 1 and _width(group[src_i], src_x - 1) == 2
        if wide_end:
            src_x -= 1
        length = new_cols - 1 if wide_end else new_cols
        lengths.append(length)
        available += length
    return lengths


def _smaller(lines: Lines, old_cols: int, new_cols: int, new_rows: int, cells: Cells) -> None:
    inserts: list[tuple[int, list[ScrollbackLine]]] = []
    inserted = 0
    y = len(lines.rows) - 1
    while y >= 0:
        rows = lines.rows
        if y >= len(rows) or (not is_wrapped(rows[y]) and trimmed(rows[y]) <= new_cols):
            y -= 1
            continue
        last = y
        while is_wrapped(rows[y]) and y > 0:
            y -= 1
        size = last - y + 1
        cursor = lines.base + lines.y
        if y <= cursor < y + size:
            y -= 1
            continue
        group = _own(lines, y, size, cells)
        last_length = trimmed(group[-1])
        lengths = _new_lengths(group, old_cols, new_cols)
        adding = len(lengths) - size
        if lines.base == 0 and lines.y != len(rows) - 1:
            trimmed_lines = max(0, lines.y - lines.limit + adding)
        else:
            trimmed_lines = max(0, len(rows) - lines.limit + adding)
        fresh: list[ScreenLine] = [WrappedLine() for _ in range(adding)]
        if fresh:
            inserts.append((y + size + inserted, list(fresh)))
            inserted += len(fresh)
        group += fresh
        dest_i = len(lengths) - 1
        dest_x = lengths[dest_i]
        if dest_x == 0:
            dest_i -= 1
            dest_x = lengths[dest_i]
        src_i, src_x = len(group) - adding - 1, last_length
        while 0 <= src_i < len(group) and 0 <= dest_i < len(group):
            count = min(src_x, dest_x)
            _copy(group[dest_i], group[src_i], src_x - count, dest_x - count, count)
            dest_x -= count
            if dest_x == 0:
                dest_i -= 1
                dest_x = lengths[dest_i] if dest_i >= 0 else 0
            src_x -= count
            if src_x == 0:
                src_i -= 1
                src_x = _wrapped_length(group, max(src_i, 0), old_cols)
        for i, length in enumerate(lengths[: len(group)]):
            if length < new_cols:
                group[i].pop(length, None)
        for _ in range(adding - trimmed_lines):
            if lines.base == 0:
                if lines.y < new_rows - 1:
                    lines.y += 1
                    rows.pop()
                else:
                    lines.base += 1
            elif lines.base < min(lines.limit, len(rows) + inserted) - new_rows:
                lines.base += 1
        lines.saved_y = min(lines.saved_y + adding, lines.base + new_rows - 1)
        y -= 1
    if inserts:
        _insert(lines, inserts, inserted)


def _insert(lines: Lines, inserts: list[tuple[int, list[ScrollbackLine]]], count: int) -> None:
    """Put the rows each reflowed line gained below it, in one pass; what passes the
    list's limit leaves its top."""
    original = lines.rows
    size = min(lines.limit, len(original) + count)
    rows: list[ScrollbackLine] = [ScreenLine() for _ in range(size)]
    source = len(original) - 1
    pending = iter(inserts)
    current = next(pending, None)
    placed = 0
    i = min(lines.limit - 1, len(original) + count - 1)
    while i >= 0:
        if current is not None and current[0] > source + placed:
            for row in reversed(current[1]):
                if i >= 0:
                    rows[i] = row
                i -= 1
            i += 1
            placed += len(current[1])
            current = next(pending, None)
        else:
            rows[i] = original[source]
            source -= 1
        i -= 1
    lines.rows = rows


def cut_rows(rows: list[ScrollbackLine], cols: int, cells: Cells) -> None:
    """Every row of ``rows`` that reaches past ``cols`` replaced by a copy cut there
    (`grid.cut`), as xterm.js cuts every line of a narrower buffer."""
    for k, row in enumerate(rows):
        long = row.width > cols if isinstance(row, PlainRow) else bool(row) and max(row) >= cols
        if long:
            cut = WrappedLine(cells(row)) if is_wrapped(row) else ScreenLine(cells(row))
            grid.cut(cut, cols)
            rows[k] = cut
