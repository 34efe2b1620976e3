"""Snapshots: fed into a fresh terminal they reproduce the screen cell by cell
(modes, pen, saved cursors, scrollback and hyperlinks included)."""

from __future__ import annotations

import pytest

from .support import CSI, ESC, make, round_trip, text

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


# -- as the page's xterm.js draws it (issue 25) -------------------------------


def saved_round_trip(term_cols: int, data: str, rows: int = 3) -> tuple[object, object]:
    """The saved cursor of a terminal fed ``data``, and of one fed its snapshot."""
    term = make(data, cols=term_cols, rows=rows)
    again = make(term.snapshot().ansi, cols=term_cols, rows=rows)
    return term._screen.saved[0], again._screen.saved[0]


def test_a_cursor_saved_in_the_pending_wrap_state_is_saved_so_by_the_snapshot() -> None:
    saved, again = saved_round_trip(10, f"{CSI}1;10Hx{ESC}7{CSI}2;1Hz")
    assert saved == again
    assert getattr(saved, "x", None) == 10


def test_a_snapshot_ends_with_the_last_character_so_rep_and_marks_still_join_it() -> None:
    ansi = make("ab").snapshot().ansi
    assert text(make(ansi + f"{CSI}2b"))[0] == "abbb"
    assert make(ansi + "\u0301").line(0)[1].data == "b\u0301"
