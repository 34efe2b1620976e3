"""Character sets: each set xterm.js knows draws what it draws there, in G0 or G1,
and a snapshot gives a fresh terminal the same sets, the saved cursor's included."""

from __future__ import annotations

import pytest

from ptyvisor.terminal.charsets import TABLES, Charsets

from .support import ESC, make, round_trip, text

ASCII_SWAPPED = "#@[\\]^_`{|}~"


@pytest.mark.parametrize(
    ("final", "drawn"),
    [
        ("A", "£@[\\]^_`{|}~"),  # British: only # differs (issue: drawn as # after attach)
        ("K", "#§ÄÖÜ^_`äöüß"),  # German
        ("=", "ùàéçêîèôäöüû"),  # Swiss: all twelve
        ("4", "£¾i½|^_`¨f¼\u00b4"),  # Dutch: xterm.js draws the first of "ij"
        ("0", "#@[\\]^_◆π≠£·"),  # DEC graphics (xterm.js leaves _ alone)
        ("B", ASCII_SWAPPED),
        ("X", ASCII_SWAPPED),  # unknown: ASCII, as xterm.js
    ],
)
def test_each_set_draws_in_g0_and_in_g1(final: str, drawn: str) -> None:
    g0 = make(f"{ESC}({final}{ASCII_SWAPPED}", cols=20)
    assert text(g0)[0] == drawn
    g1 = make(f"{ESC}){final}\x0e{ASCII_SWAPPED}\x0f{ASCII_SWAPPED}", cols=30)
    assert text(g1)[0] == drawn + ASCII_SWAPPED


def test_every_table_swaps_only_ascii_for_one_cell_characters() -> None:
    for final, table in TABLES.items():
        for code, drawn in table.items():
            assert 0x20 < code < 0x7F and len(drawn) == 1, final


@pytest.mark.parametrize("sets", [f"{ESC}(A", f"{ESC})0\x0e", f"{ESC}(K{ESC})A", f"{ESC})=\x0e"])
def test_a_snapshot_gives_the_sets_in_use_to_the_next_text(sets: str) -> None:
    """After a cold attach, what the program prints next is drawn as it is live."""
    live = make(f"before#{sets}after#", cols=40)
    attached = round_trip(live)
    for term in (live, attached):
        term.feed(b"\r\n#{|}~ ql")
    assert text(attached) == text(live)


def test_the_saved_cursor_keeps_its_sets_across_a_snapshot() -> None:
    """DECSC saves the sets (xterm and xterm.js): a DECRC after attach restores
    them as it does live, though the sets in use when attaching were others."""
    live = make(f"{ESC}(0{ESC}7{ESC}(Bplain", cols=20)
    attached = round_trip(live)
    for term in (live, attached):
        term.feed(f"{ESC}8q".encode())
    assert text(attached)[0] == text(live)[0] == "─lain"


def test_saved_on_the_alternate_screens_way_in_too() -> None:
    live = make(f"{ESC}(A{ESC}[?1049h{ESC}(Balt#", cols=20)
    attached = round_trip(live)
    for term in (live, attached):
        term.feed(f"{ESC}[?1049l#".encode())
    assert text(attached)[0] == text(live)[0] == "£"


def test_designations_outside_g0_and_g1_change_nothing() -> None:
    assert Charsets().designate("*", "0") == Charsets()
    assert Charsets(g0="A").replay() == f"{ESC}(A"
