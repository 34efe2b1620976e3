"""Rows 3 and 4: a snapshot after a flood, and the output path against a raw reader."""

from __future__ import annotations

import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import (
    READY,
    TOKEN,
    Bench,
    follow,
    mb_s,
    plain_connection,
    plain_request,
    progress,
    start_cat,
)
from bench_throughput import FellBehind, ptyvisor_round, raw_rate
from ptyvisor.client.client import Client

# --------------------------------------------------------------------------- rows 3 and 4


async def websockets_rate(bench: Bench) -> tuple[float, int]:
    """Bytes/s a plain websockets client attached through ptyvisor gets ``cat`` of the
    file at, and how many lagging snapshots it got."""
    control, size = bench.control, bench.cat.size
    session = await start_cat(control, bench.cat.path)
    try:
        async with plain_connection(bench.url) as ws:
            attach = {"type": "attach", "session": session.id, "since": 0}
            reply, _took = await plain_request(ws, attach)
            started = time.perf_counter()
            await ws.send(b"go\n")
            result = await follow(ws, reply["seq"], len(READY) + size)
            elapsed = time.perf_counter() - started
    finally:
        await control.close(session.id)
    if result.lost:
        raise SystemExit(f"the plain client lost its connection: {result.lost}")
    return size / elapsed, result.snapshots


ATTEMPTS = 3
"""Rounds of `ptyvisor_round` tried before giving the round up."""


async def client_round(client: Client, path: Path, size: int) -> tuple[float, float, int] | None:
    """`ptyvisor_round`, again when the Client fell behind (a lagging snapshot made the
    round meaningless): (rate, snapshot seconds, render lag at most); None if it fell
    behind ATTEMPTS times."""
    for _ in range(ATTEMPTS):
        try:
            rate, lag, _skipped, snapshot = await ptyvisor_round(client, path, size)
        except FellBehind:
            progress("the Client fell behind (a lagging snapshot); repeating its round")
            continue
        return rate, snapshot, lag
    return None


def tmux_rate(path: Path, size: int, scratch: Path) -> float | str:
    """Bytes/s tmux consumes ``cat`` of ``path`` at, in a detached 200x50 session with no
    client: from sending the key that starts ``cat`` until the pane's command signals
    (``wait-for``) that it is done. Or why it could not be measured."""
    tmux = shutil.which("tmux")
    if tmux is None:
        return "tmux is not installed"
    base = [tmux, "-S", str(scratch / "tmux.sock"), "-f", "/dev/null"]
    done = shlex.join([*base, "wait-for", "-S", "done"])
    command = f"read go; stty raw -echo; cat {shlex.quote(str(path))}; {done}"
    env = {name: value for name, value in os.environ.items() if name != "TMUX"}
    waiter: subprocess.Popen[bytes] | None = None
    try:
        new = [*base, "new-session", "-d", "-x", "200", "-y", "50", command]
        subprocess.run(new, env=env, check=True)
        waiter = subprocess.Popen([*base, "wait-for", "done"], env=env)
        time.sleep(0.3)  # the waiter registers, the shell reaches `read`
        started = time.perf_counter()
        subprocess.run([*base, "send-keys", "go", "Enter"], env=env, check=True)
        waiter.wait(timeout=600)
        return size / (time.perf_counter() - started)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as failed:
        return f"tmux failed: {failed}"
    finally:
        if waiter is not None and waiter.poll() is None:
            waiter.kill()
            waiter.wait()
        kill = [*base, "kill-server"]
        subprocess.run(kill, env=env, check=False, stderr=subprocess.DEVNULL)


def per_round(pairs: Sequence[tuple[float, float]]) -> float:
    """The median of rate / base over rounds of (rate, base)."""
    return statistics.median(rate / base for rate, base in pairs)


def ratio_cell(pairs: Sequence[tuple[float, float]], note: str = "") -> str:
    """A ratio of rates for the table, with the median rate and a note (without any
    pair: the note says why)."""
    if not pairs:
        return f"not measured: {note}"
    rate = statistics.median(rate for rate, _base in pairs)
    return f"{per_round(pairs):.2f} ({mb_s(rate)}{'; ' + note if note else ''})"


async def output_path(bench: Bench) -> None:
    path, size, sizes, report = bench.cat.path, bench.cat.size, bench.sizes, bench.report
    raw: list[float] = []
    # (rate, the raw rate of its round)
    plain: list[tuple[float, float]] = []
    ours: list[tuple[float, float]] = []
    tmux: list[tuple[float, float]] = []
    snapshots: list[float] = []
    lags: list[int] = []
    plain_resyncs = 0
    tmux_failed = ""
    async with Client.connect(bench.url, TOKEN) as client:
        for number in range(sizes.rounds):
            progress(f"rows 3-4: output path, round {number + 1}/{sizes.rounds}")
            raw.append(raw_rate(path, size))
            rate, resyncs = await websockets_rate(bench)
            plain.append((rate, raw[-1]))
            plain_resyncs += resyncs
            got = await client_round(client, path, size)
            if got is not None:
                ours.append((got[0], raw[-1]))
                snapshots.append(got[1] * 1000)
                lags.append(got[2])
            with tempfile.TemporaryDirectory() as scratch:
                reference = tmux_rate(path, size, Path(scratch))
            if isinstance(reference, str):
                tmux_failed = reference
            else:
                tmux.append((reference, raw[-1]))
    report.raw["3_snapshot_after_flood"] = {
        "samples_ms": snapshots,
        "render_lag_max_bytes": lags,
    }
    report.raw["4_output_path"] = {
        "bytes": size,
        "raw": raw,
        "websockets_and_raw": plain,
        "client_and_raw": ours,
        "tmux_and_raw": tmux,
        "websockets_lagging_snapshots": plain_resyncs,
        "client_rounds_given_up": sizes.rounds - len(ours),
        "tmux_failed": tmux_failed,
    }
    fell = f"the Client fell behind {ATTEMPTS} times in a row"
    gave_up = f"{sizes.rounds - len(ours)} of {sizes.rounds} rounds given up: {fell}"
    if snapshots:
        measured = (
            f"median {statistics.median(snapshots):.0f} ms, max {max(snapshots):.0f} ms "
            f"(n={len(snapshots)}); the terminal was up to {max(lags) / 1024:.0f} KiB behind"
        )
    else:
        measured = f"not measured: {gave_up}"
    report.add(
        "3",
        f"snapshot requested once a {size / 1e6:.0f} MB flood's output ended",
        measured,
        "≤ 50 ms",
        max(snapshots) <= 50 if snapshots else None,
    )
    base = (
        f"{size / 1e6:.0f} MB cat, rounds: {sizes.rounds}; raw PTY read "
        f"{mb_s(statistics.median(raw))}, from {mb_s(min(raw))} to {mb_s(max(raw))}"
    )
    report.add(
        "4a",
        f"output path, plain websockets client ÷ plain Python PTY reader ({base})",
        ratio_cell(plain, f"{plain_resyncs} lagging snapshots"),
        "≥ 0.9",
        per_round(plain) >= 0.9,
    )
    report.add(
        "4b",
        "output path, the project's Client ÷ plain Python PTY reader",
        ratio_cell(ours, gave_up if len(ours) < sizes.rounds else ""),
        "≥ 0.9",
        per_round(ours) >= 0.9 if ours else None,
    )
    report.add(
        "4c",
        "output path, tmux (detached session, no client) ÷ plain Python PTY reader",
        ratio_cell(tmux, tmux_failed),
        "reference",
    )
