"""Exact replay across reconnects, snapshots when the gap is gone, slow clients."""

from __future__ import annotations

import sys

import pytest

from ptyvisor.client.client import Client, Output
from ptyvisor.wire.protocol import (
    ProcessChanged,
    Sessions,
)

from .conftest import RunningServer, output_of, until

pytestmark = pytest.mark.anyio

LINES = 4000


def numbered_lines() -> bytes:
    """What the writer below prints, as the PTY delivers it (``\\n`` → ``\\r\\n``)."""
    return "".join(f"line {i:05d} {'x' * (i % 70)}\r\n" for i in range(LINES)).encode()


WRITER = f"""
import sys, time
sys.stdin.readline()
for i in range({LINES}):
    sys.stdout.write(f"line {{i:05d}} {{'x' * (i % 70)}}\\n")
    if i % 100 == 0:
        sys.stdout.flush()
        time.sleep(0.01)
sys.stdout.flush()
sys.stdin.readline()
"""


def exited(event: object) -> bool:
    return isinstance(event, ProcessChanged) and event.process.state == "exited"


async def test_reconnect_resumes_exactly(server: RunningServer, client: Client) -> None:
    session = await client.spawn([sys.executable, "-c", WRITER], env={"PYTHONUNBUFFERED": "0"})
    first = await client.attach(session.id, since=0)
    assert first.replay == "exact" and first.seq == 0
    await client.send_input(b"go\r")
    expected = numbered_lines()
    got: list[bytes] = []
    # Read part of the stream, drop the connection mid-flow, resume from our seq.
    for cut in (len(expected) // 4, len(expected) // 2):
        while sum(map(len, got)) < cut:
            event = await client.next_event()
            if isinstance(event, Output):
                got.append(event.data)
        resumed = await client.reconnect()
        assert resumed is not None
        assert resumed.replay == "exact" and not resumed.truncated
        assert resumed.seq >= sum(map(len, got)), "resumes after what was received"
    while sum(map(len, got)) < len(expected) + len(b"go\r\n"):
        event = await client.next_event()
        if isinstance(event, Output):
            got.append(event.data)
    received = b"".join(got)
    # The terminal echoes the typed line before the program's output.
    assert received == b"go\r\n" + expected
    await client.send_input(b"\r")
    await until(client, exited)


async def test_exited_session_still_replays(client: Client) -> None:
    session = await client.spawn(["sh", "-c", "echo gone-soon; exit 4"])
    await client.watch_sessions()
    await until(
        client,
        lambda e: (
            isinstance(e, Sessions)
            and any(s.id == session.id and s.process.state == "exited" for s in e.sessions)
        ),
    )
    attached = await client.attach(session.id, since=0)
    assert attached.replay == "exact"
    assert attached.session.process.exit_code == 4
    assert attached.session.activity.phase == "failed"
    seen = await until(client, lambda e: isinstance(e, Output) and b"gone-soon" in e.data)
    assert b"gone-soon" in output_of(seen)
