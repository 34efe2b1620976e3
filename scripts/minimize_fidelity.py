"""Shrink a generated stream that a cold attach draws otherwise than the live view
(tests/terminal/xterm/test_fidelity.py) to a few sequences, to read against xterm.js.

    .venv/bin/python scripts/minimize_fidelity.py SEED [--resizes]

Greedy, one change at a time, each kept only while the difference stays: drop a
step (a write or a resize), join two writes, drop runs of tokens from a write (an
escape sequence is one token, as is each other character) from long runs down to
one, keeping the kind of difference the stream first showed (``normal row col``,
``saved``, ``cursor``). Prints the smallest case as Python literals and what still
differs. Needs
@xterm/headless (scripts/install_xterm_headless.sh).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.terminal.xterm.support import Case, Step, XtermDriver, node_modules  # noqa: E402
from tests.terminal.xterm.test_fidelity import generated, run  # noqa: E402

TOKEN = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    rb"|\x1b[ -/]*[0-~]"  # ESC and its intermediates
    rb"|[\xc0-\xf7][\x80-\xbf]*"  # one UTF-8 character
    rb"|[\x00-\xff]",
    re.S,
)


def tokens(data: bytes) -> list[bytes]:
    return TOKEN.findall(data)


def kind(difference: str) -> str:
    """What differs, without where: ``normal row 8 col 8: …`` → ``normal row col``."""
    return re.sub(r"\s*\d+", "", difference.split(":", maxsplit=1)[0])


class Shrinker:
    """Keeps a case only while it differs the way the first one did (the same `kind`):
    a stream can differ in several ways, and the smallest of another is no answer."""

    def __init__(self, xterm: XtermDriver) -> None:
        self.xterm = xterm
        self.tries = 0
        self.kind: str | None = None

    def differs(self, case: Case) -> bool:
        self.tries += 1
        differences = run(self.xterm, case).differences
        if self.kind is None and differences:
            self.kind = kind(differences[0])
        return self.kind in {kind(d) for d in differences}

    def without_step(self, case: Case, i: int) -> Case:
        steps = case.steps[:i] + case.steps[i + 1 :]
        attach = case.attach - 1 if 0 <= i < case.attach else case.attach
        return replace(case, steps=steps, attach=attach)

    def joined(self, case: Case, i: int) -> Case | None:
        (k1, a1, _), (k2, a2, _) = case.steps[i], case.steps[i + 1]
        if k1 != "write" or k2 != "write" or case.attach == i + 1:
            return None
        assert isinstance(a1, bytes) and isinstance(a2, bytes)
        merged: Step = ("write", a1 + a2, None)
        steps = (*case.steps[:i], merged, *case.steps[i + 2 :])
        attach = case.attach - 1 if case.attach > i + 1 else case.attach
        return replace(case, steps=steps, attach=attach)

    def shrink(self, case: Case) -> Case:
        changed = True
        while changed:
            changed = False
            for i in reversed(range(len(case.steps))):
                smaller = self.without_step(case, i)
                if self.differs(smaller):
                    case, changed = smaller, True
            for i in reversed(range(len(case.steps) - 1)):
                joined = self.joined(case, i) if i + 1 < len(case.steps) else None
                if joined is not None and self.differs(joined):
                    case, changed = joined, True
            for i, (step, data, _) in enumerate(case.steps):
                if step == "write" and isinstance(data, bytes):
                    smaller_case = self.shrink_write(case, i, tokens(data))
                    if smaller_case is not case:
                        case, changed = smaller_case, True
        return case

    def shrink_write(self, case: Case, i: int, parts: list[bytes]) -> Case:
        run_length = max(1, len(parts) // 2)
        while run_length >= 1:
            start = 0
            while start < len(parts):
                kept = parts[:start] + parts[start + run_length :]
                steps = (*case.steps[:i], ("write", b"".join(kept), None), *case.steps[i + 1 :])
                candidate = replace(case, steps=steps)
                if kept and self.differs(candidate):
                    case, parts = candidate, kept
                else:
                    start += run_length
            run_length //= 2
        return case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed", type=int)
    parser.add_argument("--resizes", action="store_true")
    args = parser.parse_args()
    case = generated(args.seed, resizes=args.resizes)
    xterm = XtermDriver(node_modules())
    try:
        shrinker = Shrinker(xterm)
        if not shrinker.differs(case):
            print(f"seed {args.seed}: the cold attach is the live view")
            return
        small = shrinker.shrink(case)
        print(f"# {shrinker.tries} tries")
        print(f"cols, rows, attach = {small.cols}, {small.rows}, {small.attach}")
        print("steps = [")
        for step in small.steps:
            print(f"    {step!r},")
        print("]")
        for difference in run(xterm, small).differences[:6]:
            print(difference)
    finally:
        xterm.close()


if __name__ == "__main__":
    main()
