"""Size changes: rows below the cursor go first, then the top into the scrollback and
back, each buffer on its own; checked on the whole terminal and on `resize.rows`."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.terminal import resize
from ptyvisor.terminal.rows import Pens, ScreenLine, new_buffer
from ptyvisor.terminal.scrollback import Scrollback
from ptyvisor.terminal.snapshot import Cell

from .support import CSI, make, round_trip, text


def test_resize_pushes_to_and_pulls_from_scrollback() -> None:
    term = make("\r\n".join(f"line {i}" for i in range(5)), cols=10, rows=5)
    term.resize(10, 3)
    assert text(term) == ["line 2", "line 3", "line 4"]
    assert [r.rstrip() for r in term.scrollback] == ["line 0", "line 1"]
    assert term.cursor == (2, 6)
    term.resize(10, 5)
    assert text(term) == [f"line {i}" for i in range(5)]
    assert term.cursor == (4, 6)
    term.resize(4, 5)
    assert text(term)[0] == "line" and term.cursor == (4, 3)
    snap = term.snapshot()
    assert (snap.cols, snap.rows) == (4, 5)
    round_trip(term)


def test_resize_drops_rows_below_the_cursor_first() -> None:
    term = make(f"top{CSI}5;1Hbottom{CSI}2;1H", cols=10, rows=5)
    term.resize(10, 2)
    assert text(term) == ["top", ""]
    assert term.scrollback == []


def test_resize_in_alternate_screen_keeps_both_buffers() -> None:
    term = make(f"main{CSI}?1049h{CSI}5;1Halt", cols=10, rows=5)
    term.resize(8, 3)
    assert text(term)[-1] == "alt"
    term.feed(f"{CSI}?1049l".encode())
    assert text(term)[0] == "main"


@given(
    old=st.integers(1, 12),
    new=st.integers(1, 12),
    anchor=st.integers(0, 11),
    filled=st.sets(st.integers(0, 11)),
)
def test_rows_that_leave_at_the_top_come_back_in_order(
    old: int, new: int, anchor: int, filled: set[int]
) -> None:
    """Shrinking and growing back keeps every row from the top to the cursor's in
    place; the rows below the cursor are the ones that may be gone."""
    anchor = min(anchor, old - 1)
    buffer = new_buffer()
    for y in filled:
        if y < old:
            buffer[y] = ScreenLine({0: Cell(str(y))})
    before = {y: dict(line) for y, line in buffer.items()}
    history = Scrollback(100, Pens())
    shift = resize.rows(buffer, history, old, new, anchor)
    assert -old < shift <= 0 if new <= old else shift == 0
    assert max(buffer, default=-1) < new and anchor + shift < new
    back = resize.rows(buffer, history, new, old, anchor + shift)
    assert back == -shift
    kept = {y: dict(line) for y, line in buffer.items() if dict(line)}
    assert {y: c for y, c in before.items() if y <= anchor} == {
        y: c for y, c in kept.items() if y <= anchor
    }


def test_a_taller_screen_takes_rows_back_only_with_the_cursor_on_the_bottom_row() -> None:
    # As xterm.js: with the cursor higher up, blank rows are added below instead.
    lines = "\r\n".join(f"line {i}" for i in range(12))
    up = make(lines + f"{CSI}2;1H", cols=10, rows=5, scrollback=20)
    up.resize(10, 8)
    assert len(up.scrollback) == 7 and up.cursor == (1, 0)
    assert text(up) == ["line 7", "line 8", "line 9", "line 10", "line 11", "", "", ""]
    bottom = make(lines, cols=10, rows=5, scrollback=20)
    bottom.resize(10, 8)
    assert len(bottom.scrollback) == 4 and bottom.cursor == (7, 7)


def test_the_main_screen_keeps_its_own_cursor_row_through_a_resize_on_the_alternate() -> None:
    lines = "\r\n".join(f"line {i}" for i in range(12))
    term = make(lines + f"{CSI}2;1H{CSI}?47hx", cols=10, rows=5, scrollback=20)
    term.resize(10, 3)  # the main screen's cursor is on row 1: rows below it go
    term.feed(f"{CSI}?47l".encode())
    assert text(term) == ["line 7", "line 8", "line 9"]
    assert len(term.scrollback) == 7
