"""The performance table: every row of ``bench`` (scripts/bench/) measured side by side
in one run against a real ``ptyvisor serve`` of this checkout; see ``bench``'s notes for
what each row measures.

    .venv/bin/python scripts/bench_all.py [--quick] [--json [FILE]] [--only ROWS]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path

import anyio

from bench.attach import attach_latency
from bench.common import (
    FULL,
    QUICK,
    STARTED,
    TOKEN,
    Bench,
    CatFile,
    Report,
    Sizes,
    find_worker,
    progress,
)
from bench.echo import echo_under_flood
from bench.fanout import fanout
from bench.headless import terminal_rows
from bench.idle_close import idle_then_close
from bench.output_path import output_path
from bench_hardening import Echo
from bench_throughput import make_input
from ptyvisor.client.client import Client
from serving import serving


async def measure_server(
    url: str, keeper: int, sizes: Sizes, report: Report, cat: CatFile, *, only: set[int]
) -> None:
    worker = await find_worker(keeper)
    async with Client.connect(url, TOKEN) as control, Client.connect(url, TOKEN) as typist:
        bystander = await control.spawn(["cat"])
        await typist.attach(bystander.id)
        echo = Echo(typist, bystander.id)
        bench = Bench(url, keeper, worker, control, echo, sizes, report, cat)
        # Rows 7 and 6 first: the fresh server's memory is not yet giving back what
        # the floods of the other rows took, which would hide what sessions add.
        for rows, measure in (
            ({6, 7}, idle_then_close),
            ({3, 4}, output_path),
            ({2}, attach_latency),
            ({1}, echo_under_flood),
            ({8}, fanout),
        ):
            if rows & only:
                await measure(bench)


def run(sizes: Sizes, report: Report, only: set[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench_all-") as scratch:
        path = Path(scratch) / "output.txt"
        cat = CatFile(path, make_input(path, sizes.file_mb))
        if 5 in only:
            terminal_rows(sizes, path, report)
        progress("starting ptyvisor serve")
        with serving(TOKEN) as (url, keeper):
            anyio.run(partial(measure_server, only=only), url, keeper, sizes, report, cat)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every size shrunk (under a minute)")
    parser.add_argument(
        "--json", nargs="?", const="-", metavar="FILE", help="also the raw figures (- : stdout)"
    )
    parser.add_argument(
        "--only",
        default="1-8",
        metavar="ROWS",
        help="the rows to measure, e.g. 1,4 (default: all; 3 and 4, 6 and 7 go together)",
    )
    options = parser.parse_args()
    only: set[int] = set()
    for part in options.only.split(","):
        first, _, last = part.partition("-")
        only.update(range(int(first), int(last or first) + 1))
    sizes = QUICK if options.quick else FULL
    report = Report()
    report.raw["sizes"] = asdict(sizes)
    try:
        run(sizes, report, only)
    except BaseException:
        if report.rows:
            print("what was measured before it stopped:", file=sys.stderr)
            print(report.table(), file=sys.stderr)
        raise
    seconds = time.monotonic() - STARTED
    report.raw["seconds"] = seconds
    print(report.table())
    print(f"\n{'--quick run' if options.quick else 'full run'}: {seconds:.0f} s", flush=True)
    if options.json == "-":
        print(json.dumps(report.raw, indent=1))
    elif options.json:
        Path(options.json).write_text(json.dumps(report.raw, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
