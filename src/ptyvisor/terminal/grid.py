"""Edits of a screen's rows that know nothing of cursors or margins: the screen says
where, these change the cells. Rows are sparse (`rows.ScreenLine`): a cell that is
blank with the default background is not stored, so erasing deletes, unless the
background colour erase (``blank``) paints a colour.

A wide character is a cell and a ``""`` cell right of it; an edit that would cut one
in half blanks the half that is left, as xterm does.
"""

from __future__ import annotations

from ptyvisor.terminal.rows import Buffer, ScreenLine
from ptyvisor.terminal.snapshot import BLANK, Cell
from ptyvisor.terminal.widths import char_width


def split_wide(line: ScreenLine, start: int, end: int, orphan: Cell) -> None:
    """Before overwriting [start, end): the half of a wide character cut in half left
    outside becomes ``orphan``. As xterm.js: the writer's pen when printing, the fill
    when erasing, inserting or deleting; not the wide character's own attributes."""
    cell = line.get(start)
    if cell is not None and cell.data == "" and start > 0:
        _set(line, start - 1, orphan)
    cell = line.get(end)
    if cell is not None and cell.data == "":
        _set(line, end, orphan)


def _set(line: ScreenLine, x: int, cell: Cell) -> None:
    if cell is BLANK:
        line.pop(x, None)  # rows are sparse
    else:
        line[x] = cell


def erase(line: ScreenLine, blank: Cell, start: int, end: int) -> None:
    """Blank [start, end)."""
    if start >= end:
        return
    split_wide(line, start, end, blank)
    if blank is BLANK:
        for x in [x for x in line if start <= x < end]:
            del line[x]
    else:
        line.update(dict.fromkeys(range(start, end), blank))


def insert_cells(line: ScreenLine, blank: Cell, x: int, count: int, cols: int) -> None:
    """``count`` blanks at ``x``, shifting the rest right; what passes ``cols`` is lost."""
    split_wide(line, x, x, blank)
    moved = {k + count: c for k, c in line.items() if x <= k < cols - count}
    for k in [k for k in line if k >= x]:
        del line[k]
    line.update(moved)
    if blank is not BLANK:
        line.update(dict.fromkeys(range(x, x + count), blank))
    cut(line, cols)


def cut(line: ScreenLine, columns: int) -> None:
    """Drop every cell at or right of ``columns``."""
    for x in [x for x in line if x >= columns]:
        del line[x]
    last = line.get(columns - 1)
    if last is not None and last.data and char_width(last.data[0]) == 2:
        line[columns - 1] = last._replace(data=" ")


def delete_cells(line: ScreenLine, blank: Cell, x: int, count: int, cols: int) -> None:
    """Remove ``count`` cells at ``x``, shifting the rest left; blanks come in at the end."""
    split_wide(line, x, x + count, blank)
    moved = {k - count: c for k, c in line.items() if k >= x + count}
    for k in [k for k in line if k >= x]:
        del line[k]
    line.update(moved)
    if blank is not BLANK:
        line.update(dict.fromkeys(range(cols - count, cols), blank))


def move_rows(buffer: Buffer, top: int, bottom: int, count: int) -> None:
    """Move rows ``top``..``bottom`` down by ``count`` (up when negative); rows that
    would come from outside that range are blank. Scrolling a partial region,
    inserting and deleting lines are all this."""
    rows = range(bottom, top - 1, -1) if count > 0 else range(top, bottom + 1)
    for y in rows:
        source = y - count
        line = buffer.pop(source, None) if top <= source <= bottom else None
        if line is None:
            buffer.pop(y, None)
        else:
            buffer[y] = line
