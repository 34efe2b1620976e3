"""Rows and the cells they are made of (terminal/rows.py) on their own: a sparse row
reads blank where nothing was drawn without storing it, a scrollback row kept as its
runs reads as the cells it stands for, and cells are shared per pen and character
within a bounded cache. The rows come from a program's output, so the runs here are
whatever text and styles a program can draw."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.terminal.rows import (
    EMPTY_LINE,
    PENS_KEPT,
    CellsOfPen,
    Pens,
    PlainRow,
    Runs,
    ScreenLine,
    new_buffer,
)
from ptyvisor.terminal.snapshot import BLANK, Cell

RED = Cell(" ", fg="red", bold=True)
LINK = Cell("?", fg="00ff87", bg="196", underscore=True, link=";https://example.org")


def test_a_sparse_line_reads_blank_where_nothing_was_drawn_and_stores_nothing() -> None:
    line = ScreenLine({2: Cell("x")})
    assert (line[0], line[2], line[500]) == (BLANK, Cell("x"), BLANK)
    assert dict(line) == {2: Cell("x")}, "a read is no write"
    assert (EMPTY_LINE[0], EMPTY_LINE[79], len(EMPTY_LINE)) == (BLANK, BLANK, 0)


def test_a_buffers_rows_are_made_when_first_used_and_each_its_own() -> None:
    first, second = new_buffer(), new_buffer()
    assert len(first) == 0
    first[3][0] = Cell("a")
    assert isinstance(first[3], ScreenLine) and first[4] is not first[3]
    assert (first[4][0], len(first[4])) == (BLANK, 0)
    assert 3 not in second and second[3][0] == BLANK


def test_a_plain_row_is_its_runs_text_cut_or_padded_to_the_width_asked() -> None:
    row = PlainRow([(RED, "make"), (BLANK, ": "), (LINK, "ok")])
    assert row.width == 8
    assert row.text(8) == "make: ok"
    assert row.text(5) == "make:"
    assert row.text(11) == "make: ok   "
    assert (PlainRow([]).width, PlainRow([]).text(3)) == (0, "   ")


def test_the_cells_of_a_pen_keep_its_style_and_link_not_its_character() -> None:
    cells = CellsOfPen(LINK)
    made = cells["a"]
    assert made == LINK._replace(data="a") and type(made) is Cell
    assert (made.data, made.fg, made.bg, made.link) == ("a", "00ff87", "196", LINK.link)
    assert cells["a"] is made, "drawing the same character again reuses the cell"
    assert cells[""] == LINK._replace(data="")  # a wide character's right half


def test_pens_share_one_cache_per_pen() -> None:
    pens = Pens()
    assert pens.cells(RED) is pens.cells(Cell(" ", fg="red", bold=True))
    assert pens.cells(RED) is not pens.cells(LINK)
    assert pens.cells(RED)["x"] == Cell("x", fg="red", bold=True)


def test_the_cache_of_pens_is_bounded_and_starts_over() -> None:
    """A program can draw in as many colours as it likes (truecolor): past
    ``PENS_KEPT`` pens the cache starts over rather than grow."""
    pens = Pens()
    first = pens.cells(RED)
    colours = iter(f"{n:06x}" for n in range(1, 1 << 24))
    for _ in range(PENS_KEPT - 1):
        pens.cells(Cell(" ", fg=next(colours)))
    assert pens.cells(RED) is first, "kept while there are no more than PENS_KEPT pens"
    for _ in range(PENS_KEPT + 1):
        pens.cells(Cell(" ", fg=next(colours)))
    again = pens.cells(RED)
    assert again is not first and again["x"] == Cell("x", fg="red", bold=True)


def test_a_row_of_runs_is_the_cells_they_were_drawn_in() -> None:
    pens = Pens()
    runs: Runs = [(RED, "ab"), (BLANK, ""), (LINK, "c")]
    row = pens.row_of(runs)
    assert dict(row) == {
        0: Cell("a", fg="red", bold=True),
        1: Cell("b", fg="red", bold=True),
        2: LINK._replace(data="c"),
    }
    assert isinstance(row, ScreenLine) and row[3] == BLANK
    assert pens.row_of([]) == {}
    # The same pen and character, in another row: the same cell object.
    assert pens.row_of([(RED, "b")])[0] is row[1]


def test_a_scrollback_lines_cells_whatever_it_was_kept_as() -> None:
    pens = Pens()
    drawn = ScreenLine({0: Cell("x")})
    assert pens.cells_of(drawn) is drawn
    kept = PlainRow([(RED, "hi")])
    assert pens.cells_of(kept) == pens.row_of(kept.runs)


PEN = st.builds(
    Cell,
    data=st.sampled_from([" ", "?", ""]),
    fg=st.sampled_from(["default", "red", "brightblue", "196", "ff8800"]),
    bg=st.sampled_from(["default", "black", "17", "000000"]),
    bold=st.booleans(),
    reverse=st.booleans(),
    link=st.sampled_from(["", ";https://example.org", "id=1;file:///tmp"]),
)
RUNS = st.lists(st.tuples(PEN, st.text(alphabet=string.printable[:95], max_size=12)), max_size=8)
"""What the plain-lines path keeps: one-cell ASCII text in the pens a program set."""


@given(RUNS, st.integers(1, 120))
def test_a_kept_row_reads_as_its_cells_would(runs: Runs, cols: int) -> None:
    """A snapshot draws a kept row from its runs, a search reads its text, and a
    resize makes its cells: all three must agree."""
    pens = Pens()
    kept = PlainRow(runs)
    row = pens.cells_of(kept)
    assert sorted(row) == list(range(kept.width))
    text = "".join(row[x].data for x in range(cols))
    assert kept.text(cols) == text
    x = 0
    for pen, part in runs:
        for char in part:
            assert row[x] == pen._replace(data=char)
            x += 1
