"""Exact replay across reconnects, snapshots when the gap is gone, slow clients."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect

from ptyvisor.client import Client, Output
from ptyvisor.config import ServerConfig
from ptyvisor.protocol import (
    SERVER_MESSAGE,
    Attached,
    ProcessChanged,
    Sessions,
    SnapshotMessage,
)

from .conftest import TOKEN, RunningServer, output_of, until

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
        assert resumed.seq == sum(map(len, got))
    while sum(map(len, got)) < len(expected) + len(b"go\r\n"):
        event = await client.next_event()
        if isinstance(event, Output):
            got.append(event.data)
    received = b"".join(got)
    # The terminal echoes the typed line before the program's output.
    assert received == b"go\r\n" + expected
    await client.send_input(b"\r")
    await until(client, exited)


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    return ServerConfig(
        token=TOKEN,
        port=0,
        state_dir=tmp_path / "state",
        replay_bytes=16 * 1024,
        client_buffer=256 * 1024,
    )


async def test_gap_gone_gives_snapshot(server: RunningServer, client: Client) -> None:
    script = "seq 1 20000; echo END-MARK; read x"
    session = await client.spawn(["sh", "-c", script])
    observer = await client.attach(session.id)
    await until(client, lambda e: isinstance(e, Output) and b"END-MARK" in e.data)
    await client.detach()
    assert observer.replay in ("snapshot", "exact")
    late = await client.attach(session.id, since=5)
    assert late.replay == "snapshot" and late.truncated
    assert late.snapshot is not None
    assert "END-MARK" in late.snapshot.screen.ansi
    assert "19999" in late.snapshot.screen.ansi
    assert late.seq == late.snapshot.seq
    fresh = await client.attach(session.id)
    assert fresh.replay == "snapshot" and not fresh.truncated
    await client.close(session.id)


async def test_slow_client_does_not_stall_fast_one(server: RunningServer, client: Client) -> None:
    # ~13 MB of output, far beyond the slow client's 256 KiB outbox and socket buffers.
    flood = "head -c 10000000 /dev/zero | tr '\\0' 'a' | fold -w 100; echo; echo FLOOD-END; read x"
    session = await client.spawn(["sh", "-c", "read go; " + flood])
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with connect(server.url, additional_headers=headers, max_size=None) as slow:
        await slow.recv()  # hello
        await slow.send(f'{{"type": "attach", "session": "{session.id}", "since": 0}}')
        fast = await client.attach(session.id, since=0)
        assert fast.replay == "exact"
        await client.send_input(b"\r")
        # The fast client gets every byte while the slow one reads nothing at all.
        total = 0
        tail = b""
        with anyio.fail_after(60):
            while b"FLOOD-END" not in tail:
                event = await client.next_event()
                if isinstance(event, Output):
                    total += len(event.data)
                    tail = (tail + event.data)[-64:]
        assert total > 10_000_000
        stats = await client.stats(session.id)
        assert stats.render_lag <= server.config.render_lag_limit
        # Now the slow client reads: it was dropped back to one fresh snapshot and
        # continues from its seq, ending with the same final output.
        resynced = False
        received = b""
        with anyio.fail_after(30):
            while b"FLOOD-END" not in received[-200:]:
                message = await slow.recv()
                if isinstance(message, bytes):
                    received += message
                    continue
                parsed = SERVER_MESSAGE.validate_json(message)
                if isinstance(parsed, SnapshotMessage):
                    assert parsed.reason == "lagging"
                    resynced = True
                    received = parsed.snapshot.screen.ansi.encode()
                elif isinstance(parsed, Attached):
                    assert parsed.replay == "exact"
        assert resynced, "a client that fell behind must be resynced with a snapshot"
    await client.close(session.id)


async def test_exited_session_still_replays(client: Client) -> None:
    session = await client.spawn(["sh", "-c", "echo gone-soon; exit 4"])
    await client.watch_sessions()
    await until(
        client,
        lambda e: isinstance(e, Sessions)
        and any(s.id == session.id and s.process.state == "exited" for s in e.sessions),
    )
    attached = await client.attach(session.id, since=0)
    assert attached.replay == "exact"
    assert attached.session.process.exit_code == 4
    assert attached.session.activity.phase == "failed"
    seen = await until(client, lambda e: isinstance(e, Output) and b"gone-soon" in e.data)
    assert b"gone-soon" in output_of(seen)
