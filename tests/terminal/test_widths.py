"""Cell widths (terminal/widths.py), the table xterm.js's Unicode 11 addon gives (the
page's own agreement is checked in Chromium by tests/web/test_widths.py): the fast
path for one-cell runs agrees with the table on every code point, and cutting a
text to a width never splits a wide character nor wastes a cell it could use."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from ptyvisor.terminal.widths import ONE_CELL_RUN, char_width, cut_to_width, text_width

TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)


def slow_width(text: str) -> int:
    return sum(max(char_width(char), 0) for char in text)


def test_the_one_cell_class_is_exactly_the_one_cell_code_points() -> None:
    wrong = [
        code
        for code in range(0x110000)
        if not 0xD800 <= code <= 0xDFFF
        and (ONE_CELL_RUN.fullmatch(chr(code)) is not None) != (char_width(chr(code)) == 1)
    ]
    assert not wrong, [hex(code) for code in wrong[:10]]


def test_known_widths() -> None:
    assert [char_width(c) for c in "a\u00e9"] == [1, 1]
    assert char_width("中") == char_width("\U0001f600") == 2  # CJK, an emoji of Unicode 6
    assert char_width("\u0301") == char_width("\u200d") == 0  # combining accent, ZWJ
    assert char_width("\x1b") == char_width("\x85") == char_width("\ufeff") == -1
    assert text_width("a中\u0301\x07b") == 4


@given(TEXT)
@example("ab\ufeffc")
@example("\x7fx")
def test_the_fast_path_agrees_with_the_table(text: str) -> None:
    assert text_width(text) == slow_width(text)


@given(TEXT, st.integers(0, 20), st.sampled_from(["…", "...", "", "中"]))
@example("中中中", 3, "…")
@example("abc", 0, "…")
@example("⺀", 1, "")  # a wide first character and no mark: nothing fits
def test_a_cut_fits_keeps_a_prefix_and_wastes_no_cell(text: str, width: int, mark: str) -> None:
    cut = cut_to_width(text, width, mark=mark)
    assert text_width(cut) <= width
    if text_width(text) <= width:
        assert cut == text
        return
    if cut == "" and (text_width(mark) > width or width == 0 == text_width(mark)):
        return
    assert cut.endswith(mark)
    kept = cut[: len(cut) - len(mark)]
    assert text.startswith(kept)
    following = text[len(kept)]
    assert text_width(kept + following) + text_width(mark) > width, "one more would fit"
