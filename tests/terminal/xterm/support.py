"""xterm.js itself, as the web page draws with it, for the differential test
(`test_fidelity`): a byte stream drawn live and the snapshot of it drawn cold
must leave the page's terminal in the same state, cell by cell.

`XtermDriver` keeps one Node process (``driver.js``) with the pinned
``@xterm/headless`` and ``@xterm/addon-unicode11`` that ``scripts/install_xterm_headless.sh``
installs; `compare` tells two of its answers apart; `Case` is one stream with its
chunk boundaries, resizes and the point where a client attaches.
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import selectors
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptyvisor.terminal import HeadlessTerminal

from ...agents.clis.installed import ROOT, installed_bin_dir

INSTALL_SCRIPT = ROOT / "scripts" / "install_xterm_headless.sh"
DRIVER = Path(__file__).with_name("driver.js")
ANSWER_TIMEOUT = 60.0
SCROLLBACK = 1000
"""The headless terminal's default; both xterm.js terminals keep as many lines."""

Step = tuple[str, Any, Any]
"""``("write", bytes, None)`` or ``("resize", cols, rows)``."""


class XtermUnavailable(RuntimeError):
    """The pinned xterm.js could not be installed or started."""


def node_modules() -> Path:
    """Install (a no-op when cached) and return the ``node_modules`` folder."""
    return installed_bin_dir(INSTALL_SCRIPT, "@xterm/headless", XtermUnavailable).parent


class XtermDriver:
    """One long-lived ``node driver.js``: a request per line, an answer per line
    (a process per case would cost more than the case)."""

    def __init__(self, modules: Path) -> None:
        self._process = subprocess.Popen(
            ["node", str(DRIVER), str(modules)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._selector = selectors.DefaultSelector()
        assert self._process.stdout is not None
        self._selector.register(self._process.stdout, selectors.EVENT_READ)

    def draw(self, cols: int, rows: int, steps: Sequence[Step]) -> dict[str, Any]:
        """A fresh terminal of ``cols`` x ``rows``, ``steps`` applied in order: its state."""
        wire = [
            ["write", base64.b64encode(a).decode()] if kind == "write" else [kind, a, b]
            for kind, a, b in steps
        ]
        request = {"cols": cols, "rows": rows, "scrollback": SCROLLBACK, "steps": wire}
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request).encode() + b"\n")
        self._process.stdin.flush()
        if not self._selector.select(ANSWER_TIMEOUT):
            raise XtermUnavailable(f"driver.js gave no answer in {ANSWER_TIMEOUT} s")
        line = self._process.stdout.readline()
        if not line:
            assert self._process.stderr is not None
            raise XtermUnavailable(f"driver.js exited: {self._process.stderr.read()!r}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise XtermUnavailable(answer["error"])
        return answer

    def close(self) -> None:
        """End the process (it exits when its input does) and close its pipes."""
        self._selector.close()
        for pipe in (self._process.stdin, self._process.stdout, self._process.stderr):
            if pipe is not None:
                pipe.close()
        self._process.wait(timeout=10)


# --------------------------------------------------------------------------- a case


@dataclass(frozen=True)
class Case:
    """A stream as a program writes it: chunks (the reads the server sees) with resizes
    between them, and after how many steps a client attaches cold."""

    name: str
    cols: int
    rows: int
    steps: tuple[Step, ...]
    attach: int = -1
    """Steps drawn before the snapshot is taken; -1: all of them."""

    def split(self) -> tuple[tuple[Step, ...], tuple[Step, ...]]:
        at = len(self.steps) if self.attach < 0 else self.attach
        return self.steps[:at], self.steps[at:]


def chunked(data: bytes, rng: random.Random, pieces: int) -> list[Step]:
    """``data`` cut at random byte boundaries (inside UTF-8 and sequences too)."""
    cuts = sorted(rng.sample(range(1, len(data)), min(pieces, len(data) - 1))) if data else []
    bounds = [0, *cuts, len(data)]
    return [("write", data[a:b], None) for a, b in itertools.pairwise(bounds) if b > a]


def snapshot_steps(case: Case) -> tuple[int, int, list[Step]]:
    """What a client attaching cold draws: the size and snapshot the headless terminal
    gives after the first steps, then the rest of the stream as the live one gets it."""
    before, after = case.split()
    term = HeadlessTerminal(case.cols, case.rows, scrollback=SCROLLBACK)
    fed = b""
    for kind, a, b in before:
        if kind == "write":
            term.feed(a)
            fed += a
        else:
            term.resize(a, b)
    snap = term.snapshot()
    # Bytes of an unfinished UTF-8 character are not in the snapshot: sent again.
    resent = fed[len(fed) - term.undecoded :] if term.undecoded else b""
    steps: list[Step] = [("write", snap.ansi.encode() + resent, None), *after]
    return snap.cols, snap.rows, steps


# --------------------------------------------------------------------------- comparing


@dataclass
class Comparison:
    """How a cold attach's terminal differs from the live one."""

    cells: int = 0
    equal: int = 0
    differences: list[str] = field(default_factory=list)
    wrapped: int = 0
    """Rows whose cells are equal but not whether they continue the row above: no
    cell shows it, only a later reflow (a resize) does; not part of `exact`."""

    @property
    def exact(self) -> bool:
        return not self.differences


def _cells(line: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [tuple(run[1:]) for run in line["runs"] for _ in range(run[0])]


def _differing(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in a.items() if b.get(key) != value}


def compare(live: dict[str, Any], cold: dict[str, Any], *, limit: int = 6) -> Comparison:
    """Cell by cell over the screen and the scrollback (aligned at the screen), then
    the cursor, the active buffer and the state the next bytes draw with."""
    result = Comparison()
    notes = result.differences

    def note(text: str) -> None:
        if len(notes) < limit:
            notes.append(text)
        elif len(notes) == limit:
            notes.append("...")

    for key in ("cols", "rows", "buffer", "cursor"):
        if live[key] != cold[key]:
            note(f"{key}: live {live[key]} cold {cold[key]}")
    for name in ("normal", "alternate"):
        a, b = live[name] or [], cold[name] or []
        if name == "alternate":
            # The screen only: xterm.js 6.0 keeps rows above it in an alternate buffer
            # resized before its first use (no real terminal's has a scrollback).
            a, b = a[-live["rows"] :], b[-cold["rows"] :]
        if len(a) != len(b):
            note(f"{name}: live {len(a)} lines, cold {len(b)}")
        for back in range(1, max(len(a), len(b)) + 1):
            row = live["rows"] - back  # negative: a scrollback line
            la = _cells(a[-back]) if back <= len(a) else []
            lb = _cells(b[-back]) if back <= len(b) else []
            width = max(len(la), len(lb))
            result.cells += width
            same = sum(1 for x, y in zip(la, lb, strict=False) if x == y)
            result.equal += same
            if same != width:
                x = next(i for i in range(width) if i >= min(len(la), len(lb)) or la[i] != lb[i])
                note(
                    f"{name} row {row} col {x}: live {la[x] if x < len(la) else None} "
                    f"cold {lb[x] if x < len(lb) else None}"
                )
            elif back <= min(len(a), len(b)) and a[-back]["wrapped"] != b[-back]["wrapped"]:
                result.wrapped += 1
    for key, value in live["state"].items():
        other = cold["state"][key]
        if isinstance(value, dict):
            shown, other = _differing(value, other), _differing(other, value)
        else:
            shown = value
        if other != shown:
            note(f"{key}: live {shown} cold {other}")
    return result
