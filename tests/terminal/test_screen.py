"""The screen's grid: the pyte faults fixed (zero-width characters, the alternate
screen), scrolling and its region, erasing, the cursor, tabs and character sets,
resizing and the scrollback it feeds; each checked against what xterm does."""

from __future__ import annotations

import pytest

from ptyvisor.terminal.screen import DECOM
from ptyvisor.terminal.snapshot import Cell

from .support import CSI, ESC, make, round_trip, state, text

# -- pyte fault 1: zero-width non-combining characters -------------------------


def test_zero_width_joiner_and_variation_selector_keep_the_rest_of_the_run() -> None:
    term = make("a⚠️ bc\r\n👩\u200d💻 ok\r\ne\u0301!")
    assert text(term)[:3] == ["a⚠️ bc", "👩\u200d💻 ok", "e\u0301!"]  # code points kept
    row0 = [c.data for c in term.line(0)[:5]]
    assert row0 == ["a", "⚠\ufe0f", " ", "b", "c"]
    row1 = [c.data for c in term.line(1)[:7]]
    assert row1 == ["👩\u200d", "", "💻", "", " ", "o", "k"]
    assert term.cursor == (2, 2)
    round_trip(term)


# -- pyte fault 2: the alternate screen ------------------------------------------


@pytest.mark.parametrize("mode", [47, 1047, 1049])
def test_alternate_screen_switches_buffers_and_restores_main(mode: int) -> None:
    term = make(f"{CSI}31mmain 1\r\nmain 2{CSI}0m{CSI}2;3H")
    before = state(term)["main"]
    term.feed(f"{CSI}?{mode}h".encode())
    assert term.modes.alternate_screen
    assert text(term) == [""] * 5  # a fresh, empty buffer
    term.feed(f"{CSI}4;1Halt text{CSI}?{mode}l".encode())
    assert not term.modes.alternate_screen
    assert state(term)["main"] == before
    assert text(term)[:2] == ["main 1", "main 2"]
    # 1049 saved the cursor on entry and restores it; 47/1047 leave it alone.
    assert term.cursor == ((1, 2) if mode == 1049 else (3, 8))


def test_alternate_screen_is_fresh_each_time_and_keeps_no_scrollback() -> None:
    term = make(f"{CSI}?1049hold\r\n\n\n\n\n\n{CSI}?1049l{CSI}?1049h", scrollback=100)
    assert text(term) == [""] * 5
    assert term.scrollback == []


def test_scroll_up_and_down() -> None:
    term = make("1\r\n2\r\n3\r\n4\r\n5" + f"{CSI}2S", scrollback=10)
    assert text(term) == ["3", "4", "5", "", ""]
    assert [r.rstrip() for r in term.scrollback] == ["1", "2"]
    term.feed(f"{CSI}T".encode())
    assert text(term) == ["", "3", "4", "5", ""]
    assert term.cursor == (4, 1)  # SU/SD do not move the cursor


def test_save_and_restore_cursor_with_csi_s_u() -> None:
    term = make(f"{CSI}2;5H{CSI}s{CSI}H{CSI}31m{CSI}u*")
    assert term.cursor == (1, 5)
    assert term.line(1)[4].data == "*"


def test_repeat_tabs_and_dec_graphics() -> None:
    term = make(f"-{CSI}4b\tx{CSI}Zy{ESC}(0lqk{ESC}(B\x0eq{ESC})0q\x0fq", cols=20)
    assert text(term)[0] == "-----   y┌─┐q─q"


def test_pending_wrap_follows_xterm() -> None:
    term = make("x" * 10 + "\nb", cols=10, rows=3)
    assert text(term) == ["x" * 10, " " * 9 + "b", ""]
    term = make("x" * 9 + "中z", cols=10, rows=3)  # a wide char that does not fit wraps
    assert text(term) == ["x" * 9, "中z", ""]
    term = make("abcd" + f"{CSI}1;2H中", cols=10, rows=3)  # overwrite half of nothing
    term.feed(f"{CSI}1;3Hz".encode())  # overwrite the right half of 中
    assert [c.data for c in term.line(0)[:4]] == ["a", " ", "z", "d"]


def test_erase_uses_background_only_and_ed3_clears_scrollback_only() -> None:
    term = make(f"keep\r\n{CSI}1;4;41mabc{CSI}2D{CSI}K", scrollback=10)
    assert term.line(1)[1] == Cell(" ", bg="red")
    assert term.line(1)[0].bold
    term.feed(b"\r\n\n\n\n")
    assert term.scrollback
    term.feed(f"{CSI}3J".encode())
    assert term.scrollback == []
    assert "a" in text(term)[0]


def test_cursor_moves_outside_the_scrolling_region_and_decrc_is_exact() -> None:
    term = make(f"{CSI}2;4r{CSI}5;1H{ESC}7{CSI}A{CSI}A{CSI}A", rows=5)
    assert term.cursor == (1, 0)  # from below the region, CUU is stopped by the screen
    term.feed(f"{CSI}?25l{ESC}8".encode())
    assert term.cursor == (4, 0)
    assert not term.modes.cursor_visible


def test_delete_lines_moves_a_blank_line_up() -> None:
    term = make("a\r\n\r\nc\r\nd" + f"{CSI}H{CSI}M")
    assert text(term)[:4] == ["", "c", "d", ""]
    term.feed(f"{CSI}2L".encode())
    assert text(term)[:4] == ["", "", "", "c"]


def test_region_scrolls_inserts_and_deletes_stay_inside_the_margins() -> None:
    term = make("1\r\n2\r\n3\r\n4\r\n5" + f"{CSI}2;4r", scrollback=10)
    steps = [
        (f"{CSI}4H{ESC}D", ["1", "3", "4", "", "5"]),  # IND at the bottom margin
        (f"{CSI}2H{ESC}M", ["1", "", "3", "4", "5"]),  # RI at the top margin
        (f"{CSI}3H{CSI}M", ["1", "", "4", "", "5"]),  # DL inside the region
        (f"{CSI}2H{CSI}L", ["1", "", "", "4", "5"]),  # IL at its top
        (f"{CSI}2S", ["1", "4", "", "", "5"]),  # SU 2 within the margins
        (f"{CSI}T", ["1", "", "4", "", "5"]),  # SD 1
        (f"{CSI}1H{CSI}L{CSI}5H{CSI}M", ["1", "", "4", "", "5"]),  # IL/DL outside: ignored
    ]
    for sequence, expected in steps:
        term.feed(sequence.encode())
        assert text(term) == expected, repr(sequence)
    assert list(term.scrollback) == []  # a partial region keeps no scrollback


def test_title_stack() -> None:
    term = make(f"{ESC}]2;one\x07{CSI}22;0t{ESC}]2;two\x07")
    assert term.title == "two"
    term.feed(f"{CSI}23;0t".encode())
    assert term.title == "one"


def test_deccolm_does_not_resize() -> None:
    term = make(f"hi{CSI}?3h{CSI}?3l")
    assert (term.cols, term.rows) == (20, 5)
    assert text(term)[0] == "hi"


# -- size and scrollback ---------------------------------------------------------


def test_scrollback_is_bounded() -> None:
    term = make("\r\n".join(f"{i}" for i in range(200)), scrollback=50)
    assert len(term.scrollback) == 50
    assert term.scrollback[0].rstrip() == "145" and term.scrollback[-1].rstrip() == "194"
    assert make("\r\n".join(f"{i}" for i in range(20)), scrollback=0).scrollback == []


def test_a_scrolling_region_at_the_top_feeds_the_scrollback_as_the_page_does() -> None:
    # xterm.js (and xterm) keep what scrolls out of a region that starts at the top of
    # the main screen; the footer below it stays. A region lower down keeps nothing.
    term = make(f"top\r\n\r\n\r\n\r\nfoot{CSI}1;4r{CSI}4;1H\n\n", scrollback=10)
    assert [line.rstrip() for line in term.scrollback] == ["top", ""]
    assert text(term) == ["", "", "", "", "foot"]
    assert make(f"{CSI}2;4r{CSI}4;1H\n\n\n", scrollback=10).scrollback == []
    assert make(f"{CSI}?1049h{CSI}1;4r{CSI}4;1H\n\n\n", scrollback=10).scrollback == []


# -- as the page's xterm.js draws it (issue 25) -------------------------------


def test_combining_marks_keep_the_programs_code_points() -> None:
    term = make("e\u0301 a\u0308\u0304")
    assert [term.line(0)[x].data for x in (0, 2)] == ["e\u0301", "a\u0308\u0304"]
    assert "e\u0301" in term.snapshot().ansi


def test_erase_to_the_end_of_the_line_keeps_a_pending_wrap_and_its_character() -> None:
    term = make(f"{CSI}1;10Hx{CSI}K{CSI}0Jy", cols=10, rows=3)
    assert text(term)[:2] == ["         x", "y"]


def test_erase_insert_and_delete_characters_leave_the_pending_wrap() -> None:
    for control in ("X", "@", "P"):
        term = make(f"{CSI}1;10Hx{CSI}{control}y", cols=10, rows=3)
        assert text(term)[:2] == ["         y", ""], control
        assert term.cursor == (0, 9)


def test_tabs_and_autowrap_off_keep_the_pending_wrap() -> None:
    for control in ("\t", f"{CSI}Z", f"{CSI}2I"):
        term = make(f"{CSI}1;10Hx{control}y", cols=10, rows=3)
        assert text(term)[:2] == ["         x", "y"], repr(control)
    term = make(f"{CSI}1;10Hx{CSI}?7l", cols=10, rows=3)
    assert term._screen.cursor.x == 10


def test_rows_that_scroll_in_take_the_background_colour() -> None:
    # LF, RI, IL, DL and a fresh alternate screen: BCE, as xterm.js fills them.
    for data, row in [
        (f"{CSI}44m{CSI}3;1H\n", 2),
        (f"{CSI}44m{ESC}M", 0),
        (f"{CSI}44m{CSI}2;1H{CSI}L", 1),
        (f"{CSI}44m{CSI}2;1H{CSI}M", 2),
        (f"{CSI}44m{CSI}?1049h", 1),
    ]:
        term = make(data, cols=4, rows=3)
        assert [cell.bg for cell in term.line(row)] == ["blue"] * 4, repr(data)


def test_rows_that_scroll_down_come_in_blank() -> None:
    term = make(f"{CSI}44m{CSI}T", cols=4, rows=3)  # SD: xterm.js gives them no colour
    assert [cell.bg for cell in term.line(0)] == ["default"] * 4


def test_a_wider_screen_gets_tab_stops_as_xterm_js_sets_them() -> None:
    # From the last stop left of the new edge, every 8 columns: here from 5.
    term = make(f"{CSI}3g{CSI}1;6H{ESC}H", cols=10, rows=2)
    term.resize(20, 2)
    assert sorted(term._screen.tabstops) == [5, 13]
    # No stops at all: from column 0, as a fresh terminal has them.
    term = make(f"{CSI}3g", cols=10, rows=2)
    term.resize(20, 2)
    assert sorted(term._screen.tabstops) == [0, 8, 16]
    # Stops past the edge stay, for when it widens again (narrowing to 10 found none
    # left of the edge, so it set them from 0).
    term = make(f"{CSI}3g{CSI}1;18H{ESC}H", cols=20, rows=2)
    term.resize(10, 2)
    term.resize(30, 2)
    assert sorted(term._screen.tabstops) == [0, 8, 17, 25]


def test_each_screen_keeps_its_own_scrolling_region_and_tab_stops() -> None:
    main_layout = f"{CSI}2;4r{CSI}3g{CSI}1;4H{ESC}H"
    term = make(f"{main_layout}{CSI}?1049h", cols=20, rows=6)
    screen = term._screen
    assert (screen._region(), sorted(screen.tabstops)) == ((0, 5), [0, 8, 16])
    term.feed(f"{CSI}3;5r{CSI}?1049l".encode())
    assert (screen._region(), sorted(screen.tabstops)) == ((1, 3), [3])
    # A client attaching while the alternate screen shows gets both.
    term.feed(f"{CSI}?1049h".encode())
    cold = make(term.snapshot().ansi + f"{CSI}?1049l", cols=20, rows=6)
    assert (cold._screen._region(), sorted(cold._screen.tabstops)) == ((1, 3), [3])


def test_a_saved_cursor_comes_back_higher_by_the_rows_the_scrollback_gained() -> None:
    # xterm.js counts the saved row from the top of its scrollback: lines that scroll
    # into it (while it has room) move the restored cursor up with the text.
    scrolled = f"{CSI}4;1H{ESC}7{CSI}5;1H\n\n{ESC}8"
    assert make(scrolled, rows=5, scrollback=10).cursor == (1, 0)
    assert make(scrolled, rows=5, scrollback=1).cursor == (2, 0)  # room for one
    assert make(scrolled + f"{ESC}7\n\n\n\n\n{ESC}8", rows=5, scrollback=10).cursor == (0, 0)
    assert make(f"\n\n\n\n\n\n{CSI}2;1H{ESC}7{CSI}3J{ESC}8", rows=5, scrollback=10).cursor == (3, 0)


def test_origin_mode_stops_a_move_past_the_region_and_outlives_decrc() -> None:
    # CUP past the region stops at its bottom row (pyte ignored it); DECRC leaves
    # origin mode as it is, as xterm.js does.
    term = make(f"{CSI}2;3r{CSI}?6h{CSI}6;4H", rows=5)
    assert term.cursor == (2, 3)
    term = make(f"{CSI}2;3r{ESC}7{CSI}?6h{ESC}8", rows=5)
    assert DECOM in term._screen.mode and term.cursor == (1, 0)


def test_with_autowrap_off_the_last_column_leaves_the_cursor_past_it() -> None:
    # As xterm.js: past the edge (EL then erases nothing), the next character
    # overwrites the last column again, and a snapshot keeps that state.
    term = make(f"{CSI}?7l{CSI}1;10Hx{CSI}K", cols=10, rows=3)
    assert term._screen.cursor.x == 10 and text(term)[0] == "         x"
    assert make(term.snapshot().ansi, cols=10, rows=3)._screen.cursor.x == 10
    term.feed(b"yz")
    assert text(term)[:2] == ["         z", ""]


def test_with_autowrap_off_a_wide_character_that_does_not_fit_is_dropped() -> None:
    term = make(f"{CSI}?7l{CSI}1;10H界", cols=10, rows=3)  # as xterm.js: no cell for it
    assert text(term)[0] == "" and term.cursor == (0, 9)
