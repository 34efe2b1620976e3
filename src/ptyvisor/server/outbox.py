"""One bounded send queue per client connection.

Fan-out never waits: the PTY reader appends to every attached client's outbox and
moves on. A client whose queued output passes its byte limit is marked *lagging*:
its queued output is dropped and, when its sender next runs, it gets one fresh
snapshot and continues from there — as tmux redraws a client that fell behind.
Everything else queued after that point (an ``activity``, a ``process`` exit) waits
behind the snapshot, so the client sees events in the order they happened.

Replies and events (text) are bounded too. Past ``text_limit`` queued bytes the
connection stops reading requests (`room`): a client that sends requests and never
reads the replies stops being served, and no further replies pile up. Events pushed
regardless (activity, session-list, ...) are capped at ``4 * text_limit`` (16 MiB at
least); past that
the outbox *overflows* and the connection is closed with a reason. Memory per client
stays bounded whatever the program writes or the client sends, and a slow client
never slows the PTY or other clients.

The session-list stream is state, not history, so it is a flag: the sender sends the
current list once however many changes happened while it was busy.

While a snapshot is being made for this client, everything that arrives is *held*
(still bounded) and released after the snapshot message, minus any bytes the
snapshot already covers: the client sees the screen, then exactly what followed it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import anyio

from ptyvisor.config import DEFAULT_CLIENT_BUFFER as DEFAULT_LIMIT

MAX_BINARY_MESSAGE = 256 * 1024
OVERFLOW_FACTOR = 4
"""Queued text beyond ``OVERFLOW_FACTOR * text_limit`` closes the connection."""
MIN_OVERFLOW = 16 * 1024 * 1024
"""...and never below this: a client that does read must survive a burst of events
(a program may write many large interactions in a moment)."""


@dataclass(eq=False)
class Tracked:
    """A text message, already encoded as UTF-8 (by a worker thread: a big reply's
    encoding stays off the event loop), whose sender wants to know when it has been
    handed to the connection (`Outbox.put_tracked`): a big reply keeps its place in a
    bounded budget until then."""

    text: bytes
    sent: anyio.Event = field(default_factory=anyio.Event)

    def fragments(self) -> Iterator[bytes]:
        """The message in WebSocket fragments of `FRAGMENT` bytes (a fragment may end
        inside a UTF-8 character: only the whole message must be valid)."""
        view = memoryview(self.text)
        for start in range(0, len(view), FRAGMENT):
            yield bytes(view[start : start + FRAGMENT])


FRAGMENT = 256 * 1024
Item = str | Tracked | list[bytes]


class Outbox:
    """Queued text (JSON) and binary (terminal output) messages for one client."""

    def __init__(self, limit: int = DEFAULT_LIMIT, text_limit: int | None = None) -> None:
        self._limit = limit
        self._text_limit = text_limit or limit
        self._overflow_limit = max(OVERFLOW_FACTOR * self._text_limit, MIN_OVERFLOW)
        self._items: deque[Item] = deque()
        self._size = 0
        self._text_size = 0
        self._wake = anyio.Event()
        self._room = anyio.Event()
        self._held: deque[Item] | None = None
        self._behind_next: deque[Item] | None = None
        """What arrived after the client lagged *again* while its snapshot was being
        made: it waits behind the next snapshot, not the one under way."""
        self._run_bytes = 0  # bytes in the last queued run of output
        self.lagging = False
        self.sessions_dirty = False
        self.overflow = anyio.Event()
        """Set when text was pushed far past the limit: the client is not reading."""
        self.closed = False

    @property
    def size(self) -> int:
        return self._size

    @property
    def limit(self) -> int:
        """Queued output past this many bytes makes the client lag."""
        return self._limit

    @property
    def overflowed(self) -> bool:
        return self.overflow.is_set()

    def put_output(self, data: bytes) -> None:
        """Queue terminal output; past the limit, drop it all and mark the client lagging."""
        if self.lagging or self.closed:
            return
        if self._size - self._text_size + len(data) > self._limit:
            self._lag()
            return
        self._size += len(data)
        queue = self._queue()
        last = queue[-1] if queue else None
        if isinstance(last, list) and self._run_bytes + len(data) <= MAX_BINARY_MESSAGE:
            last.append(data)  # joined into one WebSocket message when sent
            self._run_bytes += len(data)
        else:
            queue.append([data])
            self._run_bytes = len(data)
        if queue is self._items:
            self._wake.set()

    def _queue(self) -> deque[Item]:
        """Where a new item goes: behind a snapshot if one is due, else out."""
        if self._behind_next is not None:
            return self._behind_next
        return self._held if self._held is not None else self._items

    def put_text(self, text: str) -> None:
        self._put(text, len(text))

    def put_tracked(self, text: bytes) -> Tracked:
        """`put_text`, and an event set once the sender has sent it (never, if the
        connection ends first)."""
        tracked = Tracked(text)
        self._put(tracked, len(text))
        return tracked

    def _put(self, item: str | Tracked, size: int) -> None:
        if self.closed or self.overflowed:
            return
        if self._text_size + size > self._overflow_limit:
            self.overflow.set()
            self._room.set()
            return
        self._size += size
        self._text_size += size
        queue = self._queue()
        queue.append(item)
        if queue is self._items:
            self._wake.set()

    async def room(self) -> None:
        """Wait until queued text is under the limit: only then is another request read."""
        while self._text_size >= self._text_limit and not (self.closed or self.overflowed):
            await self._room.wait()
            self._room = anyio.Event()

    def hold(self) -> None:
        """Hold what arrives from now on: a snapshot is being made for this client.
        (Already holding, because the client lags, it goes on holding.)"""
        if self._held is None:
            self._held = deque()

    def release(self, first: str, covered: int, replay: bytes = b"") -> None:
        """Send ``first`` (the snapshot), then ``replay`` (output from before the hold
        that the snapshot does not show), then what was held minus ``covered`` bytes."""
        held = self._held or deque()
        # Lagged again meanwhile: what came since waits for the next snapshot.
        self._held, self._behind_next = self._behind_next, None
        self._items.append(first)
        self._size += len(first)
        self._text_size += len(first)
        if replay:
            self._items.append([replay])
            self._size += len(replay)
        for item in held:
            if not isinstance(item, list) or not covered:
                self._items.append(item)
                continue
            data = b"".join(item)
            cut = min(covered, len(data))
            covered -= cut
            self._size -= cut
            if cut < len(data):
                self._items.append([data[cut:]])
        self._run_bytes = MAX_BINARY_MESSAGE  # start a new run after these
        self._wake.set()

    def mark_sessions_dirty(self) -> None:
        self.sessions_dirty = True
        self._wake.set()

    def resynced(self) -> None:
        """The sender is making a fresh snapshot; accept output again (held)."""
        self.lagging = False

    def detached(self) -> None:
        """No session any more: forget its output, and deliver what waited behind a
        snapshot that is no longer coming."""
        self.discard_output()
        if self.lagging:
            self.lagging = False
            self._items.extend(self._held or ())
            self._items.extend(self._behind_next or ())
            self._held = self._behind_next = None
            self._wake.set()

    def _lag(self) -> None:
        self.discard_output()
        self.lagging = True
        # Events from here on follow a snapshot made from now on: if one is under way
        # already (holding, not lagging before), they wait for the next.
        if self._held is not None:
            self._behind_next = deque()
        self.hold()
        self._wake.set()

    def discard_output(self) -> None:
        """Forget queued output (the client fell behind, detached or switched sessions)."""
        self._items = deque(item for item in self._items if not isinstance(item, list))
        if self._held is not None:
            self._held = deque(item for item in self._held if not isinstance(item, list))
        if self._behind_next is not None:
            self._behind_next = deque(
                item for item in self._behind_next if not isinstance(item, list)
            )
        self._size = self._text_size

    def pop(self) -> str | Tracked | bytes | None:
        """The next message to send; a `Tracked` one's ``sent`` is the sender's to set."""
        if not self._items:
            return None
        item = self._items.popleft()
        if not isinstance(item, list):
            size = len(item if isinstance(item, str) else item.text)
            self._size -= size
            self._text_size -= size
            if self._text_size < self._text_limit:
                self._room.set()
            return item
        data = b"".join(item)
        self._size -= len(data)
        return data

    async def wait(self) -> None:
        """Wait until there is something to send (or the client is lagging, or closed)."""
        while not (self._items or self.lagging or self.sessions_dirty or self.closed):
            await self._wake.wait()
            self._wake = anyio.Event()

    def close(self) -> None:
        self.closed = True
        self._wake.set()
        self._room.set()
