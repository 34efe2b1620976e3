"""PTY throughput: a plain Python reader vs a client attached through ptyvisor.

Both read the same file through a PTY in raw mode (``stty raw``, so the bytes are
not rewritten), measured side by side in one run. Also reports how far the headless
terminal falls behind during the flood and how long a snapshot takes once output
stops. Figures, not a pass/fail test: these machines are shared and noisy.

    .venv/bin/python scripts/bench_throughput.py [--mb 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import ptyprocess

from ptyvisor.client.client import Client, Output
from ptyvisor.wire.protocol import SnapshotMessage

TOKEN = "bench-" + "t" * 24
CLIENT_BUFFER = 16 * 1024 * 1024
"""Generous, so a noisy machine's hiccup in the client does not force a resync."""


class FellBehind(Exception):
    """The client was dropped back to a snapshot: the round measured nothing."""


def make_input(path: Path, megabytes: int) -> int:
    """Realistic terminal output: log-like lines, some in colour."""
    rng = random.Random(7)
    words = ["build", "test", "ok", "warning:", "src/ptyvisor/session.py", "1234", "=>", "done"]
    lines = []
    for i in range(20000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))
        if i % 5 == 0:
            text = f"\x1b[3{i % 8}m{text}\x1b[0m"
        lines.append(f"{i:06d} {text}\r\n")
    block = "".join(lines).encode()
    with path.open("wb") as handle:
        written = 0
        while written < megabytes * 1_000_000:
            handle.write(block)
            written += len(block)
    return path.stat().st_size


def raw_rate(path: Path, size: int) -> float:
    """Bytes/s a plain Python loop reads from a PTY running ``cat``."""
    process = ptyprocess.PtyProcess.spawn(
        ["sh", "-c", f"stty raw -echo; exec cat {path}"], dimensions=(50, 200)
    )
    received = 0
    start = time.perf_counter()
    while True:
        try:
            chunk = os.read(process.fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        received += len(chunk)
    elapsed = time.perf_counter() - start
    process.wait()
    assert received == size, (received, size)
    return size / elapsed


async def ptyvisor_round(client: Client, path: Path, size: int) -> tuple[float, int, int, float]:
    """One flood through the server: (rate, max render lag, bytes skipped, snapshot secs)."""
    session = await client.spawn(
        ["sh", "-c", f"stty raw -echo; read go; exec cat {path}; "], cols=200, rows=50
    )
    await client.attach(session.id, since=0)
    max_lag = 0
    received = 0
    await anyio.sleep(0.3)  # let stty run before the go line
    start = time.perf_counter()
    await client.send_input(b"go\n")  # raw mode: no CR-to-NL translation
    next_probe = start
    while received < size:
        event = await client.next_event(60)
        if isinstance(event, Output):
            received += len(event.data)
        elif isinstance(event, SnapshotMessage):
            await client.close(session.id)
            raise FellBehind(received)
        now = time.perf_counter()
        if now >= next_probe:
            next_probe = now + 0.25
            max_lag = max(max_lag, (await client.stats(session.id)).render_lag)
    elapsed = time.perf_counter() - start
    assert received == size, (received, size)
    stats = await client.stats(session.id)
    max_lag = max(max_lag, stats.render_lag)
    snap_start = time.perf_counter()
    await client.snapshot(session.id)
    snapshot_seconds = time.perf_counter() - snap_start
    await client.close(session.id)
    return size / elapsed, max_lag, stats.render_skipped, snapshot_seconds


def start_server(state_dir: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "ptyvisor"),
            "serve",
            "--port",
            "0",
            "--state-dir",
            str(state_dir),
            "--token",
            TOKEN,
            "--client-buffer",
            str(CLIENT_BUFFER),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    match = re.search(r"(ws://\S+)", line)
    if not match:
        server.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return server, match.group(1)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="megabytes of output per round")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        path = Path(temp) / "output.txt"
        size = make_input(path, options.mb)
        server, url = start_server(Path(temp) / "state")
        try:
            raw_rates: list[float] = []
            rates: list[float] = []
            lags: list[int] = []
            skips: list[int] = []
            snaps: list[float] = []
            resyncs = 0
            async with Client.connect(url, TOKEN) as client:
                for _ in range(options.rounds):
                    # Alternate, so machine noise hits both sides alike.
                    raw_rates.append(raw_rate(path, size))
                    for _attempt in range(3):
                        try:
                            rate, lag, skipped, snap = await ptyvisor_round(client, path, size)
                            break
                        except FellBehind as behind:
                            resyncs += 1
                            print(f"client fell behind after {behind.args[0]} bytes; retrying")
                    else:
                        raise SystemExit("the client kept falling behind: machine too busy")
                    rates.append(rate)
                    lags.append(lag)
                    skips.append(skipped)
                    snaps.append(snap)
        finally:
            server.terminate()
            server.wait()
    raw, through = statistics.median(raw_rates), statistics.median(rates)
    print(f"input: {size / 1e6:.1f} MB per round, {options.rounds} rounds (medians)")
    print(f"raw PTY read (plain Python loop): {raw / 1e6:8.1f} MB/s")
    print(f"client attached through ptyvisor: {through / 1e6:8.1f} MB/s")
    print(f"ratio ptyvisor/raw:               {through / raw:8.2f}   (target >= 0.9)")
    print(f"headless terminal max lag:        {max(lags) / 1024:8.0f} KiB behind the PTY")
    print(f"bytes skipped by renderer:        {statistics.median(skips) / 1e6:8.1f} MB per round")
    print(f"snapshot once output stopped:     {statistics.median(snaps) * 1000:8.0f} ms")
    print(f"rounds repeated after a resync:   {resyncs:8d}")


if __name__ == "__main__":
    anyio.run(main)
