"""Bounded memory: a client whose gap left the replay log gets a snapshot, and a
client that stops reading is dropped back to a snapshot without slowing others."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect

from ptyvisor.client import Client, Output
from ptyvisor.config import ServerConfig
from ptyvisor.protocol import SERVER_MESSAGE, Attached, SnapshotMessage

from .conftest import TOKEN, RunningServer, output_until

pytestmark = pytest.mark.anyio


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    return ServerConfig(
        token=TOKEN,
        port=0,
        state_dir=tmp_path / "state",
        replay_bytes=16 * 1024,
        # Roomy enough that the in-process "fast" client rarely falls behind on a busy
        # machine (the test allows for it); the slow one, which reads nothing, overflows
        # it all the same. Small enough that the flood overflowing it is short: at 16 MiB
        # the 40 MB flood once ran past the suite's 120 s timeout under load (run M).
        client_buffer=4 * 1024 * 1024,
    )


async def test_gap_gone_gives_snapshot(server: RunningServer, client: Client) -> None:
    script = "read go; seq 1 20000; echo END-MARK; read x"
    session = await client.spawn(["sh", "-c", script])
    observer = await client.attach(session.id)
    assert observer.replay == "snapshot" and not observer.truncated
    await client.send_input(b"\r")
    await output_until(client, b"END-MARK")
    await client.detach()
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
    # ~12 MB of output, far beyond the slow client's 4 MiB outbox and socket buffers.
    flood = "head -c 12000000 /dev/zero | tr '\\0' 'a' | fold -w 100; echo; echo FLOOD-END; read x"
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
        lagging: list[object] = []
        tail = b""
        with anyio.fail_after(100):
            while b"FLOOD-END" not in tail:
                # Per event, as long as the whole: a busy machine (run H) once starved
                # this in-process client for over next_event's default 10 s.
                event = await client.next_event(100)
                if isinstance(event, Output):
                    total += len(event.data)
                    tail = (tail + event.data)[-64:]
                else:
                    lagging.append(event)
        # It got to the end while the slow one read nothing: it was never stalled. On a
        # busy machine it may itself fall 16 MiB behind this in-process server (then it
        # is resynced like any lagging client); otherwise it got every byte.
        if not [e for e in lagging if isinstance(e, SnapshotMessage)]:
            assert total > 12_000_000
        stats = await client.stats(session.id)
        assert stats.render_lag <= server.config.render_lag_limit
        assert len(stats.client_queues) == 2
        assert max(stats.client_queues) <= server.config.client_buffer, "memory stays bounded"
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
