"""Whole lines of plain text and SGR (a log's, a flood's) are drawn a line at a time
and scrolled in one go (`ptyvisor.terminal.plain_lines`); the terminal must end exactly as
parsing them byte by byte leaves it, from any state: margins, the alternate screen,
insert mode, DEC graphics, a cursor anywhere, lines wider than the screen."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.terminal import plain_lines as fast_path
from ptyvisor.terminal.rows import PlainRow, is_wrapped
from ptyvisor.terminal.screen import Screen
from ptyvisor.terminal.snapshot import drawn_line

from .support import fuzz_token
from .test_fast_forward import assert_same, words_and_colours

CSI = "\x1b["
WORDS = ["error", "a", "x" * 12, " ", "", "~!@#$%^&*()_+{}|:<>?", "0123456789"]
ODD = ["中文", "é\u0301", "\t", "q\bp", "\x1b[38:5:1m", "\x1b[?1m", "\x07"]
"""What may not be in a plain line: each ends the batch where it stands."""
SGRS = ["0", "", "1", "31", "1;32", "38;5;208", "48;2;1;2;3", "7", "22;39", "44"]
STATES = [
    f"{CSI}2;4r",  # a scrolling region
    f"{CSI}r",
    f"{CSI}?1049h",  # the alternate screen: its lines are not kept
    f"{CSI}?1049l",
    f"{CSI}4h",  # insert mode
    f"{CSI}4l",
    "\x1b(0",  # DEC graphics: letters draw as lines
    "\x1b(B",
    f"{CSI}?7l",  # no autowrap
    f"{CSI}?7h",
    f"{CSI}20h",  # LF is CR LF
    f"{CSI}3;5H",
    f"{CSI}99;1H",
    f"{CSI}44m{CSI}2K",  # a blank row that is not empty: background colour
]


def plain_lines(r: random.Random, cols: int, count: int, *, odd: bool = True) -> str:
    lines = []
    for _ in range(count):
        parts = [words_and_colours(r, WORDS, SGRS, 6)]
        if r.random() < 0.1:
            parts.append("w" * r.randint(cols - 1, 2 * cols + 1))  # fills or wraps
        if odd and r.random() < 0.05:
            parts.append(r.choice(ODD))
        if odd and r.random() < 0.05:
            parts.append(r.choice(STATES))
        lines.append("".join(parts) + ("\n" if r.random() < 0.03 else "\r\n"))
    return "".join(lines)


def byte_by_byte(data: bytes, cols: int, rows: int, scrollback: int) -> HeadlessTerminal:
    term = HeadlessTerminal(cols, rows, scrollback=scrollback)
    for byte in data:  # a lone CR never starts a batch
        term.feed(bytes([byte]))
    return term


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many lines each batched scroll took (the real method, counted)."""
    taken: list[int] = []
    scroll_in = fast_path._scroll_in

    def counted(screen: Screen, fresh: Any) -> None:
        taken.append(len(fresh))
        scroll_in(screen, fresh)

    monkeypatch.setattr(fast_path, "_scroll_in", counted)
    return taken


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    cols=st.integers(1, 30),
    rows=st.integers(1, 8),
    scrollback=st.sampled_from([0, 1, 5, 100]),
)
def test_plain_lines_give_the_terminal_parsing_each_byte_gives(
    seed: int, cols: int, rows: int, scrollback: int
) -> None:
    r = random.Random(seed)
    before = "".join(fuzz_token(r) for _ in range(r.randint(0, 20)))
    before += "".join(r.sample(STATES, r.randint(0, 4)))
    after = "".join(fuzz_token(r) for _ in range(r.randint(0, 10)))
    data = (before + plain_lines(r, cols, r.randint(1, 60)) + after).encode()
    whole = HeadlessTerminal(cols, rows, scrollback=scrollback)
    whole.feed(data)
    slow = byte_by_byte(data, cols, rows, scrollback)
    assert_same(whole, slow)
    # A resize pulls lines kept as runs back onto the screen, or draws them narrower.
    size = (r.randint(1, 40), r.randint(1, 12))
    for term in (whole, slow):
        term.resize(*size)
    assert_same(whole, slow)


def uncoloured_line_feeds(log: str) -> str:
    """``log`` with each line's background reset before its line feed, as most logs do:
    a line feed with a background colour brings in a row of that colour (BCE, as
    xterm.js draws it), which is not a blank row a batch can draw on."""
    return log.replace("\r\n", f"{CSI}49m\r\n")


def test_a_log_is_drawn_in_batches_and_exactly(batches: list[int]) -> None:
    r = random.Random(3)
    log = uncoloured_line_feeds(plain_lines(r, 40, 400, odd=False))
    data = ("\x1b[2J\x1b[H" + log).encode()
    whole = HeadlessTerminal(40, 10, scrollback=1000)
    whole.feed(data)
    # Every line that fits the row is batched, once the cursor reached the bottom.
    fitting = [line for line in log.split("\r\n") if len(re.sub(r"\x1b\[[0-9;]*m", "", line)) <= 40]
    assert sum(batches) >= len(fitting) - 10, f"the log's lines were not batched: {batches}"
    taken = len(batches)
    assert_same(whole, byte_by_byte(data, 40, 10, 1000))
    assert len(batches) == taken, "byte by byte, a line was batched"


def test_a_line_over_a_written_bottom_row_keeps_what_it_does_not_cover() -> None:
    """The line feed before a line moved the cursor onto the bottom row without
    scrolling: that row's text stays right of what the line draws."""
    full = "".join(f"{CSI}{y};1H{'#' * 20}" for y in range(1, 6))
    data = (full + f"{CSI}4;1Hfirst\r\nshort\r\nnext\r\n").encode()
    whole = HeadlessTerminal(20, 5, scrollback=10)
    whole.feed(data)
    assert whole.display[2:] == ["short" + "#" * 15, "next" + " " * 16, " " * 20]
    assert_same(whole, byte_by_byte(data, 20, 5, 10))


@pytest.mark.parametrize("state", STATES)
def test_plain_lines_after_each_state_are_exact(state: str) -> None:
    r = random.Random(len(state))
    for cols, rows in [(1, 1), (7, 3), (30, 6)]:
        lines = plain_lines(r, cols, 30, odd=False)
        data = (f"{CSI}99;1Hbottom{state}\r\n{lines}{state}{lines}").encode()
        whole = HeadlessTerminal(cols, rows, scrollback=50)
        whole.feed(data)
        assert_same(whole, byte_by_byte(data, cols, rows, 50))


def test_rows_that_scroll_straight_in_keep_runs_that_draw_as_their_cells_do() -> None:
    """Rows that go straight into the scrollback are kept as the runs they were drawn
    in (no cells); a snapshot draws them from those, and that is what drawing their
    cells gives, also once the screen is narrower than they are."""
    r = random.Random(11)
    log = uncoloured_line_feeds(plain_lines(r, 30, 5000, odd=False)).encode()
    term = HeadlessTerminal(30, 6, scrollback=100)
    screen = term._screen
    for offset in range(0, len(log), 3000):
        term.feed(log[offset : offset + 3000])
    kept = [line for line in screen.scrollback if isinstance(line, PlainRow)]
    # Not all: rows on the screen when a batch began, and lines after a bare LF.
    assert len(kept) >= 50, f"only {len(kept)} of 100 rows were kept as runs"
    for cols in (30, 12):
        term.resize(cols, 6)
        for line in kept[:-20]:  # the last ones may be back on the screen
            cells = screen.scrollback.cells_of(line)
            wrapped = is_wrapped(line)
            assert screen.scrollback.drawing(line, cols)[2] == drawn_line(cells, cols, wrapped)
            assert line.text(cols) == "".join(cell.data for cell in _cells(screen, line, cols))


def _cells(screen: Screen, line: PlainRow, cols: int) -> list[Any]:
    cells = screen.scrollback.cells_of(line)
    return [cells[x] for x in range(cols)]
