"""Sessions take turns on the read path: a session reading alone drains big slices,
several read in short turns, so a flood does not hold up another session's echo.
(Latencies are measured in scripts/bench_all.py; here only with a wide margin.)"""

from __future__ import annotations

import statistics
import sys
import time

import anyio
import pytest

from ptyvisor.client.client import Client
from ptyvisor.server.session.reader import READ_ALONE, READ_SLICE, TOGETHER_SECONDS, Readers
from tests.timeouts import scaled

from ...conftest import TOKEN, RunningServer, output_until

pytestmark = pytest.mark.anyio


def test_a_session_alone_reads_big_slices_and_several_take_turns() -> None:
    readers = Readers()
    assert readers.slice(5, 0.0) == READ_ALONE
    assert readers.slice(5, 0.001) == READ_ALONE  # still alone
    assert readers.slice(7, 0.002) == READ_SLICE  # 5 read a moment ago
    assert readers.slice(5, 0.003) == READ_SLICE
    assert readers.slice(9, 0.004) == READ_SLICE
    assert readers.slice(5, 0.005) == READ_SLICE  # 9 and 7 are both recent
    later = 0.005 + TOGETHER_SECONDS + 0.001
    assert readers.slice(5, later) == READ_ALONE  # the others went quiet


async def echo_times(client: Client, session_id: str, count: int) -> list[float]:
    times = []
    for n in range(count):
        marker = f"echo-{n}-mark"
        started = time.monotonic()
        await client.send_input(marker + "\n")
        await output_until(client, marker.encode(), wait=30)
        times.append(time.monotonic() - started)
    return times


# The flood's viewer: a process of its own, as a real one is (in the test's process its
# parsing of the flood would delay the typist's reads, which is not the server's doing).
VIEWER = """
import asyncio, json, sys
from websockets.asyncio.client import connect
async def main(url, token, session):
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(url, additional_headers=headers, max_size=None) as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "attach", "session": session, "req_id": "v"}))
        print("attached", flush=True)
        async for _ in ws:
            pass
asyncio.run(main(*sys.argv[1:4]))
"""


async def test_a_flood_does_not_starve_another_sessions_echo(server: RunningServer) -> None:
    async with Client.connect(server.url, TOKEN) as typist:
        echo = await typist.spawn(["cat"])
        await typist.attach(echo.id)
        quiet = await echo_times(typist, echo.id, 10)
        flood = await typist.spawn(["sh", "-c", "base64 /dev/urandom"])
        argv = [sys.executable, "-c", VIEWER, server.url, TOKEN, flood.id]
        async with await anyio.open_process(argv, stderr=None) as viewer:
            assert viewer.stdout is not None
            with anyio.fail_after(scaled(30)):
                assert (await viewer.stdout.receive()).startswith(b"attached")
            busy = await echo_times(typist, echo.id, 20)
            viewer.kill()
        await typist.close(flood.id)
        await typist.close(echo.id)
    # Wide margins: a busy 2-core machine makes any single figure noisy.
    assert max(busy) < 5, busy
    assert statistics.median(busy) < max(10 * statistics.median(quiet), 0.1), (quiet, busy)
