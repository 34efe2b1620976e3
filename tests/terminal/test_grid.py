"""Row edits (grid.py) on their own: whatever the edits, no wide character is left
cut in half, and inserting then deleting the same cells gives the row back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.terminal import grid
from ptyvisor.terminal.rows import ScreenLine, new_buffer
from ptyvisor.terminal.snapshot import BLANK, Cell

COLS = 12
RED = BLANK._replace(bg="red")


def row(text: str) -> ScreenLine:
    """``text`` from column 0; ``中`` is wide (a cell and a "" cell)."""
    line = ScreenLine()
    x = 0
    for char in text:
        if x >= COLS:
            break
        line[x] = Cell(char)
        if char == "中" and x + 1 < COLS:
            line[x + 1] = Cell("")
            x += 1
        elif char == "中":
            line[x] = Cell(" ")
        x += 1
    return line


def whole(line: ScreenLine) -> bool:
    """Every right half follows its wide character, and nothing is past the edge."""
    return all(x < COLS for x in line) and all(
        x > 0 and line[x - 1].data == "中" for x, cell in line.items() if cell.data == ""
    )


texts = st.text(alphabet="ab中", max_size=COLS)
edits = st.lists(
    st.tuples(
        st.sampled_from(["erase", "insert", "delete"]),
        st.integers(0, COLS - 1),
        st.integers(1, COLS),
        st.sampled_from([BLANK, RED]),
    ),
    max_size=8,
)


@given(text=texts, edits=edits)
def test_no_edit_leaves_half_a_wide_character(
    text: str, edits: list[tuple[str, int, int, Cell]]
) -> None:
    line = row(text)
    for edit, x, asked, blank in edits:
        count = min(asked, COLS - x)
        if edit == "erase":
            grid.erase(line, blank, x, x + count)
        elif edit == "insert":
            grid.insert_cells(line, blank, x, count, COLS)
        else:
            grid.delete_cells(line, blank, x, count, COLS)
        assert whole(line), (edit, x, count, dict(line))


@given(text=st.text(alphabet="ab", max_size=COLS), x=st.integers(0, COLS - 1), n=st.integers(1, 4))
def test_inserting_then_deleting_gives_the_row_back(text: str, x: int, n: int) -> None:
    line = row(text)
    kept = {k: c for k, c in line.items() if k < COLS - n}  # what the insert keeps
    grid.insert_cells(line, BLANK, x, min(n, COLS - x), COLS)
    grid.delete_cells(line, BLANK, x, min(n, COLS - x), COLS)
    assert {k: c for k, c in line.items() if k < COLS - n} == kept


def test_moving_rows_stays_inside_the_range() -> None:
    buffer = new_buffer()
    for y in range(6):
        buffer[y] = row(str(y))
    grid.move_rows(buffer, 1, 4, 2)  # down by two inside rows 1..4
    assert {y: line[0].data for y, line in buffer.items()} == {0: "0", 3: "1", 4: "2", 5: "5"}
    grid.move_rows(buffer, 1, 4, -3)
    assert {y: line[0].data for y, line in buffer.items()} == {0: "0", 1: "2", 5: "5"}
