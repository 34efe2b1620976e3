"""The clients attached to one session: catching each up (exact bytes, or a snapshot
and the bytes after it), redrawing one that fell behind, who watches only, whose size
the program has (sizing.py), and every event sent to them all.

A client that attaches with a ``since`` the log still holds gets exactly the bytes it
missed; any other gets a snapshot. While its snapshot is made, what arrives is held
in its outbox and released after it, minus what the snapshot already shows
(`_release`), so it sees the screen and then exactly what followed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from typing import Protocol

from ptyvisor.server.outbox import Outbox
from ptyvisor.server.outputlog import OutputLog
from ptyvisor.server.renderer import Renderer
from ptyvisor.server.sizing import SizePolicy
from ptyvisor.terminal import TerminalSnapshot
from ptyvisor.wire.protocol import (
    Attached,
    Screen,
    SessionSummary,
    Snapshot,
    SnapshotMessage,
    TerminalModesModel,
    TermSize,
)


class Subscriber(Protocol):
    """An attached client, as a session sees it."""

    @property
    def outbox(self) -> Outbox: ...

    @property
    def answers_queries(self) -> bool: ...


class Sessionlike(Protocol):
    """What the clients need of their session."""

    log: OutputLog
    renderer: Renderer

    def summary(self) -> SessionSummary: ...

    async def resize(self, cols: int, rows: int) -> None: ...

    def resize_soon(self, size: TermSize | None) -> None: ...

    def changed(self) -> None:
        """The session list shows something new (the number of clients)."""


def snapshot_of(summary: SessionSummary, terminal: TerminalSnapshot, seq: int) -> Snapshot:
    """The protocol's snapshot of a rendered screen (the summary taken before it)."""
    return Snapshot(
        session=summary,
        seq=seq,
        size=TermSize(cols=terminal.cols, rows=terminal.rows),
        screen=Screen(
            ansi=terminal.ansi,
            cursor_row=terminal.cursor_row,
            cursor_col=terminal.cursor_col,
            title=terminal.title,
            modes=TerminalModesModel.model_validate(asdict(terminal.modes)),
        ),
    )


class Clients:
    """One session's attached clients."""

    def __init__(self, session: Sessionlike) -> None:
        self._session = session
        self._subscribers: list[Subscriber] = []
        self._viewers: set[Subscriber] = set()
        """Attached with ``view_only``: they never type or resize."""
        self.sizing: SizePolicy[Subscriber] = SizePolicy()
        self.answering = 0
        """Attached clients that answer terminal queries themselves (see replay.py)."""
        self.resyncs = 0
        """Clients redrawn from a snapshot because they fell behind."""

    def __len__(self) -> int:
        return len(self._subscribers)

    def __iter__(self) -> Iterator[Subscriber]:
        return iter(self._subscribers)

    def output(self, data: bytes) -> None:
        """New output: straight into every attached client's outbox (never waits)."""
        for subscriber in self._subscribers:
            subscriber.outbox.put_output(data)

    def broadcast(self, text: str) -> None:
        for subscriber in self._subscribers:
            subscriber.outbox.put_text(text)

    def queues(self) -> list[int]:
        return [subscriber.outbox.size for subscriber in self._subscribers]

    # ------------------------------------------------------------------ attach

    async def attach(
        self,
        subscriber: Subscriber,
        *,
        since: int | None,
        req_id: str | int | None,
        scrollback: bool = True,
        size: TermSize | None = None,
        view_only: bool = False,
    ) -> None:
        """Register a client and queue its catch-up: exact bytes if held, else a
        snapshot. ``size``: what the client would like (it gets it if nobody holds
        the size yet); ``view_only``: it only watches."""
        session = self._session
        log, renderer = session.log, session.renderer
        if view_only:
            self._viewers.add(subscriber)
        else:
            self._viewers.discard(subscriber)
            wanted = self.sizing.attached(subscriber, size)
            if wanted is not None:
                await session.resize(wanted.cols, wanted.rows)
        if since is not None and log.holds(since):
            self._subscribe(subscriber)
            subscriber.outbox.put_text(
                Attached(
                    req_id=req_id,
                    session=session.summary(),
                    seq=since,
                    # Queries the headless terminal has parsed were answered (by it,
                    # or by the client then attached); from here on this client
                    # answers, as the server now stays silent (see replay.py).
                    live_seq=min(max(since, renderer.rendered_seq), log.end_seq),
                    replay="exact",
                    truncated=False,
                ).model_dump_json()
            )
            subscriber.outbox.put_output(log.read(since))
            return
        target = log.end_seq
        subscriber.outbox.hold()
        self._subscribe(subscriber)
        # The summary first: an exit it reports happened after all of the program's
        # output was in the log, so the screen shows that output.
        summary = session.summary()
        terminal, seq = await renderer.snapshot(target, scrollback=scrollback)
        snapshot = snapshot_of(summary, terminal, seq)
        attached = Attached(
            req_id=req_id,
            session=snapshot.session,
            seq=snapshot.seq,
            live_seq=snapshot.seq,
            replay="snapshot",
            truncated=since is not None,
            snapshot=snapshot,
        )
        self._release(subscriber, attached.model_dump_json(), snapshot.seq, target)

    async def resync(self, subscriber: Subscriber) -> None:
        """Give a lagging client a fresh snapshot; its stream continues right after it."""
        session = self._session
        self.resyncs += 1
        subscriber.outbox.discard_output()
        subscriber.outbox.resynced()
        summary = session.summary()  # first, as in `attach`
        target = session.log.end_seq
        subscriber.outbox.hold()
        # Shared with clients that lag at about the same point; the bytes since that
        # screen are replayed after it (`_release`), a quarter of the buffer at most.
        terminal, seq = await session.renderer.shared_snapshot(target, subscriber.outbox.limit // 4)
        message = SnapshotMessage(reason="lagging", snapshot=snapshot_of(summary, terminal, seq))
        self._release(subscriber, message.model_dump_json(), seq, target)

    def _release(self, subscriber: Subscriber, message: str, seq: int, held_from: int) -> None:
        """Send a snapshot ``message`` showing the screen up to ``seq``, then the stream
        from there: output held since ``held_from``, less what the snapshot shows, or
        also the few bytes before it that the snapshot does not (see `Renderer`)."""
        replay = self._session.log.read(seq, held_from) if seq < held_from else b""
        subscriber.outbox.release(message, covered=max(seq - held_from, 0), replay=replay)

    def _subscribe(self, subscriber: Subscriber) -> None:
        if subscriber not in self._subscribers:
            self._subscribers.append(subscriber)
            self.answering += subscriber.answers_queries
            self._session.changed()

    def detach(self, subscriber: Subscriber) -> None:
        self._viewers.discard(subscriber)
        self._session.resize_soon(self.sizing.detached(subscriber))
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)
            self.answering -= subscriber.answers_queries
            subscriber.outbox.detached()
            self._session.changed()

    def detach_all(self) -> list[Subscriber]:
        subscribers, self._subscribers = self._subscribers, []
        self.answering = 0
        self._viewers.clear()
        self.sizing = SizePolicy()
        return subscribers

    # ------------------------------------------------------------------ sizes

    def is_viewer(self, client: Subscriber) -> bool:
        return client in self._viewers

    def typed_by(self, client: Subscriber) -> None:
        """Input from ``client`` is next: it takes its size back first (tmux's latest)."""
        self._session.resize_soon(self.sizing.typed(client))

    async def resized_by(
        self, client: Subscriber, cols: int, rows: int, *, claim: bool = True
    ) -> None:
        """``client``'s window is now ``cols`` x ``rows``: the program follows it, or
        (``claim`` false: only its layout moved) only if the client holds the size."""
        size = TermSize(cols=cols, rows=rows)
        if client not in self._subscribers:
            self.sizing.resized_from_outside()
        elif claim:
            self.sizing.resized(client, size)
        elif self.sizing.wants(client, size) is None:
            return
        await self._session.resize(cols, rows)
