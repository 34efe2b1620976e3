"""The fast forward through plain floods (`ptyvisor.terminal.fast_forward`) gives exactly the
terminal that parsing every byte gives: screen, scrollback, cursor, pen, modes and
the character REP repeats, on random streams and on real programs' output."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptyvisor.terminal import HeadlessTerminal, fast_forward

from .support import CAPTURED, fuzz_token, state

CSI = "\x1b["
WORDS = ["error", "info", "a", "中文", "é\u0301", "👩\u200d💻", "⚠️", "x" * 30, "\t", "q\bp", " "]
SGRS = ["0", "", "1", "31", "1;32", "38;5;208", "48;2;1;2;3", "4:3", "7", "22;39"]


def words_and_colours(r: random.Random, words: list[str], sgrs: list[str], most: int) -> str:
    """Up to ``most`` of ``words``, three in ten after an SGR of ``sgrs``."""
    parts = []
    for _ in range(r.randint(0, most)):
        if r.random() < 0.3:
            parts.append(f"{CSI}{r.choice(sgrs)}m")
        parts.append(r.choice(words))
    return "".join(parts)


def plain_line(r: random.Random, cols: int) -> str:
    """A line of a plain flood: words, colours, wide and combining characters, tabs,
    backspaces, a carriage return that overwrites, sometimes longer than the screen."""
    parts = [words_and_colours(r, WORDS, SGRS, 8)]
    if r.random() < 0.05:
        parts.append("w" * r.randint(cols, 3 * cols))  # wraps
    if r.random() < 0.1:
        parts.append("\rover")
    ending = "\n" if r.random() < 0.05 else "\r\n"  # a bare LF: a staircase
    return "".join(parts) + ending


def flood(r: random.Random, cols: int, size: int) -> str:
    lines = []
    total = 0
    while total < size:
        lines.append(plain_line(r, cols))
        total += len(lines[-1].encode())
    return "".join(lines)


def parsed_whole(data: bytes, cols: int, rows: int, scrollback: int) -> HeadlessTerminal:
    term = HeadlessTerminal(cols, rows, scrollback=scrollback)
    term.feed(data)
    return term


def parsed_in_pieces(data: bytes, cols: int, rows: int, scrollback: int) -> HeadlessTerminal:
    """Below `fast_forward.MIN_BYTES` per feed: every byte is parsed."""
    term = HeadlessTerminal(cols, rows, scrollback=scrollback)
    for offset in range(0, len(data), 4096):
        term.feed(data[offset : offset + 4096])
    assert term.fast_forwarded == 0
    return term


def assert_same(fast: HeadlessTerminal, slow: HeadlessTerminal) -> None:
    assert state(fast) == state(slow)
    assert list(fast.scrollback) == list(slow.scrollback)
    assert fast.snapshot() == slow.snapshot()
    # What REP repeats, and the pen, show in what is drawn next.
    for term in (fast, slow):
        term.feed(f"{CSI}3bZ\r\n".encode())
    assert state(fast) == state(slow)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    cols=st.integers(2, 40),
    rows=st.integers(1, 12),
    scrollback=st.sampled_from([0, 1, 7, 50]),
    graphics=st.booleans(),
)
def test_a_plain_flood_fast_forwards_to_the_same_terminal(
    seed: int, cols: int, rows: int, scrollback: int, graphics: bool
) -> None:
    r = random.Random(seed)
    # Anything before the flood (modes, margins reset, a charset), the flood, then
    # anything after it, including REP and cursor moves.
    before = "".join(fuzz_token(r) for _ in range(r.randint(0, 30)))
    # The main screen's region: each screen keeps its own (`Screen.other_layout`).
    before += "\x1b\\" + f"{CSI}?1049l{CSI}r" + ("\x1b(0" if graphics else "\x1b(B")
    after = "".join(fuzz_token(r) for _ in range(r.randint(0, 30)))
    data = (before + flood(r, cols, fast_forward.MIN_BYTES + 2000) + after).encode()
    fast = parsed_whole(data, cols, rows, scrollback)
    assert fast.fast_forwarded > 0, "the flood was not fast-forwarded"
    assert_same(fast, parsed_in_pieces(data, cols, rows, scrollback))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), cols=st.integers(2, 30), rows=st.integers(1, 8))
def test_a_flood_with_anything_inside_gives_the_same_terminal(
    seed: int, cols: int, rows: int
) -> None:
    """Any sequence in the flood (a cursor move, a margin, a bell) limits or stops the
    fast forward; the result is the same whatever it decides."""
    r = random.Random(seed)
    data = flood(r, cols, fast_forward.MIN_BYTES + 2000)
    cut = r.randrange(len(data))
    noise = "".join(fuzz_token(r) for _ in range(r.randint(1, 5)))
    raw = (data[:cut] + noise + data[cut:]).encode()
    assert_same(parsed_whole(raw, cols, rows, 20), parsed_in_pieces(raw, cols, rows, 20))


def test_real_programs_and_a_log_give_the_same_terminal() -> None:
    r = random.Random(7)
    programs = b"".join(path.read_bytes() for path in sorted(CAPTURED.glob("*.input")))
    assert programs, "tests/terminal/captured holds no program output"
    log = flood(r, 80, 200_000).encode()
    # vim and less (TUIs: never skipped; their captures end on the alternate
    # screen, so they leave it as on exit), a log, then the TUIs again on top.
    leave = b"\x1b[?1049l\x1b[r"
    data = programs + leave + log + programs + leave + log[:70_000] + programs
    fast = parsed_whole(data, 80, 24, 1000)
    assert fast.fast_forwarded > 0
    assert_same(fast, parsed_in_pieces(data, 80, 24, 1000))


@pytest.mark.parametrize(
    "blocker",
    [f"{CSI}2;5r", f"{CSI}?1049h", "\x1b]0;title", "\x1b[1"],
    ids=["margins", "alternate screen", "unfinished OSC", "unfinished CSI"],
)
def test_no_fast_forward_from_an_unclean_state(blocker: str) -> None:
    """Partial scrolling regions and the alternate screen keep no scrollback the same
    way; a sequence left open would swallow the first bytes."""
    term = HeadlessTerminal(40, 10, scrollback=20)
    term.feed(blocker.encode())
    term.feed(flood(random.Random(1), 40, fast_forward.MIN_BYTES + 2000).encode())
    assert term.fast_forwarded == 0


def test_the_rendered_part_is_the_flood_tail() -> None:
    """Only what can still be seen is parsed: the screen plus the scrollback."""
    lines = "".join(f"line {i}\r\n" for i in range(20_000)).encode()
    term = parsed_whole(lines, 40, 10, 100)
    assert len(lines) - term.fast_forwarded < 2_000
    assert term.display[-2].rstrip() == "line 19999"
    assert [line.rstrip() for line in term.scrollback] == [f"line {i}" for i in range(19891, 19991)]


@pytest.mark.parametrize(
    "flood_text",
    [
        # The pen set in the skipped part, never reset after it.
        "\x1b[1;38;5;208m" + "".join(f"{i} \x1b[4m{i}\r\n" for i in range(12000)),
        # The character REP repeats drawn only in the skipped part: then blank lines.
        "".join(f"{i}中\r\n" for i in range(12000)) + "\r\n" * 200,
        "".join(f"{i}x\r\n" for i in range(12000)) + "\r\n" * 200,
    ],
    ids=["pen", "wide REP", "REP"],
)
def test_the_pen_and_rep_survive_the_skipped_part(flood_text: str) -> None:
    data = flood_text.encode()
    fast = parsed_whole(data, 30, 6, 100)
    assert fast.fast_forwarded > 0
    assert_same(fast, parsed_in_pieces(data, 30, 6, 100))


def _per_character(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every terminal draw character by character, as pyte does: no runs."""
    from ptyvisor.terminal import screen

    def draw(self: screen.Screen, data: str) -> None:
        if self.table is not None:
            data = data.translate(self.table)
        self._draw_unicode(data)

    monkeypatch.setattr(screen.Screen, "draw", draw)


@pytest.mark.parametrize("seed", range(0, 200, 40))
def test_fast_paths_give_the_screen_of_the_per_character_path(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of one-cell characters drawn in bulk and fast-forwarded floods, against
    drawing one character at a time with nothing skipped: random sequences mixed
    with text in many scripts and widths, real programs' output, and a plain flood."""
    programs = b"".join(path.read_bytes() for path in sorted(CAPTURED.glob("*.input")))
    streams: list[tuple[object, bytes, tuple[int, int]]] = []
    for case in range(seed, seed + 40):
        r = random.Random(case)
        tokens = [
            fuzz_token(r) if r.random() < 0.5 else r.choice(WORDS) + "│αβ✓→ٴ"[: r.randint(0, 6)]
            for _ in range(r.randint(5, 120))
        ]
        streams.append((case, "".join(tokens).encode(), r.choice([(20, 6), (7, 3), (40, 10)])))
    leave = b"\x1b[?1049l\x1b[r"
    flood_bytes = flood(random.Random(seed), 40, fast_forward.MIN_BYTES + 5000).encode()
    streams.append(("programs and a flood", programs + leave + flood_bytes + programs, (80, 24)))
    fast = [(name, parsed_whole(data, cols, rows, 50)) for name, data, (cols, rows) in streams]
    _per_character(monkeypatch)
    for (name, data, (cols, rows)), (_, whole) in zip(streams, fast, strict=True):
        slow = parsed_in_pieces(data, cols, rows, 50)
        assert state(whole) == state(slow), name
        assert list(whole.scrollback) == list(slow.scrollback), name
    assert fast[-1][1].fast_forwarded > 0


NOT_PLAIN_SPELLED_OUT = re.compile(
    rb"[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]|\xc2[\x80-\x9f]|\x1b(?!\[[0-9:;]*m)"
)
"""What `fast_forward._NOT_PLAIN` must match: its docstring's rules, the slow way."""


@settings(max_examples=500, deadline=None)
@given(
    st.binary(max_size=64)
    | st.lists(
        st.sampled_from([b"\x1b", b"\xc2", b"\x85", b"[", b"1", b";", b"m", b"\x07", b"a", b"\n"])
    ).map(b"".join)
)
def test_the_fast_not_plain_pattern_is_the_spelled_out_one(data: bytes) -> None:
    def spans(pattern: re.Pattern[bytes]) -> list[tuple[int, int]]:
        return [m.span() for m in pattern.finditer(data)]

    assert spans(fast_forward._NOT_PLAIN) == spans(NOT_PLAIN_SPELLED_OUT)
