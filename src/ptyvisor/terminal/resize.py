"""What a size change does to a screen's rows, as xterm.js does it, so that a client
attaching after a resize sees what the clients that watched it see.

Fewer rows: rows below the cursor go first (blank or not), then the top rows go into
the scrollback. More rows: with the cursor on the bottom row, rows come back from the
scrollback onto the top; else (or when it is empty) blank rows are added below. The
alternate screen has no scrollback: its rows are dropped and none come back.
Fewer columns cut every row at the new edge (`grid.cut`), after the main screen's
wrapped lines are re-wrapped at the new width (`terminal.reflow`).
"""

from __future__ import annotations

from ptyvisor.terminal.rows import Buffer
from ptyvisor.terminal.scrollback import Scrollback


def rows(buffer: Buffer, history: Scrollback | None, old: int, new: int, anchor: int) -> int:
    """Give ``buffer`` ``new`` rows instead of ``old``, keeping row ``anchor`` (the
    cursor's) on screen; ``history`` is the scrollback it feeds, if any. Returns how
    far its content moved down (negative: up)."""
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
        if history is not None:
            history.extend(kept[:from_top])
        for y, line in enumerate(kept[from_top:]):
            if line is not None:
                buffer[y] = line
        return -from_top
    if history is None or not history or anchor != old - 1:
        return 0
    pull = min(new - old, len(history))
    moved = [buffer.pop(y, None) for y in range(old)]
    for y, line in enumerate(moved):
        if line is not None:
            buffer[y + pull] = line
    for y in range(pull - 1, -1, -1):
        buffer[y] = history.pull()
    return pull
