"""Hostile load, measured: a client that floods ``list`` and never reads, 200 sessions
closing at once, twelve pipelined 1 MB ``send_keys`` and 24 exports at once, each
while another session's keystroke echo is timed.

Runs a real ``ptyvisor serve`` (this checkout, or whatever ``ptyvisor`` the
interpreter imports: ``PYTHONPATH=<other tree>/src`` measures another) and reports,
side by side in one run:

- the server process's RSS before and at its peak during a 20 s never-reading
  ``list`` flood (and how many requests the flooder got in), twelve pipelined
  1 MB ``send_keys`` (a thousand-deep ``M-`` chain and a 0.9 MB text key, as a
  hostile client sends them), and 24 concurrent exports of a 2 MiB log of control
  bytes;
- another session's echo latency (p50/p99/max) with no load, during each of those,
  and while 200 sessions close (with how long closing them all took).

The hostile clients run in processes of their own, so that their work does not
take this process's turn from the echo being timed.

Figures, not a pass/fail test: these machines are shared and noisy.

    .venv/bin/python scripts/bench_hardening.py [--sessions 200] [--flood-seconds 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from websockets.asyncio.client import connect

from ptyvisor.client.client import Client, Output
from serving import server_process, serving

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

        async def hostile(phase: str, *args: str) -> str:
            """Run this script's hostile ``args`` in a process of its own while the echo
            is timed; the server's RSS before and at its peak; what it printed."""
            before = rss_mib(server_pid)
            peak = before
            printed = ""

            async def work() -> None:
                nonlocal peak, printed
                process = await anyio.open_process([sys.executable, __file__, *args])
                async with process:
                    while process.returncode is None:
                        peak = max(peak, rss_mib(server_pid))
                        with anyio.move_on_after(0.1):
                            await process.wait()
                    assert process.stdout is not None
                    printed = (await process.stdout.receive()).decode().strip()

            await timed(phase, work)
            print(
                f"server RSS {phase}: {before:.0f} MiB before, at most {peak:.0f} MiB",
                flush=True,
            )
            return printed

        # 1. A never-reading list flood, against 50 sessions' summaries.
        for _ in range(50):
            await control.spawn(["sleep", "600"])
        seconds = f"{flood_seconds:.0f}"
        sent = await hostile(
            f"during a {seconds} s list flood", "--flood", url, "--flood-seconds", seconds
        )
        print(f"the flooder sent {sent} requests, never reading a reply", flush=True)

        # 2. Twelve pipelined 1 MB send_keys into a session that reads nothing.
        target = await control.spawn(["sleep", "600"])
        answers = await hostile("during 12 pipelined 1 MB send_keys", "--keys", url, target.id)
        print(f"the 12 send_keys were answered: {answers}", flush=True)

        # 3. 24 exports at once of a 2 MiB log of control bytes.
        logged = await control.spawn(
            ["sh", "-c", f"head -c {EXPORTED} /dev/zero | tr '\\0' '\\1'; exec sleep 600"]
        )
        while (await control.stats(logged.id)).output_bytes < EXPORTED:  # noqa: ASYNC110 - a remote count
            await anyio.sleep(0.05)
        sizes = await hostile("during 24 concurrent exports", "--exports", url, logged.id)
        print(f"the 24 exports: {sizes}", flush=True)

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


EXPORTED = 2 * 1024 * 1024
KEYS = 12


async def pipelined_keys(url: str, session: str) -> str:
    """Twelve ~1 MB ``send_keys`` sent without waiting, then their answers, tallied."""
    ws = await connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=None)
    keys = [["M-" * 999 + "x", "k" * 900_000], ["M-" * 470_000 + "x"]]
    for n in range(KEYS):
        message = {"type": "send_keys", "session": session, "keys": keys[n % 2], "req_id": n}
        await ws.send(json.dumps(message))
    answers: Counter[str] = Counter()
    while sum(answers.values()) < KEYS:
        reply = json.loads(await ws.recv())
        if reply.get("req_id") is not None:
            answers[reply.get("code") or reply["type"]] += 1
    await ws.close()
    return ", ".join(f"{count} {kind}" for kind, count in sorted(answers.items()))


async def concurrent_exports(url: str, session: str) -> str:
    """24 clients exporting at once; the sizes of the casts they got."""
    sizes: list[int] = []

    async def export() -> None:
        async with Client.connect(url, TOKEN) as client:
            sizes.append(len(await client.export(session)))

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(24):
            tg.start_soon(export)
    took = time.perf_counter() - started
    return f"{len(sizes)} casts of {min(sizes) / 1e6:.1f} MB each, all in {took:.1f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--flood-seconds", type=float, default=20)
    parser.add_argument("--flood", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--keys", nargs=2, metavar=("URL", "SESSION"), help=argparse.SUPPRESS)
    parser.add_argument("--exports", nargs=2, metavar=("URL", "SESSION"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.flood:
        print(anyio.run(flood_never_reading, options.flood, options.flood_seconds), flush=True)
        return 0
    if options.keys:
        print(anyio.run(pipelined_keys, *options.keys), flush=True)
        return 0
    if options.exports:
        print(anyio.run(concurrent_exports, *options.exports), flush=True)
        return 0
    with serving(TOKEN) as (url, keeper):
        anyio.run(run, url, server_process(keeper), options.sessions, options.flood_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
