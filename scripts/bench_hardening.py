"""Hostile load, measured: a client that floods ``list`` and never reads, and 200
sessions closing at once, each while another session's keystroke echo is timed.

Runs a real ``ptyvisor serve`` (this checkout) and reports, side by side in one run:

- the server's RSS before and during a 20 s never-reading ``list`` flood, and how
  many requests the flooder got into the server;
- another session's echo latency (p50/p99/max) with no load, during the flood, and
  while 200 sessions close (with how long closing them all took).

Figures, not a pass/fail test: these machines are shared and noisy.

    .venv/bin/python scripts/bench_hardening.py [--sessions 200] [--flood-seconds 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from websockets.asyncio.client import connect

from ptyvisor.client import Client, Output
from serving import serving

TOKEN = "bench-" + "t" * 24


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Echo:
    """Times a keystroke's round trip through a ``cat`` session, again and again."""

    def __init__(self, client: Client, session_id: str) -> None:
        self.client = client
        self.session = session_id
        self.samples: list[float] = []

    async def once(self) -> float:
        marker = uuid.uuid4().hex[:10].encode()
        started = time.perf_counter()
        await self.client.send_input(marker + b"\n")
        seen = b""
        while marker not in seen:
            event = await self.client.next_event(60)
            if isinstance(event, Output):
                seen += event.data
        return (time.perf_counter() - started) * 1000

    async def measure(self, stop: anyio.Event) -> list[float]:
        samples = []
        while not stop.is_set():
            samples.append(await self.once())
            await anyio.sleep(0.02)
        return samples


def describe(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"p50 {statistics.median(ordered):7.1f} ms  p99 {p99:7.1f} ms  "
        f"max {ordered[-1]:7.1f} ms  (n={len(ordered)})"
    )


async def run(url: str, server_pid: int, sessions: int, flood_seconds: float) -> None:
    async with Client.connect(url, TOKEN) as control, Client.connect(url, TOKEN) as echo_client:
        bystander = await control.spawn(["cat"])
        await echo_client.attach(bystander.id)
        echo = Echo(echo_client, bystander.id)

        async def timed(phase: str, work: Callable[[], Awaitable[None]]) -> None:
            stop = anyio.Event()
            result: list[float] = []

            async def sample() -> None:
                result.extend(await echo.measure(stop))

            async with anyio.create_task_group() as tg:
                tg.start_soon(sample)
                await work()
                stop.set()
            print(f"echo {phase:<28} {describe(result)}", flush=True)

        async def idle() -> None:
            await anyio.sleep(5)

        await timed("with no load", idle)

        # 1. A never-reading list flood, against 50 sessions' summaries.
        for _ in range(50):
            await control.spawn(["sleep", "600"])
        before = rss_mib(server_pid)
        peak = before
        sent = 0

        async def flood() -> None:
            # In a process of its own: in this one, its sends would starve the echo.
            nonlocal peak, sent
            flooder = await anyio.open_process(
                [sys.executable, __file__, "--flood", url, "--flood-seconds", str(flood_seconds)]
            )
            async with flooder:
                while flooder.returncode is None:
                    peak = max(peak, rss_mib(server_pid))
                    with anyio.move_on_after(0.25):
                        await flooder.wait()
                assert flooder.stdout is not None
                sent = int((await flooder.stdout.receive()).decode().strip() or 0)

        await timed(f"during a {flood_seconds:.0f} s list flood", flood)
        print(
            f"server RSS: {before:.0f} MiB before the flood, at most {peak:.0f} MiB during it "
            f"({sent} requests sent, never read)",
            flush=True,
        )

        # 2. Many sessions closing at once (from several connections, as users would).
        spawned = [await control.spawn(["sleep", "600"]) for _ in range(sessions)]
        closing = CloseAll(control, [session.id for session in spawned])
        await timed(f"while {sessions} sessions close", closing)
        print(f"closing {sessions} sessions took {closing.took:.2f} s", flush=True)


class CloseAll:
    """Close these sessions concurrently when called; ``took`` says how long it took."""

    def __init__(self, control: Client, session_ids: list[str]) -> None:
        self.control = control
        self.session_ids = session_ids
        self.took = 0.0

    async def __call__(self) -> None:
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for session_id in self.session_ids:
                tg.start_soon(self.control.close, session_id)
        self.took = time.perf_counter() - started


async def flood_never_reading(url: str, seconds: float) -> int:
    """Send ``list`` requests for ``seconds`` without ever reading a reply."""
    ws = await connect(
        url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_queue=1, write_limit=1
    )
    sent = 0
    with anyio.move_on_after(seconds):
        while True:
            await ws.send('{"type": "list"}')
            sent += 1
    ws.transport.abort()
    return sent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--flood-seconds", type=float, default=20)
    parser.add_argument("--flood", metavar="URL", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.flood:
        print(anyio.run(flood_never_reading, options.flood, options.flood_seconds), flush=True)
        return 0
    with serving(TOKEN) as (url, pid):
        anyio.run(run, url, pid, options.sessions, options.flood_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
