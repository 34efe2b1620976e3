"""What the terminal's tests share: a terminal fed some output, its text, everything a
snapshot must reproduce (read from the emulator's internals), and the round trip that
checks it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.terminal.charsets import Charsets
from ptyvisor.terminal.snapshot import BLANK, Cell

CAPTURED = Path(__file__).parent / "captured"
"""Raw output of real programs; the expected screen is what tmux showed."""
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
            s.charsets,
            s.cursor_style,
            s.reverse_video,
            sorted(x for x in s.tabstops if x < term.cols),  # no snapshot sets others
        ),
    }


def saved_slots(term: HeadlessTerminal) -> list[tuple[int, int, Cell, Charsets] | None]:
    # A row above the top (see `Screen.history_grows`) restores to the top, as row 0
    # does, and one below the bottom (left there by a resize) to the bottom.
    bottom = term.rows - 1
    return [
        None if v is None else (v.x, max(0, min(v.y, bottom)), v.attrs, v.charsets)
        for v in term._screen.saved
    ]


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
    "#@[\\]{|}~",
]
_FUZZ_TEXT += ["\n", "\b", "\x0e", "\x0f", "q", "\x00", "\x7f", "\x18", "\x85"]
_FUZZ_ESCAPES = [
    "7",
    "8",
    "D",
    "E",
    "M",
    "H",
    "=",
    ">",
    "(0",
    "(B",
    ")0",
    "(A",
    ")K",
    "(=",
    "(%",
    "#8",
    "c",
    "]2;t\x07",
]
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


def fuzz_token(r: random.Random) -> str:
    """One piece of a random stream: text, controls, escapes, modes, CSI sequences."""
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
