"""A session's attached clients (clients.py): each caught up exactly, or from a
snapshot when the bytes it asks for are gone or it fell behind, then the live stream
with nothing lost or twice; the program's size follows the client that typed last.
Real sessions on real PTYs (`test_session.running`); outboxes read as a connection
would."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ptyvisor.server.outbox import Outbox
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.wire.protocol import TermSize

from .test_session import Config, Listener, running, until

pytestmark = pytest.mark.anyio

# Prints what it reads, numbered, so every line of output is unique and in order.
NUMBERED = (
    "import sys\n"
    "for n, line in enumerate(sys.stdin):\n"
    "    sys.stdout.write(f'{n}:{line}'); sys.stdout.flush()\n"
)


def screen(data: bytes, cols: int = 80, rows: int = 24) -> list[str]:
    terminal = HeadlessTerminal(cols, rows)
    terminal.feed(data)
    return [row.rstrip() for row in terminal.display]


async def test_a_client_attached_from_a_held_seq_gets_exactly_the_bytes_since(
    tmp_path: Path,
) -> None:
    async with running([sys.executable, "-c", NUMBERED], tmp_path) as (session, first):
        session.write_input(b"one\n")
        await until(lambda: b"0:one" in first.seen())
        since = len(first.seen()) // 2
        later = Listener()
        await session.clients.attach(later, since=since, req_id=7)
        session.write_input(b"two\n")
        await until(lambda: b"1:two" in later.seen() and b"1:two" in first.seen())
        attached = later.first("attached")
        assert attached is not None
        assert (attached["req_id"], attached["replay"], attached["seq"]) == (7, "exact", since)
        assert later.seen() == first.seen()[since:]
        assert session.summary().clients == 2


async def test_a_client_asking_for_bytes_no_longer_held_gets_a_snapshot_then_the_stream(
    tmp_path: Path,
) -> None:
    """What it ends up showing is what a client that saw everything shows."""
    config = Config(replay_bytes=4096)
    async with running([sys.executable, "-c", NUMBERED], tmp_path, config=config) as (
        session,
        first,
    ):
        for batch in range(8):  # in separate reads: the log drops whole appends
            lines = range(batch * 50, batch * 50 + 50)
            session.write_input(b"".join(b"line %d\n" % n for n in lines))
            last = b"%d:line %d" % (lines[-1], lines[-1])
            await until(lambda: last in first.seen())  # noqa: B023 - awaited here
        assert not session.log.holds(0)
        late = Listener()
        await session.clients.attach(late, since=0, req_id=1)
        session.write_input(b"after\n")
        await until(lambda: b"400:after" in late.seen() and b"400:after" in first.seen())
        attached = late.first("attached")
        assert attached is not None and attached["replay"] == "snapshot" and attached["truncated"]
        drawn = attached["snapshot"]["screen"]["ansi"].encode()  # type: ignore[index]
        assert screen(drawn + late.seen()) == screen(first.seen())


async def test_a_client_that_falls_behind_is_redrawn_from_a_snapshot_in_order(
    tmp_path: Path,
) -> None:
    """Past its outbox's limit its queued output is dropped; the resync gives it one
    snapshot, and the events that came meanwhile follow it, never before."""
    async with running([sys.executable, "-c", NUMBERED], tmp_path) as (session, first):
        slow = Listener(outbox=Outbox(limit=2048))
        await session.clients.attach(slow, since=None, req_id=1)
        session.write_input(b"".join(b"flood %d\n" % n for n in range(300)))
        await until(lambda: b"299:flood 299" in first.seen())
        assert slow.outbox.lagging
        await session.resize(90, 24)  # an event while it lags: behind the snapshot
        await session.clients.resync(slow)
        session.write_input(b"tail\n")
        await until(lambda: b"300:tail" in slow.seen())
        kinds = [message["type"] for message in slow.messages]
        assert kinds[:2] == ["attached", "snapshot"] and "resized" in kinds[2:]
        assert session.clients.resyncs == 1
        lagged = slow.messages[1]["snapshot"]["screen"]["ansi"].encode()  # type: ignore[index]
        after = bytes(slow.output[slow.output_at[1] :])
        captured = await session.capture(scrollback=0, ansi=False)
        assert screen(lagged + after, 90) == [row.rstrip() for row in captured.rows]
        assert "300:tail" in "\n".join(screen(lagged + after, 90))


async def test_the_size_is_the_last_typing_clients_and_a_viewer_never_changes_it(
    tmp_path: Path,
) -> None:
    async with running(["cat"], tmp_path) as (session, _first):
        wide, narrow, viewer = Listener(), Listener(), Listener()
        await session.clients.attach(wide, since=None, req_id=1, size=TermSize(cols=120, rows=40))
        assert session.size == TermSize(cols=120, rows=40)  # nobody held it
        await session.clients.attach(narrow, since=None, req_id=2, size=TermSize(cols=60, rows=20))
        assert session.size.cols == 120  # held by the wide one
        await session.clients.attach(
            viewer, since=None, req_id=3, size=TermSize(cols=30, rows=10), view_only=True
        )
        assert session.clients.is_viewer(viewer) and session.size.cols == 120
        session.clients.typed_by(narrow)
        await until(lambda: session.size == TermSize(cols=60, rows=20))
        session.clients.detach(narrow)
        await until(lambda: session.size == TermSize(cols=120, rows=40))  # back to the wide
        assert len(session.clients) == 3  # the first, the wide one and the viewer
