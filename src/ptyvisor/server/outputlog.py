"""The replay log: every output byte gets an absolute, monotonic sequence number.

``seq`` counts bytes since the session started, frames already removed. The log keeps
the most recent ``capacity`` bytes (up to one chunk more, never less), so a client
that remembers the seq it has reached can ask for exactly what it missed, or learn
that the gap is gone and fall back to a snapshot.

It is on the PTY read path, so appending never copies a read twice or moves old
bytes: a read of reasonable size is kept as its own chunk (bytes are immutable, so
no copy), tiny reads are gathered into a small tail first, and trimming drops whole
chunks.

It also notes when output came (a wall-clock time per read at most every
`TIME_STEP`), so that what it holds can be exported with its timing (`timed`).
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections import deque
from collections.abc import Callable

from ptyvisor.config import DEFAULT_REPLAY_BYTES
from ptyvisor.keeper.ring import Ring

DEFAULT_CAPACITY = DEFAULT_REPLAY_BYTES
SMALL_READ = 2048
"""Reads below this are gathered into the tail, so a chatty TUI does not make 2 MiB
of one-byte chunks."""
TIME_STEP = 0.01
"""Output within this many seconds of the last time noted shares its time."""
MAX_TIMES = 2048
"""Times noted at most (about 200 KiB): past it the oldest go, and their output is
exported as if it came with the oldest time kept."""


class OutputLog:
    """A byte ring addressed by absolute sequence numbers. Not thread-safe."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        *,
        mirror: Ring | None = None,
        start_seq: int = 0,
        held: bytes = b"",
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``mirror``: shared memory every appended byte is copied to, so that a server
        started after a crash finds it (see ring.py). ``start_seq``/``held``: resume a
        log whose bytes [start_seq, start_seq + len(held)) survived (from a ring).
        ``clock``: the wall clock `timed` reports (tests give their own)."""
        self._clock = clock
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self._capacity = capacity
        self._small = min(SMALL_READ, max(capacity // 4, 1))
        self._chunks: deque[bytes] = deque()
        self._starts: deque[int] = deque()  # seq of each chunk's first byte
        self._tail = bytearray()
        self._tail_start = start_seq + max(len(held) - capacity, 0)
        self._sealed_bytes = 0
        self._times: deque[tuple[int, float]] = deque(maxlen=MAX_TIMES)
        """(seq, wall-clock time) where output came after a pause of TIME_STEP or more."""
        if held:
            self._push(held[-capacity:])
        self._mirror = mirror

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def start_seq(self) -> int:
        """The oldest seq still held."""
        return self._starts[0] if self._starts else self._tail_start

    @property
    def end_seq(self) -> int:
        """The seq the next byte will get; equals the number of bytes ever appended."""
        return self._tail_start + len(self._tail)

    def append(self, data: bytes) -> int:
        """Add output; returns the seq of its first byte."""
        first = self.end_seq
        now = self._clock()
        if not self._times or now - self._times[-1][1] >= TIME_STEP:
            self._times.append((first, now))
        if self._mirror is not None:
            self._mirror.append(data)
        if len(data) < self._small:
            self._tail += data
            if len(self._tail) >= self._small:
                self._seal_tail()
        else:
            self._seal_tail()
            self._push(data)
        return first

    def _seal_tail(self) -> None:
        if self._tail:
            chunk, self._tail = bytes(self._tail), bytearray()
            self._push(chunk)

    def _push(self, chunk: bytes) -> None:
        """Add a sealed chunk; the tail is empty and starts right after it."""
        self._chunks.append(chunk)
        self._starts.append(self._tail_start)
        self._sealed_bytes += len(chunk)
        self._tail_start += len(chunk)
        self._trim()

    def _trim(self) -> None:
        while (
            self._chunks
            and self._sealed_bytes - len(self._chunks[0]) + len(self._tail) >= self._capacity
        ):
            self._sealed_bytes -= len(self._chunks.popleft())
            self._starts.popleft()
        start = self.start_seq
        while len(self._times) > 1 and self._times[1][0] <= start:
            self._times.popleft()

    def timed(self) -> list[tuple[float, bytes]]:
        """What the log holds, cut where output came after a pause, each piece with
        the wall-clock time it came (bytes from before any time was noted, such as
        those a restarted server found in its ring, get the first time noted)."""
        return [(at, join(spans)) for at, spans in self.timed_spans()]

    def timed_spans(self) -> list[tuple[float, list[tuple[bytes, int, int]]]]:
        """`timed` without copying a byte (see `spans`): the log is not thread-safe,
        but its chunks are immutable, so a worker thread can `join` them later."""
        start, end = self.start_seq, self.end_seq
        if start == end:
            return []
        marks = [(seq, at) for seq, at in self._times if start < seq < end]
        first = self._times[0][1] if self._times else self._clock()
        earlier = [at for seq, at in self._times if seq <= start]
        cuts = [(start, earlier[-1] if earlier else first), *marks]
        bounds = [seq for seq, _ in cuts[1:]] + [end]
        return [(at, self.spans(seq, stop)) for (seq, at), stop in zip(cuts, bounds, strict=True)]

    def holds(self, seq: int) -> bool:
        """Whether a client at ``seq`` can be brought up to date exactly."""
        return self.start_seq <= seq <= self.end_seq

    def read(self, start: int, end: int | None = None) -> bytes:
        """Bytes [start, end); raises LookupError if any of them are gone or not yet written."""
        return join(self.spans(start, end))

    def spans(self, start: int, end: int | None = None) -> list[tuple[bytes, int, int]]:
        """[start, end) as (chunk, lo, hi) slices of immutable chunks, without copying.

        ``bytes.find`` and ``re`` take (lo, hi) bounds directly, and a kept chunk
        stays valid after the log has dropped it.
        """
        stop = self.end_seq if end is None else end
        if not (self.start_seq <= start <= stop <= self.end_seq):
            held = f"{self.start_seq}..{self.end_seq}"
            raise LookupError(f"range [{start}, {stop}) not held ({held})")
        spans: list[tuple[bytes, int, int]] = []
        index = max(bisect_right(self._starts, start) - 1, 0)
        seq = start
        while seq < stop and index < len(self._chunks):
            chunk_start = self._starts[index]
            chunk = self._chunks[index]
            if seq < chunk_start + len(chunk):
                lo, hi = seq - chunk_start, min(stop - chunk_start, len(chunk))
                spans.append((chunk, lo, hi))
                seq += hi - lo
            index += 1
        if seq < stop:
            tail = bytes(self._tail)
            spans.append((tail, seq - self._tail_start, stop - self._tail_start))
        return spans


def join(spans: list[tuple[bytes, int, int]]) -> bytes:
    """The bytes `OutputLog.spans` stand for."""
    return b"".join(chunk[lo:hi] for chunk, lo, hi in spans)
