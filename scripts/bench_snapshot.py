"""How long a cold attach's snapshot takes with 1000 lines of scrollback, this tree
beside another (by default ``main``), in one run on one machine.

The other tree's ``src`` is exported with ``git archive`` into a temporary folder;
each tree runs in its own interpreter (its ``src`` first on the path), turn about,
and times ``HeadlessTerminal.snapshot()`` on the same output: a coloured log of 1100
lines at 120x40 (so the scrollback holds 1000), then a screen redrawn in place. Two
figures per tree: the first snapshot (every scrollback line drawn) and a later one
(lines already drawn are kept), as medians, and their ratio.

    .venv/bin/python scripts/bench_snapshot.py [--ref main] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import ptyvisor
from ptyvisor.terminal import HeadlessTerminal

cols, rows = 120, 40
log = "".join(
    f"\x1b[3{i % 8}m{i:5d}\x1b[0m build step {i} \x1b[1mok\x1b[0m " + "x" * (i % 90) + "\r\n"
    for i in range(1100)
)
screen = "".join(f"\x1b[{y};1H\x1b[44m row {y} \x1b[0m\x1b[K" for y in range(1, rows + 1))
data = (log + screen + "\x1b[20;10Hé").encode()
first, later = [], []
for _ in range(int(sys.argv[1])):
    term = HeadlessTerminal(cols, rows, scrollback=1000)
    term.feed(data)
    start = time.perf_counter()
    term.snapshot()
    first.append(time.perf_counter() - start)
    start = time.perf_counter()
    term.snapshot()
    later.append(time.perf_counter() - start)
print(json.dumps({"first": first, "later": later, "from": ptyvisor.__file__}))
"""


def export(ref: str, where: Path) -> Path:
    """``ref``'s ``src`` folder, unpacked under ``where``."""
    archive = where / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), ref, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    return where / "src"


def measure(src: Path, runs: int) -> dict[str, list[float]]:
    """One interpreter with ``src`` first on its path: its timings."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(runs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    answer = json.loads(result.stdout)
    if not answer.pop("from").startswith(str(src)):
        raise SystemExit(f"the interpreter for {src} imported another ptyvisor")
    times: dict[str, list[float]] = answer
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="the tree to compare with (git ref)")
    parser.add_argument("--runs", type=int, default=7, help="snapshots per turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {args.ref: export(args.ref, Path(tmp)), "this tree": ROOT / "src"}
        times: dict[str, dict[str, list[float]]] = {
            name: {"first": [], "later": []} for name in trees
        }
        for _ in range(3):  # turn about, so neither tree gets the quieter moments
            for name, src in trees.items():
                for kind, values in measure(src, args.runs).items():
                    times[name][kind] += values
    before, after = times[args.ref], times["this tree"]
    print(f"{'snapshot, 1000 lines of scrollback':<36}{args.ref:>12}{'this tree':>12}{'ratio':>8}")
    for kind in ("first", "later"):
        old, new = statistics.median(before[kind]), statistics.median(after[kind])
        print(f"{kind:<36}{old * 1e3:>10.2f}ms{new * 1e3:>10.2f}ms{new / old:>8.2f}")


if __name__ == "__main__":
    main()
