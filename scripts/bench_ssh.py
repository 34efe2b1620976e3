"""The ssh:// relay against ssh itself, side by side in one run, through a real OpenSSH
server on loopback (the tests' `tests/sshd.py`), so the figures are the relay's cost,
not a network's.

    .venv/bin/python scripts/bench_ssh.py [--mb N] [--rounds N]

- **throughput**: the seconds ``ssh far cat FILE`` takes to deliver the file (from its
  first byte: connecting is not counted), against a
  client attached over ``ssh://far`` receiving a session's ``cat`` of the same file
  (the terminal made raw, so the bytes are the file's), and the same client over
  ``ws://`` directly, which is the ceiling the server's read path sets. Rounds
  alternate, and each figure is the median of its rounds.
- **latency**: one request's round trip (``list``) over an open connection, ``ssh://``
  against ``ws://``; and opening a connection (for ``ssh://``: ssh, ``dial-stdio``, the
  greeting and the WebSocket handshake); beside them, the SSH channel's own round trip
  (a line through ``ssh far cat``), which no request over ``ssh://`` can beat.

What bounds the relay (measured on a quiet 2-core machine, 128 MB, 5 rounds): it
matches ``ws://`` directly (1.06 of it), because the server's read path is the limit
(``bench_all`` row 4: a session's output reaches a client at 55-80 MB/s, where a PTY
alone is read at 150-170 MB/s and most of the server's time is the PTY's reads).
``ssh far cat`` reads a pipe, not a PTY, and is several times faster than any PTY;
``ssh -tt far cat`` goes through a PTY there, as a session's output does.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from bench.common import READY, TOKEN, mb_s, progress, start_cat
from bench_throughput import make_input
from ptyvisor.client.client import Client, Output
from serving import serving

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.sshd import local_sshd  # noqa: E402 - the tests' sshd, from the checkout


def ssh_cat_seconds(config: Path, path: Path, size: int, *, tty: bool) -> float:
    """From ``cat``'s first byte to its last: the connection's set-up is not counted,
    as the relay's connection is open before its clock starts. ``tty``: through a
    terminal there (``ssh -tt``, made raw so the bytes are the file's), as ``cat`` in
    a session runs."""
    command = f"stty raw -echo; cat {path}" if tty else f"cat {path}"
    argv = ["ssh", "-F", str(config), *(["-tt"] if tty else []), "far", command]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL) as cat:
        assert cat.stdout is not None
        fd = cat.stdout.fileno()
        received = len(os.read(fd, 1))
        started = time.perf_counter()
        while chunk := os.read(fd, 1 << 20):
            received += len(chunk)
        elapsed = time.perf_counter() - started
    assert received >= size, (received, size)
    return elapsed


async def relay_seconds(
    url: str, token: str | None, control: Client, path: Path, size: int
) -> float:
    """From the key that starts ``cat`` until the client has every byte of the file."""
    session = await start_cat(control, path)
    try:
        async with Client.connect(url, token) as viewer:
            events = viewer.events()
            attached = await viewer.attach(session.id, since=0)
            end = len(READY) + size
            position = attached.seq
            started = time.perf_counter()
            await viewer.send_input(b"go\n")
            async for event in events:
                if isinstance(event, Output):
                    position = event.seq + len(event.data)
                    if position >= end:
                        return time.perf_counter() - started
    finally:
        await control.close(session.id)
    raise SystemExit("the stream ended early")


def channel_round_trip_ms(config: Path, count: int) -> float:
    """Median ms for one line to go through ``ssh far cat`` and back: the SSH
    channel's own round trip, which a request over ``ssh://`` cannot beat."""
    argv = ["ssh", "-F", str(config), "-T", "far", "cat"]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as cat:
        assert cat.stdin is not None and cat.stdout is not None
        took = []
        for _ in range(count + 1):
            started = time.perf_counter()
            os.write(cat.stdin.fileno(), b"ping\n")
            got = b""
            while not got.endswith(b"\n"):
                got += os.read(cat.stdout.fileno(), 64)
            took.append((time.perf_counter() - started) * 1000)
        cat.stdin.close()
    return statistics.median(took[1:])  # the first also waits for cat to start


async def round_trip_ms(url: str, token: str | None, count: int) -> tuple[float, float]:
    """(median ms of a ``list`` on an open connection, ms to open one)."""
    started = time.perf_counter()
    async with Client.connect(url, token) as client:
        opened = (time.perf_counter() - started) * 1000
        took = []
        for _ in range(count):
            started = time.perf_counter()
            await client.list()
            took.append((time.perf_counter() - started) * 1000)
    return statistics.median(took), opened


async def measure(url: str, config: Path, path: Path, size: int, rounds: int) -> None:
    os.environ["PTYVISOR_SSH"] = f"ssh -F {config}"
    times: dict[str, list[float]] = {"ssh cat": [], "ssh -tt cat": [], "ssh://": [], "ws://": []}
    async with Client.connect(url, TOKEN) as control:
        for n in range(rounds):
            progress(f"throughput round {n + 1} of {rounds}")
            for name, tty in (("ssh cat", False), ("ssh -tt cat", True)):
                cat = functools.partial(ssh_cat_seconds, config, path, size, tty=tty)
                times[name].append(await anyio.to_thread.run_sync(cat))
            times["ssh://"].append(await relay_seconds("ssh://far", None, control, path, size))
            times["ws://"].append(await relay_seconds(url, TOKEN, control, path, size))
    median = {name: statistics.median(samples) for name, samples in times.items()}
    print(f"\nthroughput, {size / 1e6:.0f} MB, median of {rounds} rounds:")
    for name, seconds in median.items():
        print(f"  {name:8} {mb_s(size / seconds):>12}  ({seconds:.2f} s)")
    print(f"  relay / ssh cat: {median['ssh cat'] / median['ssh://']:.2f}")
    print(f"  relay / ssh -tt cat: {median['ssh -tt cat'] / median['ssh://']:.2f}")
    print(f"  relay / ws:// direct: {median['ws://'] / median['ssh://']:.2f}")
    progress("latency")
    ssh_ms, ssh_open = await round_trip_ms("ssh://far", None, 200)
    ws_ms, ws_open = await round_trip_ms(url, TOKEN, 200)
    channel_ms = await anyio.to_thread.run_sync(channel_round_trip_ms, config, 200)
    print("\nlatency (median of 200 requests on an open connection; opening one):")
    print(f"  ssh://  {ssh_ms:.2f} ms per request, {ssh_open:.0f} ms to connect")
    print(f"  ws://   {ws_ms:.2f} ms per request, {ws_open:.0f} ms to connect")
    print(f"  the SSH channel's own round trip (a line through ssh far cat): {channel_ms:.2f} ms")
    print(
        f"  ssh:// adds {ssh_ms - ws_ms:.2f} ms to a request: {(ssh_ms - ws_ms) / channel_ms:.2f}"
        " of the channel's round trip"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=64, help="file size in MB (64)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each (3)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_ssh-") as scratch:
        base = Path(scratch)
        path = base / "output.txt"
        size = make_input(path, options.mb)
        with serving(TOKEN) as (url, _keeper):
            far = {
                "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
                "PTYVISOR_URL": url,
                "PTYVISOR_TOKEN": TOKEN,
            }
            (base / "sshd").mkdir()
            with local_sshd(base / "sshd", {"far": far}) as config:
                anyio.run(measure, url, config, path, size, options.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
