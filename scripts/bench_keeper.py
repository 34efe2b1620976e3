"""The keeper, measured: how fast a crashed server process is replaced, whether a client
resumes exactly across each crash, and what the keeper costs in memory.

Runs a real ``ptyvisor serve`` (this checkout). One session floods numbered lines; a
client follows it. The server process is killed (``kill -9``) ``--crashes`` times,
each while the flood runs; after each, the client reconnects with ``since`` and the
run counts lines missing or repeated (a byte lost would show as one). Reports:

- time from the kill until a client gets ``hello`` again (the target is 2 s);
- time from a ``SIGSTOP`` of the server process (a stuck server, as a deadlock would
  leave it) until a client gets ``hello`` from its replacement: the keeper's
  heartbeat gives it `keeper.UNANSWERED_SECONDS`, then replaces it;
- lines missing or repeated over all crashes;
- the keeper's RSS with no session, and with ``--sessions`` idle ones (per session).

    .venv/bin/python scripts/bench_keeper.py [--crashes 10] [--sessions 50] [--stops 3]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import sys
import time
from pathlib import Path

import anyio

from ptyvisor.client.client import Client, Output
from serving import server_process, serving

TOKEN = "bench-" + "k" * 24
FLOOD = """import sys, time
i = 0
while True:
    for _ in range(1000):
        i += 1
        sys.stdout.write(f"line {i} " + "x" * 80 + "\\n")
    sys.stdout.flush()
    time.sleep(0.1)
"""
"""About 1 MB/s: what a busy agent writes, well within the 2 MiB ring per second."""
LINE = re.compile(rb"line (\d+) x+\r\n")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def server_pid(keeper: int) -> int | None:
    """The keeper's server process, or None while it has none."""
    try:
        return server_process(keeper)
    except LookupError:
        return None


async def served_again(url: str, since: float) -> float:
    """Seconds from ``since`` until a client gets ``hello`` (each try bounded: a
    stopped server accepts, then never answers)."""
    while True:
        with anyio.move_on_after(1):
            try:
                async with Client.connect(url, TOKEN) as client:
                    if client.hello is not None:
                        return time.monotonic() - since
            except Exception:
                await anyio.sleep(0.005)


async def stopped_servers(url: str, keeper: int, stops: int) -> None:
    """SIGSTOP the server process ``stops`` times; each time, until serving again."""
    back = []
    for _ in range(stops):
        pid = server_pid(keeper)
        assert pid is not None
        stopped = time.monotonic()
        os.kill(pid, signal.SIGSTOP)
        back.append(await served_again(url, stopped))
        assert server_pid(keeper) != pid
    print(
        f"serving again after a SIGSTOP: median {statistics.median(back):.2f} s, "
        f"max {max(back):.2f} s over {stops} stops",
        flush=True,
    )


async def run(url: str, keeper: int, crashes: int, sessions: int, stops: int) -> None:
    idle_rss = rss_kib(keeper)
    async with Client.connect(url, TOKEN) as client:
        for _ in range(sessions):
            await client.spawn(["sleep", "3600"])
        with_sessions = rss_kib(keeper)
        flood = await client.spawn([sys.executable, "-c", FLOOD])
    print(
        f"keeper RSS: {idle_rss / 1024:.1f} MiB with no session, {with_sessions / 1024:.1f} MiB "
        f"with {sessions} ({(with_sessions - idle_rss) / max(sessions, 1):.0f} KiB each)",
        flush=True,
    )
    back: list[float] = []
    numbers: list[int] = []
    seq: int | None = 0
    for _ in range(crashes):
        async with Client.connect(url, TOKEN) as client:
            attached = await client.attach(flood.id, since=seq)
            assert attached.replay == "exact", "the ring no longer held the position"
            data = b""
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                event = await client.next_event(10)
                if isinstance(event, Output):
                    data += event.data
            # Stop at a line boundary, as a client would have drawn up to anywhere.
            cut = data.rfind(b"\n") + 1
            numbers += [int(n) for n in LINE.findall(data[:cut])]
            assert client.seq is not None
            seq = client.seq - (len(data) - cut)
        pid = server_pid(keeper)
        assert pid is not None
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        while True:
            try:
                async with Client.connect(url, TOKEN) as client:
                    if client.hello is not None:
                        back.append(time.monotonic() - killed)
                        break
            except Exception:
                await anyio.sleep(0.005)
    expected = list(range(numbers[0], numbers[-1] + 1))
    missing = len(set(expected) - set(numbers))
    repeated = len(numbers) - len(set(numbers))
    print(
        f"serving again after a kill -9: median {statistics.median(back):.2f} s, "
        f"max {max(back):.2f} s over {crashes} crashes",
        flush=True,
    )
    print(
        f"replay across the crashes: {len(numbers)} lines followed, {missing} missing, "
        f"{repeated} repeated",
        flush=True,
    )
    if stops:
        await stopped_servers(url, keeper, stops)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crashes", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--stops", type=int, default=3)
    options = parser.parse_args()
    with serving(TOKEN) as (url, pid):
        anyio.run(run, url, pid, options.crashes, options.sessions, options.stops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
