"""How many cells a character takes: the same answer the page's xterm.js gives.

The headless terminal's screen is drawn into the page (snapshots) beside the live
stream the page parses itself, so both must lay text out identically or a cold
attach shows misaligned lines. The page uses xterm.js's Unicode 11 width addon; this
module uses the table generated from that very addon (``width_table.py``), so the
two agree on every code point by construction and ``tests/web/test_widths.py``
checks it in Chromium.

Unicode 11 is what xterm.js ships; programs built on newer tables (Ink's
string-width, Rust's unicode-width) count a few things differently: emoji added
after Unicode 11 take one cell here and two there, and a ZWJ sequence such as a
family takes two cells per person here. Nothing ptyvisor does can fix that for
every client; agreeing with the page at least keeps the page consistent with itself.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from .width_table import STARTS, WIDTHS


@lru_cache(maxsize=8192)
def char_width(char: str) -> int:
    """Cells for one code point: 0 (joins the previous cell), 1 or 2; -1 for what
    never reaches a cell: C0/C1 controls, and U+FEFF, which xterm.js drops when it
    decodes its input."""
    code = ord(char)
    if code < 0x20 or 0x7F <= code < 0xA0 or code == 0xFEFF:
        return -1
    return WIDTHS[bisect_right(STARTS, code) - 1]


def _one_cell_class() -> str:
    """A regex character class of every code point `char_width` counts as one cell."""
    never = {(0x7F, 0x9F), (0xFEFF, 0xFEFF)}  # what char_width refuses beyond the table
    ranges: list[tuple[int, int]] = []
    for i, first in enumerate(STARTS):
        end = STARTS[i + 1] - 1 if i + 1 < len(STARTS) else 0x10FFFF
        if WIDTHS[i] != 1:
            continue
        start = first
        for lo, hi in sorted(never):
            if start <= hi and lo <= end:  # cut the refused span out of this range
                if start < lo:
                    ranges.append((start, lo - 1))
                start = hi + 1
        if start <= end:
            ranges.append((max(start, 0x20), end))
    return (
        "["
        + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges if lo <= hi)
        + "]"
    )


ONE_CELL_RUN = re.compile(_one_cell_class() + "+")
"""Runs of characters that each take exactly one cell: drawn like ASCII, in bulk."""


def text_width(text: str) -> int:
    """Cells a printable text takes on one line (what the CLI lines up in columns)."""
    if ONE_CELL_RUN.fullmatch(text):
        return len(text)
    return sum(max(char_width(char), 0) for char in text)


def cut_to_width(text: str, width: int, *, mark: str = "…") -> str:
    """``text`` cut to at most ``width`` cells, ending in ``mark`` where it was cut;
    never half a wide character."""
    if text_width(text) <= width:
        return text
    room = width - text_width(mark)
    if room < 0:
        return ""
    kept: list[str] = []
    used = 0
    for char in text:
        used += max(char_width(char), 0)
        if used > room:
            break
        kept.append(char)
    return "".join(kept) + mark
