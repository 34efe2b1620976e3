"""HeadlessTerminal: pyte fault fixes, modes, replies, snapshots, real programs, tmux.

The round-trip tests feed a snapshot's ANSI into a second, fresh HeadlessTerminal
and compare cell by cell; the tmux tests show the snapshot in a real terminal
and compare what it displays. ``python tests/terminal/test_headless.py --capture``
regenerates ``tests/terminal/captured/`` (raw vim/less output, with tmux as the oracle for
the expected screen text).
"""

from __future__ import annotations

import os
import random
import select
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ptyprocess import PtyProcess

from ptyvisor.terminal import HeadlessTerminal, TerminalModes
from ptyvisor.terminal.snapshot import BLANK, Cell

CAPTURED = Path(__file__).parent / "captured"
ESC = "\x1b"
CSI = "\x1b["


def make(data: str | bytes, cols: int = 20, rows: int = 5, **kwargs: Any) -> HeadlessTerminal:
    term = HeadlessTerminal(cols, rows, **kwargs)
    term.feed(data.encode() if isinstance(data, str) else data)
    return term


def text(term: HeadlessTerminal) -> list[str]:
    return [row.rstrip() for row in term.display]


def rows_of(buffer: Any, cols: int, rows: int) -> list[list[Cell]]:
    empty: dict[int, Cell] = {}
    out = []
    for y in range(rows):
        line = buffer.get(y, empty)
        out.append([line.get(x, BLANK) for x in range(cols)])
    return out


def state(term: HeadlessTerminal) -> dict[str, Any]:
    """Everything a snapshot must reproduce, from the emulator's internals."""
    s = term._screen
    main = s.main_buffer if s.main_buffer is not None else s.buffer
    return {
        "size": (term.cols, term.rows),
        "main": rows_of(main, term.cols, term.rows),
        "alt": rows_of(s.buffer, term.cols, term.rows) if s.alt_active else None,
        "cursor": (s.cursor.x, s.cursor.y),
        "pen": s.cursor.attrs,
        "title": term.title,
        "modes": term.modes,
        "margins": s._region(),
        "flags": (
            sorted(s.mode),
            s.g0_graphics,
            s.g1_graphics,
            s.charset,
            s.cursor_style,
            s.reverse_video,
            sorted(s.tabstops),
        ),
    }


def saved_slots(term: HeadlessTerminal) -> list[tuple[int, int, Cell] | None]:
    return [None if v is None else (v.x, v.y, v.attrs) for v in term._screen.saved]


def round_trip(a: HeadlessTerminal, *, include_scrollback: bool = True) -> HeadlessTerminal:
    """Replay A's snapshot into a fresh B and assert B reproduces A."""
    snap = a.snapshot(include_scrollback=include_scrollback)
    b = HeadlessTerminal(a.cols, a.rows, scrollback=10_000)
    b.feed(snap.ansi.encode())
    assert state(b) == state(a)
    for mine, theirs in zip(saved_slots(a), saved_slots(b), strict=True):
        if mine is not None:
            assert theirs == mine
    if include_scrollback:
        assert [r.rstrip() for r in b.scrollback] == [r.rstrip() for r in a.scrollback]
    assert (snap.cursor_row, snap.cursor_col) == a.cursor
    assert snap.modes == a.modes and snap.title == a.title
    return b


# -- pyte fault 1: zero-width non-combining characters -------------------------


def test_zero_width_joiner_and_variation_selector_keep_the_rest_of_the_run() -> None:
    term = make("a⚠️ bc\r\n👩\u200d💻 ok\r\ne\u0301!")
    assert text(term)[:3] == ["a⚠️ bc", "👩\u200d💻 ok", "é!"]
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


# -- pyte fault 3: OSC parsing ---------------------------------------------------


def test_osc_number_is_parsed_whole_and_only_0_and_2_set_the_title() -> None:
    term = make(f"{ESC}]133;A\x07{ESC}]1;icon\x07{ESC}]7;file://h/p{ESC}\\x")
    assert term.title == ""
    assert text(term)[0] == "x"
    term.feed(f"{ESC}]0;zero\x07".encode())
    assert term.title == "zero"
    term.feed(f"{ESC}]2;two {ESC}\\".encode())
    assert term.title == "two "
    term.feed(f"{ESC}]21;no\x07{ESC}]2;\x9c".encode())  # empty title via C1 ST
    assert term.title == ""
    assert text(term)[0] == "x"


def test_unterminated_osc_is_abandoned_at_the_next_escape() -> None:
    term = make(f"{ESC}]2;never ends{CSI}1;1Hvisible{ESC}]0;x\x18after")
    assert text(term)[0] == "visibleafter"
    assert term.title == ""


def test_unterminated_osc_without_escape_is_abandoned_after_a_bound() -> None:
    term = make(f"{ESC}]8;;" + "u" * 5000 + "\r\nshown", cols=40)
    assert "shown" in text(term)


def test_large_clipboard_osc_is_swallowed_whole() -> None:
    payload = "QUJD" * 50_000
    term = make(f"{ESC}]52;c;{payload}\x07ok", cols=40)
    assert text(term)[0] == "ok"


def test_osc_split_across_feeds() -> None:
    term = HeadlessTerminal(20, 3)
    for part in [b"\x1b", b"]", b"2;ti", b"tle\x1b", b"\\", b"x"]:
        term.feed(part)
    assert term.title == "title"
    assert text(term)[0] == "x"


# -- pyte fault 4: DCS / APC / PM / SOS ------------------------------------------


@pytest.mark.parametrize(
    "introducer",
    [f"{ESC}P", f"{ESC}_", f"{ESC}^", f"{ESC}X", "\x90", "\x9f"],
    ids=["DCS", "APC", "PM", "SOS", "DCS-C1", "APC-C1"],
)
def test_control_string_payloads_are_consumed(introducer: str) -> None:
    term = make(f"a{introducer}Gf=100;payload\r\nmore{ESC}\\b{introducer}x\x9cc")
    assert text(term) == ["abc", "", "", "", ""]


def test_sixel_and_kitty_graphics_payloads_are_not_drawn() -> None:
    sixel = f"{ESC}Pq#0;2;0;0;0#0!100~-" + "~" * 10_000 + f"{ESC}\\"
    kitty = f"{ESC}_Ga=T,f=100;" + "A" * 20_000 + f"{ESC}\\"
    term = make(sixel + kitty + "done", cols=30)
    assert text(term)[0] == "done"


# -- the cheaper extras ----------------------------------------------------------


def test_colon_sgr_forms_are_applied_not_printed() -> None:
    term = make(f"{CSI}38:2::255:0:0;48:5:17;4:3mX{CSI}4:0;38:2:1:2:3mY{CSI}58:2::1:2:3mZ")
    x, y, z = term.line(0)[:3]
    assert (x.data, x.fg, x.bg, x.underscore) == ("X", "ff0000", "17", True)
    assert (y.data, y.fg, y.underscore) == ("Y", "010203", False)
    assert z.data == "Z"
    assert text(term)[0] == "XYZ"


def test_sgr_colours_and_attributes() -> None:
    term = make(
        f"{CSI}1;2;3;4;5;7;8;9;53;31;42mA{CSI}0;38;5;208;48;2;1;2;3mB"
        f"{CSI}93;104mC{CSI}22;23;24;25;27;28;29;55;39;49mD{CSI}>4;2mE"
    )
    a, b, c, d, e = term.line(0)[:5]
    assert a == Cell("A", "red", "green", True, True, True, True, True, True, True, True, True)
    assert (b.fg, b.bg, b.bold) == ("208", "010203", False)
    assert (c.fg, c.bg) == ("brightbrown", "brightblue")
    assert d == Cell("D", bg="default")
    assert e == Cell("E")  # CSI > 4;2 m (modifyOtherKeys) is not SGR 4


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


def test_kitty_keyboard_and_other_private_sequences_are_ignored() -> None:
    term = make(f"{CSI}>1u{CSI}<u{CSI}=1;1u{CSI}?u{CSI}>q{CSI}=c{CSI}?4m{CSI}0%mok")
    assert text(term)[0] == "ok"
    assert term.line(0)[0] == Cell("o")


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


# -- modes ---------------------------------------------------------------------


def test_modes_are_tracked_and_restored_by_the_snapshot() -> None:
    term = make(f"{CSI}?1h{ESC}={CSI}?2004h{CSI}?1002h{CSI}?1006h{CSI}?1004h{CSI}?7l{CSI}?25l")
    expected = TerminalModes(
        alternate_screen=False,
        application_cursor_keys=True,
        application_keypad=True,
        bracketed_paste=True,
        mouse_tracking="button",
        mouse_encoding="sgr",
        focus_events=True,
        auto_wrap=False,
        cursor_visible=False,
    )
    assert term.modes == expected
    snap = term.snapshot()
    assert snap.modes == expected
    for sequence in ["?1h", "?2004h", "?1002h", "?1006h", "?1004h", "?7l", "?25l"]:
        assert CSI + sequence in snap.ansi
    assert ESC + "=" in snap.ansi
    round_trip(term)


def test_mouse_modes_follow_xterm() -> None:
    term = make(f"{CSI}?1000;1002;1006h")
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("button", "sgr")
    term.feed(f"{CSI}?1003h{CSI}?1015h".encode())
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("any", "urxvt")
    term.feed(f"{CSI}?1006l".encode())  # not the current encoding: no change
    assert term.modes.mouse_encoding == "urxvt"
    term.feed(f"{CSI}?1000l{CSI}?1015l".encode())  # resetting any tracking mode: off
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("off", "default")
    term.feed(f"{CSI}?9h{CSI}?1005h".encode())
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("x10", "utf8")
    round_trip(term)


def test_mouse_encoding_is_restored_with_tracking() -> None:
    term = make(f"{CSI}?1006h{CSI}?1003h")
    ansi = term.snapshot().ansi
    assert ansi.index(CSI + "?1006h") > ansi.rindex(CSI + "?1006l")
    assert ansi.index(CSI + "?1003h") > ansi.rindex(CSI + "?1000l")
    assert make(ansi).modes == term.modes


def test_skip_applies_only_private_modes_and_resets_the_parser() -> None:
    term = make("before")
    term.skip(b"\x1b[?1049h\x1b[?2004h\x1b[?1000;1006hjunk text\x1b=\x1b]2;t")
    assert term.modes.alternate_screen and term.modes.bracketed_paste
    assert term.modes.application_keypad
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("normal", "sgr")
    assert text(term) == [""] * 5
    term.feed(b"after")  # not part of the unterminated OSC that was skipped
    assert text(term)[0].strip() == "after" and term.title == ""
    term.skip(b"\x1b[?1049l\xe4\xb8")  # half a UTF-8 character
    term.feed(b"\xad!")
    assert text(term)[0] == "before\ufffd!"  # the decoder started clean


# -- replies ---------------------------------------------------------------------


def test_query_replies_are_exact_and_sent_once() -> None:
    replies: list[bytes] = []
    stream = f"{CSI}c{CSI}0c{CSI}>c{CSI}5nabc{CSI}6n\r\n{CSI}3;7H{CSI}6n{CSI}?6n{CSI}=c"
    term = make(stream, on_reply=replies.append)
    assert replies == [
        b"\x1b[?1;2c",
        b"\x1b[?1;2c",
        b"\x1b[>0;276;0c",
        b"\x1b[0n",
        b"\x1b[1;4R",
        b"\x1b[3;7R",
    ]
    assert term.cursor == (2, 6)
    one_by_one: list[bytes] = []
    term = HeadlessTerminal(20, 5, on_reply=one_by_one.append)
    for byte in stream.encode():
        term.feed(bytes([byte]))
    assert one_by_one == replies


def test_cursor_position_report_in_origin_mode_and_pending_wrap() -> None:
    replies: list[bytes] = []
    make(f"{CSI}2;4r{CSI}?6h{CSI}2;3H{CSI}6n", on_reply=replies.append)
    make("x" * 20 + f"{CSI}6n", on_reply=replies.append)
    assert replies == [b"\x1b[2;3R", b"\x1b[1;20R"]


# -- size and scrollback ---------------------------------------------------------


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


def test_scrollback_is_bounded() -> None:
    term = make("\r\n".join(f"{i}" for i in range(200)), scrollback=50)
    assert len(term.scrollback) == 50
    assert term.scrollback[0].rstrip() == "145" and term.scrollback[-1].rstrip() == "194"
    assert make("\r\n".join(f"{i}" for i in range(20)), scrollback=0).scrollback == []


def test_no_scrollback_from_a_partial_scrolling_region() -> None:
    term = make(f"{CSI}1;4r{CSI}4;1H\n\n\n", scrollback=10)
    assert term.scrollback == []


# -- split feeds -----------------------------------------------------------------

TRICKY = (
    f"{CSI}?1049h{CSI}1;31mred{CSI}0m 中文 é\u0301 👩\u200d💻 ⚠️\r\n"
    f"{ESC}]2;ti\u00e9tle\x07{ESC}]133;A{ESC}\\{ESC}Pq#0~-{ESC}\\{ESC}_Gx{ESC}\\"
    f"{CSI}38:2::10:20:30mtrue{CSI}48;5;123mbg{CSI}m\ttab{CSI}2;10r{CSI}5;5H"
    f"{ESC}7{CSI}?1006;1002h{CSI}?2004h{ESC}={CSI}?1h{CSI}3Sscroll{ESC}8"
    f"{ESC}(0lqqk{ESC}(B{CSI}4hins{CSI}4l{CSI}?25l\x9b7m c1 csi{CSI}0m"
    f"{CSI}>1u{CSI}<u{CSI}=1u{CSI}6n{CSI}r{CSI}24;1H" + "z" * 40 + "\x1b[?1049l"
    "main screen\r\n" + "".join(f"row {i} {CSI}3{i % 8}mcolour{CSI}m\r\n" for i in range(30))
)


@pytest.mark.parametrize("alt", [False, True], ids=["main", "alt"])
def test_split_feeds_give_the_same_screen(alt: bool) -> None:
    data = (TRICKY + (f"{CSI}?1049hback in alt" if alt else "")).encode()
    whole_replies: list[bytes] = []
    whole = make(data, cols=30, rows=10, on_reply=whole_replies.append)
    split_replies: list[bytes] = []
    split = HeadlessTerminal(30, 10, on_reply=split_replies.append)
    for byte in data:
        split.feed(bytes([byte]))
    assert state(split) == state(whole)
    assert split.scrollback == whole.scrollback
    assert len(whole_replies) == 1 and whole_replies[0].endswith(b"R")
    assert split_replies == whole_replies
    for size in (2, 3, 7, 64):
        chunked = HeadlessTerminal(30, 10)
        for i in range(0, len(data), size):
            chunked.feed(data[i : i + size])
        assert state(chunked) == state(whole)


# -- round trips -----------------------------------------------------------------

ROUND_TRIPS = {
    "plain": "hello\r\nworld",
    "colours": "".join(
        f"{CSI}{code}m{code}" for code in [31, 42, 93, 104, "38;5;33", "48;5;250", "38;2;1;2;3"]
    )
    + f"{CSI}m\r\n{CSI}1;3;4;5;7;9mattrs{CSI}22;2mdim{CSI}8mhid{CSI}0;53mover",
    "wide at last column": "x" * 19 + "中" + "y" * 18 + "文",
    "wide in last cells": "x" * 18 + "中",
    "full last line": f"{CSI}5;1H" + "z" * 20,
    "full screen": "".join(f"{CSI}{y};1H" + chr(64 + y) * 20 for y in range(1, 6)),
    "pending wrap mid screen": f"{CSI}2;1H" + "w" * 20,
    "pending wrap on wide": f"{CSI}3;1H" + "w" * 18 + "字",
    "cursor hidden, no wrap": f"{CSI}?25l{CSI}?7l{CSI}3;3Hab",
    "background fill": f"{CSI}44m{CSI}2J{CSI}3;3H{CSI}0mx{CSI}45m",
    "emoji and clusters": "a⚠️ b 👩\u200d💻 c e\u0301 \U0001f600",
    "scrollback": "\r\n".join(f"{CSI}3{i % 8}mline {i}{CSI}m" for i in range(12)),
    "scrollback full width": "\r\n".join(str(i) * 20 for i in range(8)),
    "alt over main": f"main{CSI}3;3H{ESC}7{CSI}?1049h{CSI}2;2H{CSI}32malt{ESC}7{CSI}H",
    "alt 47": f"main\r\n{CSI}?47hin alt",
    "margins and origin": f"{CSI}2;4r{CSI}?6h{CSI}2;2Hx",
    "margins only": f"{CSI}2;4rm{CSI}4;5H",
    "charsets": f"{ESC})0{ESC}(0lqk\x0e",
    "insert and newline modes": f"{CSI}4h{CSI}20hab{CSI}D",
    "tab stops": f"{CSI}3g{CSI}1;4H{ESC}H{CSI}1;11H{ESC}H\rx\ty\tz",
    "title and cursor style": f"{ESC}]2;my title\x07{CSI}5 q{CSI}?5h",
    "saved cursor": f"{CSI}4;6H{CSI}1;32m{ESC}7{CSI}0m{CSI}1;1Hx",
    "orphan halves": f"中文{CSI}1;2Hx{CSI}1;3H{CSI}X",
    "hyperlinks": f"{ESC}]8;id=a;https://example.com/a{ESC}\\one {CSI}1mbold{CSI}0m two"
    f"{ESC}]8;;{ESC}\\ plain {ESC}]8;;http://b.example/\x07b\r\n" + "w" * 25,
}


@pytest.mark.parametrize("data", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_snapshot_round_trip(data: str) -> None:
    term = make(data, scrollback=100)
    round_trip(term)
    round_trip(term, include_scrollback=False)


def test_hyperlinks_are_kept_per_cell_and_replayed() -> None:
    link = "id=a;https://example.com/a"
    term = make(f"{ESC}]8;{link}{ESC}\\go{CSI}0m!{ESC}]8;;{ESC}\\ no")
    cells = term.line(0)
    # SGR 0 does not end a link (it is not a style); an empty URI does.
    assert [c.link for c in cells[:4]] == [link, link, link, ""]
    assert cells[4].link == ""
    ansi = term.snapshot().ansi
    assert f"{ESC}]8;{link}{ESC}\\go" in ansi
    assert f"{ESC}]8;;{ESC}\\" in ansi
    # A link still open when the snapshot is taken stays open for what follows.
    still_open = make(f"{ESC}]8;;https://x.example/{ESC}\\ab")
    again = make(still_open.snapshot().ansi + "c")
    assert [c.link for c in again.line(0)[:3]] == [";https://x.example/"] * 3
    # Control characters in a URI are dropped, never echoed to clients.
    assert make(f"{ESC}]8;;http://a\x01b/{ESC}\\x").line(0)[0].link == ";http://ab/"


def test_snapshot_layout() -> None:
    snap = make(f"{CSI}3;5Hhi").snapshot()
    assert snap.ansi.startswith(f"{CSI}?1049l{CSI}0m")
    assert "\x1bc" not in snap.ansi  # no RIS
    assert f"{CSI}3;5Hhi" in snap.ansi  # rows are placed absolutely
    assert (snap.cursor_row, snap.cursor_col, snap.cols, snap.rows) == (2, 6, 20, 5)


def test_snapshot_draws_main_before_alternate() -> None:
    ansi = make(f"MAIN{CSI}?1049hALT").snapshot().ansi
    assert ansi.index("MAIN") < ansi.index(CSI + "?1049h") < ansi.index("ALT")


# -- deterministic fuzzing -------------------------------------------------------

_FUZZ_TEXT = [
    "hello",
    "x",
    "中文",
    "é\u0301",
    "👩\u200d💻",
    "⚠️",
    "\U0001f600",
    "a b",
    "│",
    "\t",
    "\r",
]
_FUZZ_TEXT += ["\n", "\b", "\x0e", "\x0f", "q", "\x00", "\x7f", "\x18", "\x85"]
_FUZZ_ESCAPES = ["7", "8", "D", "E", "M", "H", "=", ">", "(0", "(B", ")0", "#8", "c", "]2;t\x07"]
_FUZZ_ESCAPES += [
    "]0;u\x1b\\",
    "Pq~~\x1b\\",
    "]133;A\x07",
    "[22;0t",
    "[23;0t",
    "[!p",
    "[3 q",
    "]2;cut",
]
_FUZZ_MODES = [
    1,
    5,
    6,
    7,
    25,
    47,
    1047,
    1049,
    66,
    9,
    1000,
    1002,
    1003,
    1005,
    1006,
    1015,
    1004,
    2004,
    3,
]


def _fuzz_token(r: random.Random) -> str:
    k = r.random()
    if k < 0.35:
        return r.choice(_FUZZ_TEXT) * r.randint(1, 3)
    if k < 0.6:
        params = ";".join(
            str(r.choice([0, 1, 2, 3, 5, 10, 30, 200])) for _ in range(r.randint(0, 3))
        )
        return f"{CSI}{params}{r.choice('@ABCDEFGHIJKLMPSTXZabcdefghlmnqrstu`')}"
    if k < 0.7:
        return f"{CSI}?{r.choice(_FUZZ_MODES)}{r.choice('hl')}"
    if k < 0.8:
        codes = [0, 1, 2, 4, 5, 7, 9, 22, 31, 38, 48, 5, 2, 208, 255, 90, 107]
        return CSI + ";".join(str(r.choice(codes)) for _ in range(r.randint(1, 6))) + "m"
    if k < 0.9:
        return ESC + r.choice(_FUZZ_ESCAPES)
    return f"{CSI}{r.randint(1, 12)};{r.randint(1, 30)}{r.choice('Hr')}"


@pytest.mark.parametrize("seed", range(0, 400, 40))
def test_fuzz_split_feeds_and_round_trips(seed: int) -> None:
    """Random sequences: no exception, byte-by-byte equals whole, snapshots replay."""
    for case in range(seed, seed + 40):
        r = random.Random(case)
        data = "".join(_fuzz_token(r) for _ in range(r.randint(5, 100))).encode()
        cols, rows = r.choice([(20, 6), (10, 4), (30, 10), (5, 3)])
        whole = make(data, cols=cols, rows=rows, scrollback=50)
        split = HeadlessTerminal(cols, rows, scrollback=50)
        for byte in data:
            split.feed(bytes([byte]))
        assert state(split) == state(whole), case
        if r.random() < 0.3:
            whole.resize(r.randint(1, 40), r.randint(1, 12))
        round_trip(whole)


# -- real programs, real terminals -----------------------------------------------


def program_env() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LESS": "",
        "LESSHISTFILE": "-",
    }


class PtyRun:
    """A program under a real PTY whose output feeds a HeadlessTerminal; the
    terminal's replies go back to the program as a real terminal's would."""

    def __init__(self, argv: list[str], cols: int, rows: int, cwd: Path) -> None:
        self.raw = bytearray()
        self.proc = PtyProcess.spawn(argv, cwd=str(cwd), env=program_env(), dimensions=(rows, cols))
        self.term = HeadlessTerminal(cols, rows, on_reply=self.proc.write)

    def pump(self, until: Callable[[HeadlessTerminal], bool], *, wait: float = 15) -> None:
        """Feed output until ``until`` holds and the program has been quiet a moment."""
        deadline = time.monotonic() + wait
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.proc.fd, 65536)
                except OSError:  # EIO: the program exited
                    chunk = b""
                if chunk:
                    self.raw += chunk
                    self.term.feed(chunk)
                    quiet_since = time.monotonic()
                    continue
                if until(self.term):
                    return
                break
            if until(self.term) and time.monotonic() - quiet_since > 0.3:
                return
        assert until(self.term), "screen never settled:\n" + "\n".join(text(self.term))

    def close(self) -> None:
        with suppress(Exception):
            self.proc.close(force=True)


@contextmanager
def pty_run(argv: list[str], cols: int, rows: int, cwd: Path) -> Iterator[PtyRun]:
    run = PtyRun(argv, cols, rows, cwd)
    try:
        yield run
    finally:
        run.close()


def require(program: str) -> None:
    """These tests compare against real programs: missing one is a failure, not a skip
    (.ci/run installs them: apt-get install tmux vim less)."""
    assert shutil.which(program) is not None, f"{program} is not installed (see .ci/run)"


@contextmanager
def tmux_showing(data: bytes, cols: int, rows: int, workdir: Path) -> Iterator[Callable[..., str]]:
    """A private tmux server whose only pane has ``cat``-ed ``data``; yields ``tmux(*args)``."""
    require("tmux")
    conf = workdir / "tmux.conf"
    conf.write_text("set -g status off\nset -g history-limit 10000\n")
    payload = workdir / f"shown-{uuid.uuid4().hex}.ansi"
    payload.write_bytes(data)
    socket = f"ptyvisor-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in program_env().items() if k != "LESS"}
    base = ["tmux", "-u", "-L", socket, "-f", str(conf)]

    def tmux(*args: str) -> str:
        done = subprocess.run(
            [*base, *args], env=env, capture_output=True, text=True, check=True, timeout=10
        )
        return done.stdout

    shell = f"stty raw -echo; cat {payload}; exec sleep 120"
    tmux("new-session", "-d", "-x", str(cols), "-y", str(rows), shell)
    socket_path = Path(tmux("display-message", "-p", "#{socket_path}").strip())
    try:
        yield tmux
    finally:
        subprocess.run([*base, "kill-server"], env=env, capture_output=True, check=False)
        socket_path.unlink(missing_ok=True)  # tmux leaves its socket file behind


def pane_rows(tmux: Callable[..., str], rows: int, expected: list[str]) -> list[str]:
    """The pane's text rows (rstripped), polled until they match or time runs out."""
    deadline = time.monotonic() + 10
    while True:
        shown = [r.rstrip() for r in tmux("capture-pane", "-p").split("\n")][:rows]
        shown += [""] * (rows - len(shown))
        if shown == expected or time.monotonic() > deadline:
            return shown
        time.sleep(0.05)


def assert_tmux_shows(term: HeadlessTerminal, workdir: Path) -> None:
    """A real terminal (tmux) shows the snapshot as the headless screen has it."""
    snap = term.snapshot()
    expected = text(term)
    with tmux_showing(snap.ansi.encode(), term.cols, term.rows, workdir) as tmux:
        assert pane_rows(tmux, term.rows, expected) == expected
        # tmux reports a pending wrap as x == cols, as the headless screen keeps it.
        fmt = "#{cursor_y},#{cursor_x},#{alternate_on},#{cursor_flag}"
        expected_fmt = (
            f"{snap.cursor_row},{term._screen.cursor.x},{int(snap.modes.alternate_screen)},"
            f"{int(snap.modes.cursor_visible)}"
        )
        assert tmux("display-message", "-p", fmt).strip() == expected_fmt
        if snap.title:  # else tmux shows its default, the host name
            assert tmux("display-message", "-p", "#{pane_title}").rstrip("\n") == snap.title
        flags = tmux(
            "display-message",
            "-p",
            "#{keypad_cursor_flag},#{keypad_flag},#{mouse_sgr_flag},#{mouse_standard_flag},"
            "#{mouse_button_flag},#{mouse_all_flag},#{wrap_flag}",
        ).strip()
        m = snap.modes
        assert flags == ",".join(
            str(int(v))
            for v in (
                m.application_cursor_keys,
                m.application_keypad,
                m.mouse_encoding == "sgr",
                m.mouse_tracking == "normal",
                m.mouse_tracking == "button",
                m.mouse_tracking == "any",
                m.auto_wrap,
            )
        )
        if not snap.modes.alternate_screen and term.scrollback:
            history = tmux("capture-pane", "-p", "-S", "-", "-E", "-1").rstrip("\n").split("\n")
            assert [r.rstrip() for r in history] == [r.rstrip() for r in term.scrollback]


SAMPLE = [f"{i:02d}: the quick brown fox jumps over the lazy dog" for i in range(1, 41)]
SAMPLE[4] = "05: wide 中文字符 text"
SAMPLE[6] = "07:\ttabbed"


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "sample.txt"
    path.write_text("\n".join(SAMPLE) + "\n")
    return path


def test_vim_screen_round_trip_and_tmux(sample: Path, tmp_path: Path) -> None:
    require("vim")
    argv = ["vim", "-u", "NONE", "-N", "-n", "-i", "NONE", sample.name]
    with pty_run(argv, 80, 24, tmp_path) as run:
        run.pump(lambda t: "40L" in t.display[-1] and t.display[0].startswith("01:"))
        term = run.term
        assert term.modes.alternate_screen
        assert text(term)[:23] == [line.expandtabs(8) for line in SAMPLE[:23]]
        round_trip(term)
        assert_tmux_shows(term, tmp_path)
        run.proc.setwinsize(12, 50)  # SIGWINCH: vim redraws for the new size
        term.resize(50, 12)
        run.pump(lambda t: t.display[-1].strip() == "" and t.display[10].startswith("11:"))
        assert text(term)[:11] == [line.expandtabs(8)[:50] for line in SAMPLE[:11]]
        round_trip(term)
        assert_tmux_shows(term, tmp_path)
        run.proc.write(b":q!\r")
        run.pump(lambda t: not t.modes.alternate_screen)
        assert not term.modes.bracketed_paste
        assert not term.modes.application_cursor_keys


def test_less_screen_round_trip_and_tmux(sample: Path, tmp_path: Path) -> None:
    require("less")
    with pty_run(["less", sample.name], 60, 12, tmp_path) as run:
        run.pump(lambda t: t.display[-1].startswith("sample.txt"))
        term = run.term
        assert term.modes.alternate_screen
        assert text(term)[:11] == [line.expandtabs(8)[:60] for line in SAMPLE[:11]]
        assert term.line(11)[0].reverse  # the prompt is in reverse video
        round_trip(term)
        assert_tmux_shows(term, tmp_path)
        run.proc.write(b" ")  # next page
        run.pump(lambda t: t.display[0].startswith("12:"))
        round_trip(term)
        assert_tmux_shows(term, tmp_path)
        run.proc.write(b"q")
        run.pump(lambda t: not t.modes.alternate_screen)


TMUX_SCREENS = {
    "colours, wide, full last line": (
        "\r\n".join(f"{CSI}3{i % 8};4{(i + 1) % 8}mhistory {i}{CSI}m" for i in range(30))
        + f"{CSI}H{CSI}2J{CSI}1;1H中文 at start{CSI}1;39H字"
        + f"{CSI}2;1H{CSI}38;5;208;48;2;10;20;30mtrue colour{CSI}m"
        + f"{CSI}3;1H{CSI}1;3;4;9mattrs{CSI}m{CSI}?2004h{CSI}?1002;1006h"
        + f"{CSI}10;1H"
        + "L" * 39
        + "中"
        + f"{CSI}5;5H{ESC}]2;a title\x07"
    ),
    "pending wrap at the bottom": "\r\n".join(str(i % 10) * 40 for i in range(14)),
    "alternate over main": (
        f"main line\r\n{CSI}?1049h{CSI}3;3Halt line{CSI}?1h{ESC}={CSI}?25l{CSI}1000h"
    ),
}


@pytest.mark.parametrize("data", TMUX_SCREENS.values(), ids=TMUX_SCREENS.keys())
def test_snapshot_in_tmux(data: str, tmp_path: Path) -> None:
    term = make(data, cols=40, rows=10, scrollback=100)
    assert_tmux_shows(term, tmp_path)


# -- captured fixtures -----------------------------------------------------------


def _captures() -> list[Path]:
    return sorted(CAPTURED.glob("*.input"))


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.stem)
def test_captured_program_output(path: Path) -> None:
    """Raw vim/less output; the expected text is what tmux showed for the same bytes."""
    cols, rows = (int(n) for n in path.stem.rsplit("-", 1)[1].split("x"))
    expected = path.with_suffix(".output").read_text().split("\n")[:rows]
    term = make(path.read_bytes(), cols=cols, rows=rows)
    assert text(term) == expected
    split = HeadlessTerminal(cols, rows)
    data = path.read_bytes()
    for i in range(0, len(data), 5):
        split.feed(data[i : i + 5])
    assert state(split) == state(term)
    round_trip(term)


def _capture(
    name: str,
    argv: list[str],
    keys: list[tuple[bytes, Callable[[HeadlessTerminal], bool]]],
    *,
    size: tuple[int, int],
    workdir: Path,
) -> None:
    """Record a program's raw output; ask tmux what the same bytes show."""
    cols, rows = size
    with pty_run(argv, cols, rows, workdir) as run:
        for key, until in keys:
            if key:
                run.proc.write(key)
            run.pump(until)
        raw = bytes(run.raw)
    with tmux_showing(raw, cols, rows, workdir) as tmux:
        previous: list[str] = []
        shown: list[str] = []
        while not shown or shown != previous:  # until two looks a moment apart agree
            previous = shown
            time.sleep(0.5)
            shown = [r.rstrip() for r in tmux("capture-pane", "-p").split("\n")][:rows]
    stem = CAPTURED / f"{name}-{cols}x{rows}"
    stem.with_suffix(".input").write_bytes(raw)
    stem.with_suffix(".output").write_text("\n".join(shown) + "\n")


def main() -> None:
    import tempfile

    CAPTURED.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "sample.txt").write_text("\n".join(SAMPLE) + "\n")
        vim = ["vim", "-u", "NONE", "-N", "-n", "-i", "NONE", "sample.txt"]
        _capture(
            "vim-open",
            vim,
            [(b"", lambda t: "40L" in t.display[-1])],
            size=(80, 24),
            workdir=workdir,
        )
        _capture(
            "vim-edit",
            vim,
            [
                (b"", lambda t: "40L" in t.display[-1]),
                (b"Gox\xe4\xb8\xad\x1b", lambda t: t.display[-2].startswith("x中")),
                (b"ggdd", lambda t: t.display[0].startswith("02:")),
            ],
            size=(70, 20),
            workdir=workdir,
        )
        _capture(
            "less-pages",
            ["less", "sample.txt"],
            [
                (b"", lambda t: t.display[-1].startswith("sample.txt")),
                (b" ", lambda t: t.display[0].startswith("12:")),
                (b"/fox\r", lambda t: t.display[-1].startswith(":")),
            ],
            size=(60, 12),
            workdir=workdir,
        )


if __name__ == "__main__" and "--capture" in sys.argv:
    main()


def test_kept_scrollback_drawings_match_drawing_afresh() -> None:
    """Snapshots keep each scrollback line drawn (a cold attach with a long history
    would draw it all again): whatever happens in between — lines scrolled off,
    resizes that pull lines back on screen where they change, columns that shrink —
    a snapshot is the same as one drawn from nothing."""
    rng = random.Random(7)
    terminal = HeadlessTerminal(30, 6, scrollback=50)
    pieces = [
        b"word ",
        b"\x1b[31mred\x1b[0m ",
        b"\x1b[44mbg ",
        b"\xe6\x97\xa5\xe6\x9c\xac",
        b"\r\n",
    ]
    for step in range(400):
        terminal.feed(b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))))
        if step % 37 == 0:
            terminal.resize(rng.randint(10, 40), rng.randint(3, 12))
        if step % 5 == 0:
            kept = terminal.snapshot().ansi
            terminal._screen.scrollback.drawn.clear()
            assert kept == terminal.snapshot().ansi, step


def test_a_scrollback_line_pulled_back_and_changed_is_drawn_anew() -> None:
    terminal = HeadlessTerminal(20, 3, scrollback=10)
    terminal.feed(b"".join(b"line-%d\r\n" % n for n in range(1, 7)))
    before = terminal.snapshot().ansi  # draws (and keeps) the scrollback
    terminal.resize(20, 6)  # pulls scrollback lines back on screen
    terminal.feed(b"\x1b[HCHANGED\x1b[6;1H")  # the same line object, changed
    terminal.resize(20, 3)  # and back into the scrollback
    after = terminal.snapshot().ansi
    assert "CHANGED" in after and after != before
    terminal._screen.scrollback.drawn.clear()
    assert after == terminal.snapshot().ansi


def test_scrollback_drawn_ahead_is_what_a_snapshot_would_draw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The renderer draws new scrollback lines when idle (`draw_scrollback`): the next
    snapshot draws none of them again, and is the same as one drawn from nothing."""
    from ptyvisor.terminal import scrollback as scrollback_module
    from ptyvisor.terminal import snapshot as snapshot_ansi

    screen = HeadlessTerminal(40, 5, scrollback=100)
    screen.feed(b"".join(b"\x1b[3%dmline %d\x1b[0m\r\n" % (n % 8, n) for n in range(300)))
    assert screen.scrollback_undrawn >= 100
    screen.draw_scrollback()
    assert screen.scrollback_undrawn == 0
    drawn: list[int] = []

    def counted(line: Any, cols: int) -> str:
        drawn.append(cols)
        return snapshot_ansi.scrollback_line(line, cols)

    def counted_runs(runs: Any) -> str:  # lines kept as their runs (`PlainRow`)
        drawn.append(0)
        return snapshot_ansi.runs_line(runs)

    monkeypatch.setattr(scrollback_module, "scrollback_line", counted)
    monkeypatch.setattr(scrollback_module, "runs_line", counted_runs)
    ahead = screen.snapshot().ansi
    assert drawn == []
    screen._screen.scrollback.drawn.clear()
    assert ahead == screen.snapshot().ansi
    assert len(drawn) == 100


_RUN_STYLES = [
    BLANK,
    BLANK._replace(fg="red"),
    BLANK._replace(bg="blue"),
    BLANK._replace(bold=True, underscore=True),
    BLANK._replace(reverse=True),
    BLANK._replace(link="id=1;https://example.com/"),
]


@pytest.mark.parametrize("seed", range(0, 300, 30))
def test_scrollback_lines_drawn_by_runs_match_cell_by_cell(seed: int) -> None:
    """`scrollback_line` draws all-ASCII lines a style run at a time; the cells it
    gives are those of the cell-by-cell drawing, blanks and trailing blanks included."""
    from ptyvisor.terminal import snapshot as snapshot_ansi

    for case in range(seed, seed + 30):
        r = random.Random(case)
        cols = r.randint(1, 30)
        line: dict[int, Cell] = {}
        for x in r.sample(range(cols), r.randint(0, cols)):
            line[x] = r.choice(_RUN_STYLES)._replace(data=r.choice("ab  Z~"))
        writer = snapshot_ansi._Writer()
        writer.style = snapshot_ansi._PLAIN
        assert snapshot_ansi._ascii_runs(writer, _as_line(line), cols)
        by_runs = snapshot_ansi.scrollback_line(_as_line(line), cols)
        cell_writer = snapshot_ansi._Writer()
        cell_writer.style = snapshot_ansi._PLAIN
        cell_writer.line(_as_line(line), cols)
        cell_writer.reset_pen()
        by_cells = "".join(cell_writer.out)
        shown = []
        for drawn in (by_runs, by_cells):
            term = HeadlessTerminal(cols, 2)
            term.feed(drawn.encode())
            shown.append([term.line(0), term._screen.cursor.attrs])
        assert shown[0] == shown[1], case


def test_scrollback_lines_with_wide_or_combined_cells_are_drawn_cell_by_cell() -> None:
    from ptyvisor.terminal import snapshot as snapshot_ansi

    for text in ("中文", "e\u0301", "👩\u200d💻"):
        term = HeadlessTerminal(10, 1, scrollback=5)
        term.feed(f"a{text}b\r\n".encode())
        writer = snapshot_ansi._Writer()
        assert not snapshot_ansi._ascii_runs(
            writer, term._screen.scrollback.cells_of(term._screen.scrollback[0]), 10
        )
        assert writer.out == []


def _as_line(cells: dict[int, Cell]) -> Any:
    from ptyvisor.terminal.rows import ScreenLine

    line = ScreenLine()
    line.update(cells)
    return line


@settings(max_examples=60, deadline=None)
@given(held=st.integers(0, 40), asked=st.integers(-1, 100))
def test_text_gives_the_last_scrollback_lines_asked_for(held: int, asked: int) -> None:
    """However many lines are asked for, they are the last ones held, at most all of
    them (asking for one more than was held once gave one line)."""
    terminal = HeadlessTerminal(20, 4, scrollback=1000)
    terminal.feed(b"".join(b"line %d\r\n" % n for n in range(held + 3)))
    history, rows = terminal.text(scrollback=asked)
    expected = [f"line {n}" for n in range(held)]
    assert history == (expected if asked < 0 else expected[max(held - asked, 0) :] if asked else [])
    assert rows[:3] == [f"line {n}" for n in range(held, held + 3)]
