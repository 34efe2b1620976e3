"""The scrollback: lines kept drawn for the next snapshot are what drawing afresh
gives, and its text is the last lines asked for."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.terminal.snapshot import BLANK, Cell


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

    def counted(line: Any, cols: int, wrapped: bool) -> snapshot_ansi.Drawn:
        drawn.append(cols)
        return snapshot_ansi.drawn_line(line, cols, wrapped)

    def counted_runs(runs: Any, wrapped: bool, width: int) -> snapshot_ansi.Drawn:  # as runs
        drawn.append(0)
        return snapshot_ansi.drawn_runs(runs, wrapped, width)

    monkeypatch.setattr(scrollback_module, "drawn_line", counted)
    monkeypatch.setattr(scrollback_module, "drawn_runs", counted_runs)
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
