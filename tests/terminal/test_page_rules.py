"""Where the headless terminal follows the page's xterm.js rather than another terminal,
so that a cold attach shows what the live view shows (issue 25; the differential test
against xterm.js itself is `test_xterm_fidelity`). Each test fails without its rule."""

from __future__ import annotations

from .support import CSI, ESC, make, text


def round_trip(term_cols: int, data: str, rows: int = 3) -> tuple[object, object]:
    """The saved cursor of a terminal fed ``data``, and of one fed its snapshot."""
    term = make(data, cols=term_cols, rows=rows)
    again = make(term.snapshot().ansi, cols=term_cols, rows=rows)
    return term._screen.saved[0], again._screen.saved[0]


def test_combining_marks_keep_the_programs_code_points() -> None:
    term = make("e\u0301 a\u0308\u0304")
    assert [term.line(0)[x].data for x in (0, 2)] == ["e\u0301", "a\u0308\u0304"]
    assert "e\u0301" in term.snapshot().ansi


def test_colon_truecolour_is_read_as_xterm_js_reads_it() -> None:
    # After 2 comes the colour space, always; a missing value is 0.
    cells = make(
        f"{CSI}38:2:1:2:3mA{CSI}38:2::1:2:3mB{CSI}38:2:1:2mC{CSI}48:5mD{CSI}38;2;1;2;3mE"
    ).line(0)
    assert [cells[0].fg, cells[1].fg, cells[2].fg, cells[3].bg, cells[4].fg] == [
        "020300",
        "010203",
        "020000",
        "0",
        "010203",
    ]


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


def test_a_cursor_saved_in_the_pending_wrap_state_is_saved_so_by_the_snapshot() -> None:
    saved, again = round_trip(10, f"{CSI}1;10Hx{ESC}7{CSI}2;1Hz")
    assert saved == again
    assert getattr(saved, "x", None) == 10


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


def test_rep_and_combining_marks_act_only_right_after_a_printed_character() -> None:
    # Any control or sequence in between: REP repeats nothing, a mark takes a cell.
    term = make(f"ab{CSI}2b{CSI}2b|x{CSI}1m{CSI}2b|e{CSI}1m\u0301|\r\n\u0301")
    assert text(term)[0] == "abbb|x|e\u0301|"
    assert [term.line(0)[x].data for x in (7, 8)] == ["e", "\u0301"]
    assert term.line(1)[0].data == "\u0301"


def test_a_snapshot_ends_with_the_last_character_so_rep_and_marks_still_join_it() -> None:
    ansi = make("ab").snapshot().ansi
    assert text(make(ansi + f"{CSI}2b"))[0] == "abbb"
    assert make(ansi + "\u0301").line(0)[1].data == "b\u0301"


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
