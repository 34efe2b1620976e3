"""A cold attach is the live view, checked against the page's own terminal: each
stream drawn raw into xterm.js (``@xterm/headless`` with the Unicode 11 widths, as the
page loads them) and, in a fresh one, the headless terminal's snapshot of it, must
leave the same cells, cursor, modes and buffer (issue 25). The streams are the real
programs' captures and seeded random ones, cut at random byte boundaries, with
random resizes, and a client that attaches at a random point of them."""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import pytest

from ..support import CAPTURED
from .support import (
    Case,
    Comparison,
    Step,
    XtermDriver,
    XtermUnavailable,
    chunked,
    compare,
    node_modules,
    snapshot_steps,
)

KNOWN_XTERM_FAULTS: dict[str, str] = {
    "\x1b[1J": "ED 1 on the bottom row throws in xterm.js 6.0.0 (it clears the wrapped flag of "
    "the row below, which does not exist) and the rest of that write is lost",
    "\x1b[S": "SU (CSI S) scrolls the top rows away in xterm.js; xterm and tmux keep them in the "
    "scrollback, as a line feed does, and so does the headless terminal",
    "\x1b8": "DECRC restores the character set in use in xterm.js but not the G0 and G1 "
    "designations that SI and SO choose between later (xterm restores them): the "
    "differential test compares the set in use only",
    "\x1b[u": "SCORC (CSI u) is the same restore as DECRC in xterm.js 6.0.0 (both call its "
    "restoreCursor), with the same fault: the set in use comes back, the G0 and G1 "
    "designations and the shift between them do not",
    "\u200d": "a zero-width joiner at a write boundary: xterm.js 6.0.0 with the Unicode 11 "
    "widths drops it when the emoji before it came in an earlier write, so what it draws "
    "depends on where the program's output was cut",
    "\x1b[23;0t": "xterm.js 6.0.0 keeps no title stack (CSI 22 t and 23 t do nothing): after a "
    "program pops the title it pushed (Copilot CLI at exit), xterm shows the title from "
    "before the push, xterm.js the last one set; the headless terminal follows xterm, so "
    "the title of a stream that pops one is not compared",
}
"""Where xterm.js draws a stream otherwise than a real terminal (xterm, tmux), the
headless terminal follows the real one; each such sequence is left out of the
generated streams, with the reason."""
ORIGIN_FAULT_MOVES = "ABCDEFG"
"""In origin mode xterm.js 6.0.0 moves the cursor down by the top margin on CUU, CUD,
CUF, CUB, CNL, CPL and CHA (its ``_moveCursor`` hands the absolute row to
``_setCursor``, which takes it as relative to the region); xterm keeps the row. The
generated streams make none of these moves while origin mode is set."""
LEAVING_RESTORES = "\x1b[?1049l"
"""Leaving the alternate screen so restores the cursor, through the same restore as
DECRC in xterm.js, with its fault (`KNOWN_XTERM_FAULTS`): the G0 and G1 designations
and the shift between them stay as the alternate screen left them. Once a stream that
has used character sets leaves that way, it designates and shifts no more, and its
shift is not compared, only the set in use (it keeps ``?1049`` itself, for the
alternate screen's sake)."""


@pytest.fixture(scope="module")
def xterm() -> Iterator[XtermDriver]:
    try:
        driver = XtermDriver(node_modules())
    except XtermUnavailable as failure:
        pytest.fail(str(failure))
    yield driver
    driver.close()


# --------------------------------------------------------------------------- streams

WORDS = ["def", "return", "await", "self", "session", "output", "client", "screen", "42", "None"]
WIDE = ["界面", "日本語", "🙂", "⚠️", "👍🏽"]  # no ZWJ sequences: see KNOWN_XTERM_FAULTS
COMBINING = ["e\u0301", "a\u0308\u0304", "n\u0303", "\u0301"]
SGR = [
    "0", "1", "2", "3", "4", "5", "7", "8", "9", "53", "22", "23", "24", "27", "39", "49",
    "31", "42", "93", "104", "1;32", "38;5;{i}", "48;5;{i}", "38;2;{r};{g};{b}",
    "48;2;{r};{g};{b}", "38:2:{r}:{g}:{b}", "38:2::{r}:{g}:{b}", "48:5:{i}", "4:3", "4:0",
]  # fmt: skip
PENDING_WRAP = ["", "\r", "\b", "y", "\x1b[K", "\x1b[1m", "\x1b7", "界", "\x1b[2b"]
"""What may follow a character written into the last column (the pending-wrap state)."""
MODES = ["?7", "4", "?6", "?25", "?1", "?2004", "?1000", "?1006", "?1049", "?47", "?1047", "20"]


def _text(rng: random.Random, cols: int) -> str:
    roll = rng.random()
    if roll < 0.1:
        return rng.choice(WIDE)
    if roll < 0.15:
        return rng.choice(COMBINING)
    if roll < 0.2:  # a line longer than the screen is wide: it wraps
        return " ".join(rng.choice(WORDS) for _ in range(cols // 3))
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))


def _sgr(rng: random.Random) -> str:
    params = ";".join(rng.choice(SGR) for _ in range(rng.randint(1, 2)))
    colours = {k: rng.randrange(256) for k in "irgb"}
    return f"\x1b[{params.format(**colours)}m"


def _pieces(rng: random.Random, cols: int, rows: int) -> dict[str, Callable[[], str]]:
    """What a program writes, by kind: each makes one piece."""
    y, x = rng.randint(1, rows), rng.randint(1, cols)
    n = rng.randint(0, 4)
    return {
        "text": lambda: _text(rng, cols),
        "controls": lambda: rng.choice(["\r\n", "\n", "\r", "\b", "\t", "\x07"]),
        "sgr": lambda: _sgr(rng),
        "position": lambda: f"\x1b[{y};{x}H",
        "pending wrap": lambda: f"\x1b[{y};{cols}H{rng.choice('#x')}{rng.choice(PENDING_WRAP)}",
        "moves": lambda: f"\x1b[{n or ''}{rng.choice('ABCDGdEF' if n == 0 else 'ABCDGd')}",
        "erase": lambda: f"\x1b[{rng.randint(0, 2)}{rng.choice('JK')}",
        "edit": lambda: f"\x1b[{n}{rng.choice('XP@LMTb')}",
        "margins": lambda: f"\x1b[{rng.randint(1, rows)};{rng.randint(1, rows)}r",
        "index": lambda: rng.choice(["\x1bM", "\x1bD", "\x1bE"]),
        "save": lambda: rng.choice(["\x1b7", "\x1b8", "\x1b[s", "\x1b[u"]),
        "charsets": lambda: rng.choice(["\x1b(A", "\x1b(0", "\x1b(B", "\x1b)0", "\x0e", "\x0f"]),
        "modes": lambda: f"\x1b[{rng.choice(MODES)}{rng.choice('hl')}",
        "tabs": lambda: rng.choice(["\x1bH", "\x1b[g", "\x1b[3g", "\x1b[2I", "\x1b[Z"]),
        "title": lambda: f"\x1b]2;title {n}\x07",
        "style": lambda: rng.choice(["\x1b[4 q", "\x1b]8;;http://x/\x1b\\a\x1b]8;;\x1b\\"]),
    }


KINDS = tuple(_pieces(random.Random(0), 10, 3))


def generated(seed: int, *, resizes: bool, kinds: Sequence[str] = KINDS) -> Case:
    """A random stream of ``kinds`` of pieces (none of `KNOWN_XTERM_FAULTS`), cut at
    random, perhaps resized, attached at a random point."""
    rng = random.Random(seed)
    cols, rows = rng.randint(8, 40), rng.randint(3, 12)
    pieces: list[str] = []
    charsets = restored = origin = False
    while len(pieces) < rng.randint(20, 200):
        table = _pieces(rng, cols, rows)
        kind = rng.choice(kinds)
        piece = table[kind]()
        if any(fault in piece for fault in KNOWN_XTERM_FAULTS):
            continue
        if kind == "charsets" and restored:  # see LEAVING_RESTORES
            continue
        if kind == "moves" and origin and piece[-1] in ORIGIN_FAULT_MOVES:
            continue
        if kind == "modes" and piece[2:-1] == "?6":
            origin = piece.endswith("h")
        charsets |= kind == "charsets"
        restored |= charsets and LEAVING_RESTORES in piece
        pieces.append(piece)
    steps: list[Step] = chunked("".join(pieces).encode(), rng, rng.randint(1, 12))
    if resizes:
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(steps))
            steps.insert(at, ("resize", rng.randint(4, 50), rng.randint(2, 14)))
    attach = rng.choice([-1, rng.randint(0, len(steps))])
    return Case(f"generated-{seed}", cols, rows, tuple(steps), attach)


def captured(path_name: str, seed: int) -> Case:
    """A real program's output (the size is in the file name), cut at random."""
    data = (CAPTURED / path_name).read_bytes()
    cols, rows = map(int, path_name.rsplit("-", 1)[1].removesuffix(".input").split("x"))
    rng = random.Random(seed)
    steps = chunked(data, rng, rng.randint(1, 40))
    attach = -1 if seed == 0 else rng.randint(0, len(steps))
    return Case(f"{path_name}-{seed}", cols, rows, tuple(steps), attach)


def run(xterm: XtermDriver, case: Case) -> Comparison:
    """The live view and the cold attach of ``case``, compared."""
    live = xterm.draw(case.cols, case.rows, case.steps)
    cols, rows, steps = snapshot_steps(case)
    cold = xterm.draw(cols, rows, steps)
    written = b"".join(step[1] for step in case.steps if step[0] == "write")
    if any(pop in written for pop in TITLE_POPS):  # see KNOWN_XTERM_FAULTS
        for drawn in (live, cold):
            drawn["state"].pop("title", None)
    if _restored_after_charsets(written):  # see LEAVING_RESTORES
        for drawn in (live, cold):
            drawn["state"]["charset"] = drawn["state"]["charset"][1:]  # the set in use only
    return compare(live, cold)


def _restored_after_charsets(written: bytes) -> bool:
    """``written`` leaves the alternate screen by `LEAVING_RESTORES` after a character
    set was designated or shifted: xterm.js's shift is then not xterm's."""
    used = [written.find(s) for s in (b"\x0e", b"\x0f", b"\x1b(", b"\x1b)")]
    first = min((at for at in used if at >= 0), default=-1)
    return first >= 0 and written.rfind(LEAVING_RESTORES.encode()) > first


TITLE_POPS = (b"\x1b[23;", b"\x1b[23t")


def check(xterm: XtermDriver, case: Case) -> None:
    result = run(xterm, case)
    assert result.exact, f"{case.name}: {result.equal}/{result.cells} cells equal\n" + "\n".join(
        result.differences
    )


CAPTURES = sorted(
    str(path.relative_to(CAPTURED))
    for path in [*CAPTURED.glob("*.input"), *CAPTURED.glob("agents/*.input")]
)
"""vim and less (tests/terminal/captured) and the agents' TUIs (captured/agents, recorded
by scripts/capture_agent_tuis.py)."""


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", CAPTURES)
def test_a_captured_program_attached_cold_is_the_live_view(
    xterm: XtermDriver, name: str, seed: int
) -> None:
    check(xterm, captured(name, seed))


def resized(case: Case, seed: int) -> Case:
    """``case`` with one or two resizes somewhere in it (a window dragged, a phone and
    a desktop taking turns), attached at a random point."""
    rng = random.Random(seed)
    steps = list(case.steps)
    for _ in range(rng.randint(1, 2)):
        size = ("resize", rng.randint(20, case.cols + 40), rng.randint(5, case.rows + 10))
        steps.insert(rng.randint(0, len(steps)), size)
    attach = rng.choice([-1, rng.randint(0, len(steps))])
    return Case(f"{case.name}-resized", case.cols, case.rows, tuple(steps), attach)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("name", CAPTURES)
def test_a_captured_program_resized_and_attached_cold_is_the_live_view(
    xterm: XtermDriver, name: str, seed: int
) -> None:
    """The page's terminal reflows the main screen's lines on a width change and moves
    rows to and from the scrollback on a height change; the headless terminal does
    the same, and a snapshot gives the client rows that reflow alike after it."""
    check(xterm, resized(captured(name, seed), seed * 7 + 1))


RESIZED_KINDS: dict[str, tuple[int, int, tuple[Step, ...], tuple[int, ...]]] = {
    "the main screen's cursor row under the alternate screen, shorter": (
        11,
        8,
        (("write", b"main\x1b[7;11H\x1b[?47h", None), ("resize", 42, 4),
         ("write", b"\x1b[?47l", None)),
        (),
    ),
    "the alternate screen narrowed and widened again": (
        30,
        4,
        (("write", b"\x1b[?1049hhello world and more\r\nline two", None), ("resize", 8, 4),
         ("resize", 20, 4)),
        (2,),  # attached while narrower: see below
    ),
    "a wide character wrapped from the last column, then wider": (
        34,
        10,
        (("write", "\x1b[10;34H界\x1b[1;34H\x1b[31m界\x1b[m\x1b[H".encode(), None),
         ("resize", 39, 12)),
        (),
    ),
}  # fmt: skip
"""Resizes found by the generated streams: (size, steps, attach points left out),
attached cold at every other step boundary. A snapshot taken while the alternate
screen is narrower cannot carry the cells xterm.js keeps past the edge and shows again
on widening (xterm does the same): the client's terminal has no such cells."""


@pytest.mark.parametrize("kind", RESIZED_KINDS)
def test_each_resized_kind_is_the_live_view(xterm: XtermDriver, kind: str) -> None:
    cols, rows, steps, cannot = RESIZED_KINDS[kind]
    for attach in range(len(steps) + 1):
        if attach not in cannot:
            check(xterm, Case(f"{kind} attached at {attach}", cols, rows, steps, attach))


ISSUE_KINDS = {
    "REP": "ab\x1b[3bc",
    "UK character set": "\x1b(Aa#b\x1b(B#",
    "combining marks": "e\u0301 a\u0308\u0304\r\n\u0301x",
    "pending wrap, CR": "\x1b[1;10Hx\r",
    "pending wrap, EL": "\x1b[1;10Hx\x1b[K",
    "pending wrap, ED": "\x1b[1;10Hx\x1b[J",
    "pending wrap, ECH": "\x1b[1;10Hx\x1b[X",
    "pending wrap, ICH": "\x1b[1;10Hx\x1b[@",
    "pending wrap, SGR": "\x1b[1;10Hx\x1b[1m",
    "pending wrap, DECSC": "\x1b[1;10Hx\x1b7\x1b[3;3Hq",
    "pending wrap, tab": "\x1b[1;10Hx\t",
    "pending wrap, autowrap off": "\x1b[1;10Hx\x1b[?7l",
    "38:2:r:g:b": "\x1b[38:2:255:0:0mred\x1b[48:2:1:2:3mbg\x1b[38:2::1:2:3mcs",
    "blank last-column cell": "\x1b[2;1H\x1b[7m         \x1b[1m \x1b[m",
    "wide character at the edge": "\x1b[1;10H界x\r\nabcdefghi界",
    "wide character at the edge, in a pen": "\x1b[1;10H\x1b[4;31;7m界x\x1b[m",
    "region at the top": "top\r\n\x1b[1;3r\x1b[3;1Ha\nb\nc\nd\x1b[r",
    # Found by the generated streams since:
    "wide character cut in half by a print": "界界\x1b[1;2H\x1b[4;42mx\x1b[m",
    "wide character cut in half by an erase": "界界\x1b[44m\x1b[1;2H\x1b[X\x1b[m",
    "1049 over another alternate screen": "\x1b[?1047h\x1b[2;6H\x1b[?1049hz",
    "a region left on the alternate screen": "\x1b[?47h\x1b[2;3r\x1b[?47l\x1b[?47h\nx",
}
"""Issue 25's kinds of sequences, each drawn live and cold at 10x4, cut at every byte."""


@pytest.mark.parametrize("kind", ISSUE_KINDS)
def test_each_kind_in_issue_25_is_the_live_view_cut_anywhere(xterm: XtermDriver, kind: str) -> None:
    data = ISSUE_KINDS[kind].encode()
    for cut in range(len(data) + 1):
        steps: tuple[Step, ...] = (("write", data[:cut], None), ("write", data[cut:], None))
        check(xterm, Case(f"{kind} cut at {cut}", 10, 4, steps, attach=1))


GENERATED = 1000
FLOORS = {False: (1000, 1.0), True: (988, 0.9988)}
"""Generated streams without and with resizes: the cases exact and the share of cells
equal that must not fall (a ratchet: raise them as what still differs is fixed). With
200 streams both were exact; these 1000 found more (the cases added to `ISSUE_KINDS`
and `RESIZED_KINDS` since). What still differs (12, each shrunk with
scripts/minimize_fidelity.py and read against xterm.js 6.0.0) comes with resizes
only. 9 are state xterm.js keeps past the edge of a screen made smaller, which no
snapshot can set and a client attached then sees again when the screen grows: tab
stops (4); a saved cursor row below the screen or up in the scrollback (3: xterm.js
counts it from the top of the scrollback and clamps it only when it is used); the
cells of the cursor's wrapped line past the narrower width (1: xterm.js does not
reflow the cursor's line, ``reflowCursorLine``, so that line keeps its old width
until the cursor leaves it and a later resize reflows it whole); the alternate
screen's cells (1, see `RESIZED_KINDS`). 3 are an xterm.js fault: its alternate
buffer never shrinks, so once made shorter it keeps rows that scroll off its top
and brings them back when it grows taller (xterm's alternate screen has no such
rows). The test checks each one for those two causes (`why_it_may_differ`): a stream
that differs otherwise fails it whatever the floor. Before reflow (the first 200,
with resizes): 144 exact, 98.0% of cells."""


PAST_THE_EDGE = "state past the edge"
SHORTER_ALTERNATE = "the alternate buffer never shrinks"


def why_it_may_differ(xterm: XtermDriver, case: Case) -> str | None:
    """Which of the two causes no snapshot can help a differing ``case`` may have, or
    None. Past the edge: at the attach, everything xterm.js shows is equal, which rows
    wrap included, and the rest of the stream without its resizes is exact too (so no
    unseen state a snapshot sets, such as the character REP repeats, is wrong); the
    difference comes from what xterm.js keeps unseen past a smaller screen's edge (tab
    stops, a saved cursor row, a row's cells) and shows on growing. The xterm.js
    fault: the stream made the screen shorter while the alternate screen showed, or
    before it did, and that buffer kept its rows."""
    before, after = case.split()
    at_attach = run(xterm, replace(case, steps=before, attach=-1))
    unresized = replace(case, steps=(*before, *(s for s in after if s[0] != "resize")))
    if (
        at_attach.exact
        and not at_attach.wrapped
        and len(unresized.steps) < len(case.steps)
        and run(xterm, unresized).exact
    ):
        return PAST_THE_EDGE
    written, shrunk = b"", []  # the stream's bytes; where the screen got shorter
    rows = case.rows
    for kind, data, height in case.steps:
        if kind == "write" and isinstance(data, bytes):
            written += data
        elif isinstance(height, int):
            if height < rows:
                shrunk.append(len(written))
            rows = height
    alternate = [
        (m.start(), m.group(2) == b"h")
        for m in re.finditer(rb"\x1b\[\?(47|1047|1049)([hl])", written)
    ]
    for at in shrunk:
        shown_then = next((on for pos, on in reversed(alternate) if pos < at), False)
        if shown_then or any(on and pos >= at for pos, on in alternate):
            return SHORTER_ALTERNATE
    return None


def test_a_fault_of_the_snapshot_is_not_explained_away(
    xterm: XtermDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`why_it_may_differ` names no cause for a snapshot that draws a wrong cell, with
    a resize after the attach and a shorter screen (without the alternate one)."""
    this = sys.modules[__name__]
    real = this.snapshot_steps

    def one_cell_wrong(case: Case) -> tuple[int, int, list[Step]]:
        cols, rows, (first, *rest) = real(case)
        assert isinstance(first[1], bytes) and b"hello" in first[1]
        return cols, rows, [("write", first[1].replace(b"hello", b"hallo"), None), *rest]

    steps: tuple[Step, ...] = (("write", b"hello", None), ("resize", 8, 3), ("resize", 9, 5))
    case = Case("a wrong cell", 10, 4, steps, attach=2)
    assert run(xterm, case).exact and why_it_may_differ(xterm, case) == PAST_THE_EDGE
    monkeypatch.setattr(this, "snapshot_steps", one_cell_wrong)
    assert not run(xterm, case).exact and why_it_may_differ(xterm, case) is None


@pytest.mark.parametrize("resizes", [False, True], ids=["unresized", "resized"])
def test_generated_streams_attached_cold_stay_as_close_to_the_live_view(
    xterm: XtermDriver, resizes: bool
) -> None:
    cases = [generated(seed, resizes=resizes) for seed in range(GENERATED)]
    results = [run(xterm, case) for case in cases]
    # Every stream that differs has one of the causes no snapshot can help: what else
    # differs is a fault of the snapshot (or a new fault of xterm.js, to be listed).
    unexplained = [
        f"{case.name}: {result.differences[:2]}"
        for case, result in zip(cases, results, strict=True)
        if not result.exact and why_it_may_differ(xterm, case) is None
    ]
    assert not unexplained, unexplained[:10]
    exact = sum(result.exact for result in results)
    share = sum(r.equal for r in results) / max(1, sum(r.cells for r in results))
    wrapped = sum(result.wrapped for result in results)
    print(
        f"resizes={resizes}: {exact}/{GENERATED} exact, {share:.3%} of cells equal, "
        f"{wrapped} rows equal but for their wrapped flag (reflow's input, not compared)"
    )
    floor_exact, floor_share = FLOORS[resizes]
    assert exact >= floor_exact and share >= floor_share, [
        f"{seed}: {results[seed].differences[:2]}"
        for seed in range(GENERATED)
        if not results[seed].exact
    ][:10]
