"""Bounded memory: a client whose gap left the replay log gets a snapshot, and a
client that stops reading is dropped back to a snapshot without slowing others."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import connect

from ptyvisor.client.client import Client, Output
from ptyvisor.config import ServerConfig
from ptyvisor.server.renderer import SKIP_STEP
from ptyvisor.server.session.reader import INGEST_BYTES
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.wire.protocol import SERVER_MESSAGE, Attached, SessionStats, SnapshotMessage
from tests.timeouts import scaled

from .conftest import TOKEN, RunningServer, output_until, poll
from .server.test_webpage import get

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
    # max_queue=1: the slow client's library queues one message, not 16 (4 MiB more
    # that the flood would have to fill before the server's outbox overflows).
    async with connect(server.url, additional_headers=headers, max_size=None, max_queue=1) as slow:
        await slow.recv()  # hello
        await slow.send(f'{{"type": "attach", "session": "{session.id}", "since": 0}}')
        fast = await client.attach(session.id, since=0)
        assert fast.replay == "exact"
        await client.send_input(b"\r")
        # The fast client gets every byte while the slow one reads nothing at all.
        total = 0
        lagging: list[object] = []
        tail = b""
        with anyio.fail_after(scaled(100)):
            while b"FLOOD-END" not in tail:
                # Per event, as long as the whole: a busy machine (run H) once starved
                # this in-process client for over next_event's default 10 s.
                event = await client.next_event(100)
                if isinstance(event, Output):
                    total += len(event.data)
                    tail = (tail + event.data)[-64:]
                else:
                    lagging.append(event)
                    if isinstance(event, SnapshotMessage):
                        # Resynced after the flood ended: the end is on its screen,
                        # and no byte after it will say so again.
                        tail = event.snapshot.screen.ansi.encode()
        # It got to the end while the slow one read nothing: it was never stalled. On a
        # busy machine it may itself fall 16 MiB behind this in-process server (then it
        # is resynced like any lagging client); otherwise it got every byte.
        if not [e for e in lagging if isinstance(e, SnapshotMessage)]:
            assert total > 12_000_000
        # The renderer skips a step at a time once past its limit (renderer.py), and
        # the flood's last read may have come after the last skip. While a batch is
        # being rendered (its lock held) the reader goes on and nothing is skipped, so
        # on a busy machine the lag may pass that bound for as long as the batch takes
        # (CI saw 1.0 MB against 0.85): the renderer must be back within it right
        # after, skipping what lies past its limit.
        lag_bound = server.config.render_lag_limit + SKIP_STEP + INGEST_BYTES

        async def within_bound() -> SessionStats | None:
            stats = await client.stats(session.id)
            return stats if stats.render_lag <= lag_bound else None

        stats = await poll(within_bound)
        # Catching up is not enough (a renderer that never skips gets there too, late):
        # it is held within a few KiB of a 16 KiB log while it draws about a hundred
        # times slower than the PTY delivers, so 12 MB cannot all have been drawn.
        assert stats.render_skipped > 0
        assert len(stats.client_queues) == 2
        assert max(stats.client_queues) <= server.config.client_buffer, "memory stays bounded"
        # Now the slow client reads: it was dropped back to one fresh snapshot and
        # continues from its seq, ending with the same final output.
        resynced = False
        received = b""
        with anyio.fail_after(scaled(30)):
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


async def flood_ended(client: Client) -> None:
    """Until the flood's end shows for this client: in its output, or in the snapshot
    it is resynced with when it too falls behind (on a busy machine the test's own
    client, in the server's process, can; the bytes before the snapshot never come)."""
    tail = b""
    with anyio.fail_after(scaled(100)):
        while True:
            event = await client.next_event(100)
            if isinstance(event, Output):
                tail += event.data
                if b"FLOOD-END" in tail:
                    return
                tail = tail[-16:]
            elif isinstance(event, SnapshotMessage) and event.reason == "lagging":
                if "FLOOD-END" in event.snapshot.screen.ansi:
                    return
                tail = b""


async def test_clients_that_lag_together_share_snapshots_and_stay_exact(
    server: RunningServer, server_config: ServerConfig, client: Client
) -> None:
    """Slow clients that overflow at the same moment are resynced from one snapshot
    (then the bytes after it): each still ends on the program's exact screen."""
    server_config.client_buffer = 256 * 1024  # read as each client connects
    # ~10 MB: more than the socket buffers hold before each client's outbox overflows.
    lines = "seq 1 300000 | sed 's/^/line of the flood, number /'; echo FLOOD-END; read x"
    session = await client.spawn(["sh", "-c", "read go; " + lines], cols=60, rows=12)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with contextlib.AsyncExitStack() as stack:
        slow = [
            await stack.enter_async_context(
                connect(server.url, additional_headers=headers, max_size=None, max_queue=1)
            )
            for _ in range(4)
        ]
        for ws in slow:
            await ws.recv()  # hello
            await ws.send(f'{{"type": "attach", "session": "{session.id}", "since": 0}}')
        await client.attach(session.id)
        await client.send_input(b"\r")
        await flood_ended(client)
        final = await client.snapshot(session.id, scrollback=False)
        expected = HeadlessTerminal(60, 12)
        expected.feed(final.screen.ansi.encode())
        for ws in slow:
            screen = HeadlessTerminal(60, 12)  # attached before the flood: from seq 0
            with anyio.fail_after(scaled(60)):
                while "FLOOD-END" not in "\n".join(screen.display):
                    message = await ws.recv()
                    if isinstance(message, bytes):
                        screen.feed(message)
                        continue
                    parsed = SERVER_MESSAGE.validate_json(message)
                    if isinstance(parsed, SnapshotMessage):
                        screen = HeadlessTerminal(60, 12)
                        screen.feed(parsed.snapshot.screen.ansi.encode())
            assert screen.display == expected.display
    metrics = await get(server, "/metrics", **headers)
    samples = {
        sample.name: sample.value
        for family in text_string_to_metric_families(metrics.body.decode())
        for sample in family.samples
    }
    resyncs, rendered = (
        samples["ptyvisor_resyncs_total"],
        samples["ptyvisor_resync_snapshots_total"],
    )
    assert resyncs >= 4 and 1 <= rendered < resyncs, (resyncs, rendered)
    await client.close(session.id)
