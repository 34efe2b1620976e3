"""How long ``ptyvisor emit`` and the Claude Code hook take, as an agent runs them.

Runs the installed console script N times writing a real frame to a real PTY
slave, N times outside a session (the no-op path), and the hook entry point
(``python -m ptyvisor.hooks claude-code``) on a PreToolUse and a PermissionRequest
payload, and prints percentiles beside a bare interpreter start.

    .venv/bin/python scripts/bench_emit.py [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ptyvisor.frames import new_nonce

EMIT = str(Path(sys.executable).parent / "ptyvisor")


def timed(
    env: dict[str, str], runs: int, argv: list[str] | None = None, stdin: bytes = b""
) -> list[float]:
    command = argv or [EMIT, "emit", "activity", "working", "--agent", "bench"]
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, env=env, input=stdin, check=True)
        samples.append(time.perf_counter() - start)
    return samples


def report(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    print(
        f"{label:28s} median {statistics.median(samples) * 1000:6.1f} ms"
        f"   p95 {p95 * 1000:6.1f} ms   max {ordered[-1] * 1000:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    master, slave = os.openpty()
    os.set_blocking(master, False)
    base = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    inside = {
        **base,
        "PTYVISOR_SESSION": "bench",
        "PTYVISOR_NONCE": new_nonce(),
        "PTYVISOR_TTY": os.ttyname(slave),
    }
    written = timed(inside, runs)
    received = 0
    while True:
        try:
            received += len(os.read(master, 65536))
        except BlockingIOError:
            break
    assert received > 0, "emit wrote no frames"
    report("emit inside a session", written)
    report("emit outside (no-op)", timed(base, runs))
    hook = [sys.executable, "-m", "ptyvisor.hooks", "claude-code"]
    pre_tool = {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test", "description": "Run the tests"},
    }
    permission = {**pre_tool, "hook_event_name": "PermissionRequest"}
    report("claude hook PreToolUse", timed(inside, runs, hook, json.dumps(pre_tool).encode()))
    report(
        "claude hook PermissionRequest", timed(inside, runs, hook, json.dumps(permission).encode())
    )
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    report("bare python -c pass", [(time.perf_counter() - start) / runs])


if __name__ == "__main__":
    main()
