"""The parser: OSC and the control strings (DCS, APC, PM, SOS) consumed whole or
abandoned at a bound, sequences it ignores, query replies, and feeds split at any
byte (random streams included) giving the screen of the whole feed."""

from __future__ import annotations

import random

import pytest

from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.terminal.snapshot import Cell

from .support import CSI, ESC, fuzz_token, make, round_trip, state, text

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


def test_colon_sgr_forms_are_applied_not_printed() -> None:
    term = make(f"{CSI}38:2::255:0:0;48:5:17;4:3mX{CSI}4:0;38:2:1:2:3mY{CSI}58:2::1:2:3mZ")
    x, y, z = term.line(0)[:3]
    assert (x.data, x.fg, x.bg, x.underscore) == ("X", "ff0000", "17", True)
    # 38:2:1:2:3 is colour space 1, then green and blue: as the page's xterm.js reads it.
    assert (y.data, y.fg, y.underscore) == ("Y", "020300", False)
    assert z.data == "Z"
    assert text(term)[0] == "XYZ"


def test_kitty_keyboard_and_other_private_sequences_are_ignored() -> None:
    term = make(f"{CSI}>1u{CSI}<u{CSI}=1;1u{CSI}?u{CSI}>q{CSI}=c{CSI}?4m{CSI}0%mok")
    assert text(term)[0] == "ok"
    assert term.line(0)[0] == Cell("o")


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


# -- deterministic fuzzing -------------------------------------------------------


@pytest.mark.parametrize("seed", range(0, 400, 40))
def test_fuzz_split_feeds_and_round_trips(seed: int) -> None:
    """Random sequences: no exception, byte-by-byte equals whole, snapshots replay."""
    for case in range(seed, seed + 40):
        r = random.Random(case)
        data = "".join(fuzz_token(r) for _ in range(r.randint(5, 100))).encode()
        cols, rows = r.choice([(20, 6), (10, 4), (30, 10), (5, 3)])
        whole = make(data, cols=cols, rows=rows, scrollback=50)
        split = HeadlessTerminal(cols, rows, scrollback=50)
        for byte in data:
            split.feed(bytes([byte]))
        assert state(split) == state(whole), case
        if r.random() < 0.3:
            whole.resize(r.randint(1, 40), r.randint(1, 12))
        round_trip(whole)


# -- as the page's xterm.js draws it (issue 25) -------------------------------


def test_rep_and_combining_marks_act_only_right_after_a_printed_character() -> None:
    # Any control or sequence in between: REP repeats nothing, a mark takes a cell.
    term = make(f"ab{CSI}2b{CSI}2b|x{CSI}1m{CSI}2b|e{CSI}1m\u0301|\r\n\u0301")
    assert text(term)[0] == "abbb|x|e\u0301|"
    assert [term.line(0)[x].data for x in (7, 8)] == ["e", "\u0301"]
    assert term.line(1)[0].data == "\u0301"
