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
