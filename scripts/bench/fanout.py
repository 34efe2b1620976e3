"""Row 8: 50 clients on one flood: bytes or a clean resync, and the read rate."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream
from websockets.asyncio.client import ClientConnection

from bench.common import (
    READY,
    Bench,
    Followed,
    follow,
    mb,
    mb_s,
    plain_connection,
    plain_request,
    progress,
    start_cat,
    until_output,
    worker_command,
    worker_env,
)
from bench.output_path import per_round

# --------------------------------------------------------------------------- row 8


async def follow_all(
    url: str, session_id: str, clients: int, expected: memoryview, attached: Callable[[], object]
) -> list[Followed]:
    """``clients`` plain clients attach to the session (``since`` 0), ``attached`` is
    called, and each follows the stream to the end of ``expected``."""
    results: list[Followed] = []
    async with AsyncExitStack() as stack:
        sockets = [await stack.enter_async_context(plain_connection(url)) for _ in range(clients)]
        for ws in sockets:
            await plain_request(ws, {"type": "attach", "session": session_id, "since": 0})
        attached()

        async def follow_one(ws: ClientConnection) -> None:
            with anyio.move_on_after(600) as late:
                results.append(await follow(ws, 0, len(expected), expected))
            if late.cancelled_caught:
                results.append(Followed(lost="still short of the end after 600 s"))

        async with anyio.create_task_group() as tg:
            for ws in sockets:
                tg.start_soon(follow_one, ws)
    return results


async def fanout_round(
    bench: Bench, expected: memoryview, clients: int, *, apart: bool
) -> tuple[float, list[Followed]]:
    """``clients`` plain clients follow ``cat`` of the file (``expected``: what it
    prints): the rate the server read the PTY at, and what each client got. ``apart``:
    the clients run in a process of their own at the lowest CPU priority, as clients
    on other machines would leave the server's CPU to it; otherwise in this one."""
    control = bench.control
    session = await start_cat(control, bench.cat.path)
    results: list[Followed] = []

    async def go() -> float:
        """Start ``cat`` (every client attached): the seconds until it was all read."""
        started = time.perf_counter()
        await control.input(session.id, "go\n")
        with anyio.fail_after(600):
            await until_output(control, session.id, len(expected))
        return time.perf_counter() - started

    try:
        if apart:
            argv = ["nice", "-n", "19", *worker_command("follow", bench.url)]
            argv += [session.id, str(clients), str(bench.cat.path)]
            async with await anyio.open_process(argv, stderr=None, env=worker_env()) as process:
                assert process.stdout is not None
                lines = BufferedByteReceiveStream(process.stdout)
                if await lines.receive_until(b"\n", 1024) != b"attached":
                    raise RuntimeError("row 8's clients did not attach")
                read_seconds = await go()
                said = await lines.receive_until(b"\n", 1024 * 1024)
            results = [Followed(**result) for result in json.loads(said)]
        else:
            attached = anyio.Event()

            async def follow_here() -> None:
                results.extend(
                    await follow_all(bench.url, session.id, clients, expected, attached.set)
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(follow_here)
                await attached.wait()
                read_seconds = await go()
    finally:
        await control.close(session.id)
    return (len(expected) - len(READY)) / read_seconds, results


def consistency(followed: Sequence[Followed]) -> str:
    """How many clients got every byte, resynced cleanly, diverged or were lost."""
    exact = sum(1 for f in followed if not (f.snapshots or f.diverged or f.lost))
    resynced = [f for f in followed if f.snapshots and not (f.diverged or f.lost)]
    snapshots = sum(f.snapshots for f in resynced)
    diverged = sum(1 for f in followed if f.diverged)
    lost = sum(1 for f in followed if f.lost)
    received = sum(f.received for f in followed) / max(len(followed), 1)
    return (
        f"{exact} exact, {len(resynced)} resynced ({snapshots} lagging snapshots), "
        f"{diverged} diverged, {lost} lost; {mb(received)} of output each on average"
    )


async def fanout(bench: Bench) -> None:
    sizes, report = bench.sizes, bench.report
    expected = memoryview(READY + await anyio.Path(bench.cat.path).read_bytes())
    rates: dict[bool, tuple[list[float], list[float]]] = {True: ([], []), False: ([], [])}
    lone: list[Followed] = []
    followed: list[Followed] = []
    for number in range(sizes.fanout_rounds):
        for apart in (True, False):
            where = "apart, niced" if apart else "in this process"
            alone, crowded = rates[apart]
            progress(f"row 8: 1 client ({where}), round {number + 1}/{sizes.fanout_rounds}")
            rate, results = await fanout_round(bench, expected, 1, apart=apart)
            alone.append(rate)
            lone += results
            progress(
                f"row 8: {sizes.clients} clients ({where}), "
                f"round {number + 1}/{sizes.fanout_rounds}"
            )
            rate, results = await fanout_round(bench, expected, sizes.clients, apart=apart)
            crowded.append(rate)
            followed += results
    report.raw["8_fanout"] = {
        "bytes": len(expected) - len(READY),
        "read_rate_1_client_apart": rates[True][0],
        "read_rate_all_clients_apart": rates[True][1],
        "read_rate_1_client_here": rates[False][0],
        "read_rate_all_clients_here": rates[False][1],
        "lone_client": [asdict(f) for f in lone],
        "clients": [asdict(f) for f in followed],
    }
    report.add(
        "8a",
        f"{sizes.clients} clients on one session flooding {len(expected) / 1e6:.0f} MB: "
        "each got identical bytes or a clean resync",
        f"of {len(followed)} ({2 * sizes.fanout_rounds} x {sizes.clients}): "
        f"{consistency(followed)}; "
        f"a lone client: {consistency(lone)}",
        "none diverged or lost",
        not any(f.diverged or f.lost for f in followed + lone),
    )
    for key, apart, where in (
        ("8b", True, "the clients in a process of their own at nice 19 (as on other machines)"),
        ("8c", False, "the clients in the benchmark's process, sharing the 2 cores"),
    ):
        alone, crowded = rates[apart]
        ratio = per_round(list(zip(crowded, alone, strict=True)))
        report.add(
            key,
            f"PTY read rate with {sizes.clients} clients ÷ with 1, {where}",
            f"{ratio:.2f} ({mb_s(statistics.median(crowded))} vs {mb_s(statistics.median(alone))})",
            "≥ 0.8",
            ratio >= 0.8,
        )
