"""Reflow on a width change, as xterm.js does it (terminal/reflow.py): wrapped lines
re-wrap, long lines split, the cursor's line stays, wide characters never split. The
differential test against xterm.js itself is tests/terminal/xterm/test_fidelity.py;
these pin the behaviour on the whole terminal, by hand."""

from __future__ import annotations

from ptyvisor.terminal.rows import is_wrapped

from .support import CSI, make, text


def wrapped_rows(term: object) -> list[bool]:
    screen = term._screen  # type: ignore[attr-defined]
    rows = [*screen.scrollback, *(screen.buffer.get(y) for y in range(screen.lines))]
    return [is_wrapped(row) for row in rows]


def test_a_line_that_wrapped_unwraps_when_wider_and_wraps_again_when_narrower() -> None:
    term = make("abcdefghij\r\n$ ", cols=4, rows=5)  # 10 cells: 3 rows at 4 columns
    assert text(term)[:3] == ["abcd", "efgh", "ij"]
    assert wrapped_rows(term)[:4] == [False, True, True, False]
    term.resize(12, 5)
    assert text(term)[:2] == ["abcdefghij", "$"]
    assert term.cursor == (1, 2), "the cursor moved up with its line"
    term.resize(3, 5)
    assert text(term)[:5] == ["abc", "def", "ghi", "j", "$"]
    assert wrapped_rows(term)[:5] == [False, True, True, True, False]


def test_a_long_line_that_never_wrapped_splits_when_narrower() -> None:
    """A line the program wrote shorter than the screen, longer than the new width."""
    term = make("hello world\r\n", cols=20, rows=4)
    term.resize(5, 4)
    assert text(term)[:3] == ["hello", " worl", "d"]
    assert wrapped_rows(term)[:3] == [False, True, True]


def test_the_cursors_line_is_left_for_the_program_to_redraw() -> None:
    term = make("abcdefghij", cols=4, rows=4)  # the cursor sits on the wrapped line
    term.resize(12, 4)
    assert text(term)[:3] == ["abcd", "efgh", "ij"]


def test_rows_a_narrower_screen_needs_push_the_top_into_the_scrollback() -> None:
    term = make("one\r\nabcdefgh\r\nlast\r\n$ ", cols=8, rows=4)
    term.resize(4, 4)
    assert [row.rstrip() for row in term.scrollback] == ["one"]
    assert text(term) == ["abcd", "efgh", "last", "$"]


def test_a_wide_character_moves_whole_to_the_next_row() -> None:
    term = make("ab界cd\r\n$ ", cols=8, rows=4)
    term.resize(3, 4)
    assert text(term)[:3] == ["ab", "界c", "d"]


def test_the_alternate_screen_is_not_reflowed() -> None:
    term = make(f"{CSI}?1049habcdefghij", cols=4, rows=4)
    term.resize(12, 4)
    assert text(term)[:3] == ["abcd", "efgh", "ij"]


def test_erasing_a_row_or_a_line_feed_onto_it_ends_its_wrap() -> None:
    """As xterm.js: EL 2 and LF clear the flag, a line feed at the bottom brings a new
    row, and a reflow then keeps them apart."""
    term = make(f"abcdefgh{CSI}2K", cols=4, rows=4)
    assert wrapped_rows(term)[:2] == [False, False]
    term = make(f"abcdefgh{CSI}1;1H\n", cols=4, rows=4)
    assert wrapped_rows(term)[:2] == [False, False]


def test_a_cold_attach_gets_the_wrapped_rows_and_reflows_as_the_live_view() -> None:
    """The snapshot draws a row that continues another by wrapping onto it, in the
    scrollback, across into the screen and on it, so that a client attached cold
    re-wraps them as the live view does (issue 25: resizes after the attach)."""
    lines = "".join(f"{n:02d}" + "abcdefghij" * (n % 3) + "\r\n" for n in range(12))
    live = make(lines + "$ ", cols=9, rows=5, scrollback=100)
    cold = make(live.snapshot().ansi, cols=9, rows=5, scrollback=100)
    assert wrapped_rows(cold) == wrapped_rows(live)
    assert any(wrapped_rows(live))
    for cols, rows in ((23, 5), (4, 7), (9, 5)):
        live.resize(cols, rows)
        cold.resize(cols, rows)
        assert text(cold) == text(live), (cols, rows)
        assert [r.rstrip() for r in cold.scrollback] == [r.rstrip() for r in live.scrollback]
