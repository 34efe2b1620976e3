"""How well Ready and the first ``working`` line up with the real agents' TUIs.

Runs each agent N times through ptyvisor against the fake model server
(tests/agents/clis/ready.py: a client types its prompt the instant Ready arrives, then
submits it) and prints one markdown table: per agent, p50 and max of

- ready - drawn: Ready minus the moment a snapshot first showed the empty input
  prompt (polled every 20 ms, so "drawn" is up to that late). Negative: Ready came
  before the prompt was drawn; the prompt typed at Ready was still kept in every run
  the table counts (a lost prompt fails the run, and the table says how many did).
- typed - ready: how long the client took to type after Ready's own timestamp.
- working - enter: the first ``working`` minus the moment Enter was sent.

    .venv/bin/python scripts/bench_ready.py [--runs N] [agent ...]

Needs the pinned agent CLIs (scripts/install_agents.sh, run by tests/agents/clis/installed.py).
Absolute figures are noisy on a shared machine: read p50 against max.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.agents.clis.ready import (  # noqa: E402
    PROMPT_SHOWN,
    READY_PHASES,
    ReadyTiming,
    typed_at_ready,
    with_startup,
)

AGENTS = list(PROMPT_SHOWN)


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values) * 1000:.0f} / {max(values) * 1000:.0f}"


async def _runs(agent: str, runs: int) -> tuple[list[ReadyTiming], list[str]]:
    timings: list[ReadyTiming] = []
    failures: list[str] = []
    for n in range(runs):
        with tempfile.TemporaryDirectory(prefix=f"bench-ready-{agent}-") as tmp:
            started = time.monotonic()
            try:
                timing, phases = await typed_at_ready(agent, Path(tmp), watch=True)
                if phases != with_startup(agent, READY_PHASES):
                    raise AssertionError(f"phases {phases}")
            except Exception as error:  # a lost prompt is a result, not a crash
                while isinstance(error, ExceptionGroup) and len(error.exceptions) == 1:
                    error = error.exceptions[0]
                failures.append(f"{type(error).__name__}: {str(error).splitlines()[0]}")
                print(f"{agent} run {n + 1}: FAILED {failures[-1]}", file=sys.stderr)
                continue
            timings.append(timing)
            drawn = "-" if timing.drawn is None else f"{timing.ready - timing.drawn:+.3f}"
            print(
                f"{agent} run {n + 1}: ready-drawn {drawn} s, "
                f"working-enter {timing.working - timing.enter:+.3f} s "
                f"({time.monotonic() - started:.1f} s)",
                file=sys.stderr,
            )
    return timings, failures


async def main(agents: list[str], runs: int) -> None:
    rows = [
        "| agent | runs ok | ready - drawn p50 / max (ms) | typed - ready p50 / max (ms) "
        "| working - enter p50 / max (ms) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for agent in agents:
        timings, failures = await _runs(agent, runs)
        drawn = [t.ready - t.drawn for t in timings if t.drawn is not None]
        rows.append(
            f"| {agent} | {len(timings)}/{runs} | {_ms(drawn)} "
            f"| {_ms([t.typed - t.ready for t in timings])} "
            f"| {_ms([t.working - t.enter for t in timings])} |"
        )
        for failure in failures:
            print(f"{agent}: {failure}", file=sys.stderr)
    print("\n".join(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("agents", nargs="*", help=f"some of {', '.join(AGENTS)} (default: all)")
    args = parser.parse_args()
    unknown = sorted(set(args.agents) - set(AGENTS))
    if unknown:
        parser.error(f"unknown agents: {', '.join(unknown)}")
    anyio.run(main, args.agents or AGENTS, args.runs)
