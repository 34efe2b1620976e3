"""How long ``ptyvisor emit`` and the Claude Code hook take, as an agent runs them.

Runs the installed console script N times writing a real frame to a real PTY
slave, N times outside a session (the no-op path), and the hook entry point
(``python -m ptyvisor.agents.hooks claude-code``) on a PreToolUse and a PermissionRequest
payload, and prints percentiles beside a bare interpreter start. The
PermissionRequest runs twice: with no control socket (the server is down: the hook
must fail open at once) and with a socket that refuses connections.

    .venv/bin/python scripts/bench_emit.py [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ptyvisor.wire.frames import new_nonce

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
    # Drain the master all along, as ptyvisor does: a full PTY buffer would block writers.
    received = [0]

    def drain() -> None:
        while True:
            select.select([master], [], [])
            try:
                received[0] += len(os.read(master, 65536))
            except BlockingIOError:
                continue
            except OSError:
                return

    threading.Thread(target=drain, daemon=True).start()
    written = timed(inside, runs)
    time.sleep(0.1)
    assert received[0] > 0, "emit wrote no frames"
    report("emit inside a session", written)
    report("emit outside (no-op)", timed(base, runs))
    hook = [sys.executable, "-m", "ptyvisor.agents.hooks", "claude-code"]
    pre_tool = {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test", "description": "Run the tests"},
    }
    permission = {**pre_tool, "hook_event_name": "PermissionRequest"}
    report("claude hook PreToolUse", timed(inside, runs, hook, json.dumps(pre_tool).encode()))
    payload = json.dumps(permission).encode()
    with tempfile.TemporaryDirectory() as scratch:
        refusing = Path(scratch) / "refusing.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(str(refusing))  # bound, never listening: connection refused
        down = {**inside, "PTYVISOR_CONTROL": str(Path(scratch) / "missing.sock")}
        report("permission, server down", timed(down, runs, hook, payload))
        refused = {**inside, "PTYVISOR_CONTROL": str(refusing)}
        report("permission, socket refuses", timed(refused, runs, hook, payload))
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    report("bare python -c pass", [(time.perf_counter() - start) / runs])


if __name__ == "__main__":
    main()
