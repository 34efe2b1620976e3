"""SGR: colours and attributes as the pen draws them."""

from __future__ import annotations

from ptyvisor.terminal.snapshot import Cell

from .support import CSI, make


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


# -- as the page's xterm.js draws it (issue 25) -------------------------------


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
