"""The fast path for floods: whole lines of printable ASCII and SGR, each followed by
CR LF (a log, a build, `cat` of a big file), drawn in one call per batch.

`draw` ends exactly as drawing, SGR, CR and LF would one by one (tests/terminal/test_plain_lines.py
checks that against the slow path, split at every byte), but a line that starts on a
blank bottom row of a full-screen region is built whole as runs, and the rows it
pushes up move in one go at the end, not one dict renumbering per line feed. A row
that goes straight into the scrollback never gets cells (`rows.PlainRow`).
"""

from __future__ import annotations

import re
from collections import defaultdict

from ptyvisor.terminal.rows import Runs, ScreenLine, WrappedRuns
from ptyvisor.terminal.screen import DECAWM, Screen

_SGR_SPLIT = re.compile(r"\x1b\[([0-9;]*)m").split


def draw(screen: Screen, lines: list[str]) -> None:
    """Draw ``lines`` (printable ASCII and SGR only), each followed by CR LF."""
    fresh: list[Runs] = []
    cols = screen.columns
    batched = False
    for text in lines:
        if not batched:
            batched = _can_batch(screen)
        plain = "\x1b" not in text
        if batched and plain and len(text) <= cols:  # most lines: one run, one row
            if text:
                fresh.append([(screen.cursor.attrs, text)])
                screen.last_graphic = text[-1]
            else:
                fresh.append([])
            continue
        parts = [text] if plain else _SGR_SPLIT(text)
        if batched and (DECAWM in screen.mode or sum(map(len, parts[::2])) <= cols):
            before = screen.cursor.attrs, screen.last_graphic
            made = _rows(screen, parts)
            if made is not None:
                fresh += made
                if screen.cursor.attrs.bg != "default":  # its line feed brings a coloured row
                    _scroll_in(screen, fresh)
                    fresh = []
                    batched = False
                continue
            screen.cursor.attrs, screen.last_graphic = before
        if fresh:
            _scroll_in(screen, fresh)
            fresh = []
        batched = False
        for i, part in enumerate(parts):
            if i % 2:
                screen.apply_sgr(part)
            elif part:
                screen.draw(part)
        screen.carriage_return()
        screen.linefeed()
    if fresh:
        _scroll_in(screen, fresh)


def _can_batch(screen: Screen) -> bool:
    """Whether the next line starts at the left of a blank bottom row whose line feed
    scrolls the whole screen and brings in a blank row, and draws as plain one-cell
    characters (insert mode draws the same on a blank row)."""
    cursor = screen.cursor
    bottom = screen.lines - 1
    return (
        cursor.x == 0
        and cursor.y == bottom
        and screen.margins is None
        and not screen.buffer.get(bottom)
        and screen.table is None
        and screen.cursor.attrs.bg == "default"  # else each line feed brings a coloured row
    )


def _rows(screen: Screen, parts: list[str]) -> list[Runs] | None:
    """The rows drawing ``parts`` (text, SGR, text, ...) from column 0 of the blank
    bottom row makes (more than one when it wraps), as runs; None if it wraps with a
    background colour, which the row it wraps onto takes (`Screen.fill_blank`)."""
    cols = screen.columns
    runs: Runs = []
    made = [runs]
    x = 0
    for i, part in enumerate(parts):
        if i % 2:
            screen.apply_sgr(part)
            continue
        if not part:
            continue
        pen = screen.cursor.attrs
        if x + len(part) <= cols:
            runs.append((pen, part))
            x += len(part)
        else:
            start = 0
            while start < len(part):
                if x == cols:  # autowrap: the next row scrolls in, as LF would
                    if pen.bg != "default":
                        return None
                    runs, x = WrappedRuns(), 0
                    made.append(runs)
                piece = part[start : start + cols - x]
                runs.append((pen, piece))
                x += len(piece)
                start += len(piece)
        screen.last_graphic = part[-1]
    return made


def _scroll_in(screen: Screen, fresh: list[Runs]) -> None:
    """Each of ``fresh`` was drawn on the blank bottom row, then a line feed scrolled
    the screen up one row: what leaves the top goes to the scrollback (main screen
    only), and the bottom row is blank again. A fresh row that goes straight into
    the scrollback never had cells on the screen, so it gets none: most of a flood's."""
    lines = screen.lines
    out = len(fresh)
    straight = max(0, out - (lines - 1))
    old: list[ScreenLine | None] = [screen.buffer.get(y) for y in range(lines - 1)]
    if not screen.alt_active:
        screen.history_grows(out)
        screen.scrollback.extend(old[:out], fresh[:straight])
    row_of = screen.pens.row_of
    rows = old[out:] + [row_of(runs) for runs in fresh[straight:]]
    screen.buffer = defaultdict(
        ScreenLine, {y: row for y, row in enumerate(rows) if row is not None}
    )
    screen.fill_blank((lines - 1,))
