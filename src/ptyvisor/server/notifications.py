"""Attention that reaches the user away from the page: a notification when a session
needs input, finishes a turn, fails or exits, sent through Apprise.

Apprise (PyPI ``apprise``) already speaks ntfy, Slack, Telegram, Discord, Matrix,
email, generic JSON webhooks and about a hundred more, each by a URL; ptyvisor only
decides what to say and when. Targets come from ``serve --notify`` and from the file
``<state-dir>/notify`` (one per line, ``#`` comments; the place for a URL that holds
a secret, as a command line is visible to every user of the machine). A target may
end in filters: ``on=input,done,failed,exited`` and ``sessions=GLOB`` (a session's
name or id).

What to say is found by comparing session summaries (`notices`, I/O-free), after the
session list changed; it never runs on the read path. Sending happens in a task of
its own through a bounded queue: a receiver that hangs or fails costs retries with
backoff, then the notification, never the server; what is dropped is counted (see
``/metrics``). A URL is never logged or shown whole (`NotifyTarget.shown`), and what a session
says (a question's title, a failure's reason) is made printable and cut short.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import anyio
import anyio.abc
import anyio.to_thread

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.config import DEFAULT_NOTIFY_QUIET, NotifyTarget
from ptyvisor.wire.protocol import SessionSummary
from ptyvisor.wire.untrusted import printable

log = logging.getLogger(__name__)

QUEUE_LIMIT = 256
"""Notifications waiting to be sent, past which new ones are dropped (and counted)."""
ATTEMPTS = 3
BACKOFF_SECONDS = (1.0, 4.0)
"""Waits before the second and third attempt."""
SEND_SECONDS = 20.0
"""How long one attempt may take before it counts as failed."""
TEST_MESSAGE = "notifications reach you"
TEXT_LIMIT = 300
"""A session's own text in a notification (a title, a reason) is cut to this."""

Send = Callable[[str, str, str], bool]
"""``send(url, title, body)``: True if delivered (blocking; run in a worker thread)."""


def apprise_send(url: str, title: str, body: str) -> bool:
    """Through Apprise (imported on first use: most servers notify nobody)."""
    import apprise

    sender = apprise.Apprise()
    if not sender.add(url):
        return False
    return bool(sender.notify(title=title, body=body))


@dataclass(frozen=True)
class Notice:
    event: str
    session: str
    name: str
    title: str
    body: str


@dataclass(frozen=True)
class Seen:
    """What notices are decided on, per session."""

    phase: ActivityPhase
    pending: str | None
    exited: bool


def _text(value: str | None) -> str:
    return printable(value or "")[:TEXT_LIMIT]


def notices(
    before: dict[str, Seen], summaries: Iterable[SessionSummary]
) -> tuple[list[Notice], dict[str, Seen]]:
    """What changed since ``before`` that is worth a notification, and what is seen
    now. A session seen for the first time is noted, not announced."""
    found: list[Notice] = []
    now: dict[str, Seen] = {}
    for summary in summaries:
        if summary.past:
            continue
        pending = summary.pending_interaction
        exited = summary.process.state == "exited"
        seen = now[summary.id] = Seen(
            summary.activity.phase, pending.id if pending else None, exited
        )
        old = before.get(summary.id)
        if old is not None:
            name = _text(summary.name)
            found += [
                Notice(event, summary.id, name, f"{name}: {title}", body)
                for event, title, body in _changes(old, seen, summary)
            ]
    return found, now


def _changes(old: Seen, seen: Seen, summary: SessionSummary) -> list[tuple[str, str, str]]:
    """(event, title, body) for each change from ``old`` to ``seen`` worth telling."""
    changes = []
    pending, activity, process = summary.pending_interaction, summary.activity, summary.process
    if pending is not None and seen.pending != old.pending:
        changes.append(("input", "needs input", _text(pending.title)))
    elif seen.phase is ActivityPhase.NEEDS_INPUT and old.phase is not seen.phase:
        changes.append(("input", "needs input", _text(activity.reason)))
    if seen.phase is ActivityPhase.WAITING and old.phase is ActivityPhase.WORKING:
        changes.append(("done", "finished a turn", "ready for input"))
    if seen.phase is ActivityPhase.FAILED and old.phase is not ActivityPhase.FAILED:
        changes.append(("failed", "failed", _text(activity.reason)))
    if seen.exited and not old.exited:
        how = f"signal {process.signal}" if process.signal else f"exit code {process.exit_code}"
        changes.append(("exited", "exited", how))
    return changes


@dataclass
class Counts:
    sent: int = 0
    failed: int = 0
    dropped: int = 0
    quieted: int = 0


@dataclass
class Notifier:
    """Decides and sends a server's notifications (see the module's notes)."""

    targets: list[NotifyTarget]
    quiet: float = DEFAULT_NOTIFY_QUIET
    """Seconds in which a session's same event goes to a target once at most."""
    send: Send = apprise_send
    counts: Counts = field(default_factory=Counts)

    def __post_init__(self) -> None:
        self._seen: dict[str, Seen] = {}
        self._last: dict[tuple[str, str, str], float] = {}
        self._queue: deque[tuple[NotifyTarget, Notice]] = deque()
        self._dirty = anyio.Event()
        self._queued = anyio.Event()

    def changed(self) -> None:
        """The session list changed (cheap: the work happens in `run`)."""
        self._dirty.set()

    async def run(
        self,
        summaries: Callable[[], list[SessionSummary]],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Decide and send until cancelled; started once it has seen the sessions
        there are (those are noted, not announced)."""
        self._seen = notices({}, summaries())[1]
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._sender)
            task_status.started()
            while True:
                await self._dirty.wait()
                self._dirty = anyio.Event()
                found, self._seen = notices(self._seen, summaries())
                now = time.monotonic()
                # Bounded: what is past its quiet time says nothing any more.
                self._last = {k: t for k, t in self._last.items() if now - t < self.quiet}
                for notice in found:
                    self._enqueue(notice, now)

    def _enqueue(self, notice: Notice, now: float) -> None:
        for target in self.targets:
            if not target.wants(notice.event, notice.name, notice.session):
                continue
            key = (target.url, notice.session, notice.event)
            if now - self._last.get(key, -self.quiet) < self.quiet:
                self.counts.quieted += 1
                continue
            if len(self._queue) >= QUEUE_LIMIT:
                self.counts.dropped += 1
                continue
            self._last[key] = now
            self._queue.append((target, notice))
            self._queued.set()

    async def _sender(self) -> None:
        while True:
            await self._queued.wait()
            self._queued = anyio.Event()
            while self._queue:
                target, notice = self._queue.popleft()
                if await self._deliver(target, notice.title, notice.body):
                    self.counts.sent += 1
                else:
                    self.counts.failed += 1
                    log.warning(
                        "notification to %s failed %d times; dropped", target.shown, ATTEMPTS
                    )

    async def _deliver(self, target: NotifyTarget, title: str, body: str) -> bool:
        for attempt in range(ATTEMPTS):
            if attempt:
                await anyio.sleep(BACKOFF_SECONDS[attempt - 1])
            if await self._attempt(target, title, body):
                return True
        return False

    async def _attempt(self, target: NotifyTarget, title: str, body: str) -> bool:
        with anyio.move_on_after(SEND_SECONDS):
            try:
                return await anyio.to_thread.run_sync(
                    self.send, target.url, title, body, abandon_on_cancel=True
                )
            except Exception as error:  # a plugin's bug costs the notification
                log.warning("notification to %s: %s", target.shown, type(error).__name__)
        return False

    async def test(self) -> list[tuple[str, bool]]:
        """One test message to every target, at once (so the request takes one
        attempt's time at most): (the masked URL, delivered), in the targets' order."""
        delivered = [False] * len(self.targets)

        async def attempt(index: int, target: NotifyTarget) -> None:
            delivered[index] = await self._attempt(
                target, "ptyvisor: test", "notifications reach you"
            )

        async with anyio.create_task_group() as tg:
            for index, target in enumerate(self.targets):
                tg.start_soon(attempt, index, target)
        return [(target.shown, ok) for target, ok in zip(self.targets, delivered, strict=True)]
