"""How long ``ptyvisor emit`` and the Claude Code hook take, as an agent runs them.

Runs the installed console script N times writing a real frame to a real PTY
slave, N times outside a session (the no-op path), and the hook as the agents'
settings run it (``agents.launch.hook_argv``: ``python -I -S -c …``) on a PreToolUse
and a PermissionRequest payload, beside ``python -m ptyvisor.agents.hooks`` (the
command before it), and prints percentiles beside a bare interpreter start. The
PermissionRequest runs twice: with no control socket (the server is down: the hook
must fail open at once) and with a socket that refuses connections. Each hook row is
also given as a multiple of the bare interpreter, for every agent's tool-call hook.

``--baseline SRC`` runs the hook rows with another tree's ``src`` folder first on the
path too (``git worktree add /tmp/old <commit>``; ``--baseline /tmp/old/src``),
alternating run by run, so the two trees are compared side by side on one machine in
one run. Both trees are byte-compiled first: with ``PYTHONDONTWRITEBYTECODE`` set (as
on the CI machines) every run would otherwise compile its modules from source.

    .venv/bin/python scripts/bench_emit.py [--runs 50] [--baseline OLD/src]
"""

from __future__ import annotations

import argparse
import compileall
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

from ptyvisor.agents.launch import cline_hook_file, hook_argv
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


def report(label: str, samples: list[float], bare: float | None = None) -> None:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    times = f"   {statistics.median(samples) / bare:4.1f}x bare" if bare else ""
    print(
        f"{label:34s} median {statistics.median(samples) * 1000:6.1f} ms"
        f"   p95 {p95 * 1000:6.1f} ms   max {ordered[-1] * 1000:6.1f} ms{times}"
    )


Variant = tuple[dict[str, str], list[str]]
"""An environment and the hook's argv in it."""


def side_by_side(variants: dict[str, Variant], runs: int, stdin: bytes) -> dict[str, list[float]]:
    """Each variant's command, alternating run by run."""
    samples: dict[str, list[float]] = {label: [] for label in variants}
    for _ in range(runs):
        for label, (env, argv) in variants.items():
            samples[label] += timed(env, 1, argv, stdin)
    return samples


TOOL_CALLS = {
    "claude-code": "PreToolUse",
    "qwen-code": "PreToolUse",
    "codex": "PreToolUse",
    "gemini-cli": "AfterTool",
    "copilot": "preToolUse",
    "droid": "PostToolUse",
    "cline": "PreToolUse",
}
"""A hook each agent runs for every tool call (Gemini CLI and Droid run only that one:
their extension READMEs say why)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--baseline", type=Path, help="another tree's src folder")
    args = parser.parse_args()
    runs, baseline = args.runs, args.baseline
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "src"), quiet=1)
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
    outside = timed(base, runs)
    bare = statistics.median(timed(base, runs, [sys.executable, "-c", "pass"]))
    report("emit inside a session", written, bare)
    report("emit outside (no-op)", outside, bare)
    report("bare python -c pass", [bare])

    def variants(env: dict[str, str], agent: str, *event: str) -> dict[str, Variant]:
        """The command the agents' settings hold (agents.launch.hook_argv), beside
        ``python -m`` (the command before it, which older sessions still run), and
        that in the ``--baseline`` tree."""
        module = [sys.executable, "-m", "ptyvisor.agents.hooks", agent, *event]
        found: dict[str, Variant] = {"": (env, hook_argv(agent, *event)), "-m ": (env, module)}
        if baseline is not None and not event:  # an older tree may not know the agent
            found["baseline "] = ({**env, "PYTHONPATH": str(baseline)}, module)
        return found

    if baseline is not None:
        compileall.compile_dir(str(baseline), quiet=1)
    pre_tool = {
        "session_id": "bench",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test", "description": "Run the tests"},
    }
    cline_call = {"id": "call_1", "name": "run_commands", "input": {"commands": ["npm test"]}}
    shapes = {"cline": {"sessionContext": {"rootSessionId": "1_bench"}, "tool_call": cline_call}}
    for agent, event in TOOL_CALLS.items():
        fields = shapes.get(agent, pre_tool)
        payload = json.dumps({**fields, "hook_event_name": event}).encode()
        # Copilot's and Cline's commands name the event (their payloads do not).
        named = [event] if agent in ("copilot", "cline") else []
        found = variants(inside, agent, *named)
        if agent == "cline":  # Cline runs our hook file with sh, which runs the command
            with tempfile.TemporaryDirectory() as scratch:
                file = Path(scratch) / event
                file.write_text(cline_hook_file(event, None))
                found["sh file "] = (inside, ["sh", str(file)])
                measured = side_by_side(found, runs, payload)
        else:
            measured = side_by_side(found, runs, payload)
        for label, samples in measured.items():
            report(f"{label}{agent} {event}", samples, bare)
    permission = json.dumps({**pre_tool, "hook_event_name": "PermissionRequest"}).encode()
    with tempfile.TemporaryDirectory() as scratch:
        refusing = Path(scratch) / "refusing.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(str(refusing))  # bound, never listening: connection refused
        for what, control in (("server down", "missing.sock"), ("socket refuses", refusing)):
            env = {**inside, "PTYVISOR_CONTROL": str(Path(scratch) / control)}
            measured = side_by_side(variants(env, "claude-code"), runs, permission)
            for label, samples in measured.items():
                report(f"{label}permission, {what}", samples, bare)


if __name__ == "__main__":
    main()
