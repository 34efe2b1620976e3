"""The replay log: every output byte gets an absolute, monotonic sequence number.

``seq`` counts bytes since the session started, frames already removed. The log keeps
the most recent ``capacity`` bytes (a little more between trims, never less), so a
client that remembers the seq it has reached can ask for exactly what it missed,
or learn that the gap is gone and fall back to a snapshot.
"""

from __future__ import annotations

DEFAULT_CAPACITY = 2 * 1024 * 1024


class OutputLog:
    """A byte ring addressed by absolute sequence numbers. Not thread-safe."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self._capacity = capacity
        # Trimming moves memory, so trim in steps of a quarter capacity, not per append.
        self._slack = max(capacity // 4, 1)
        self._buffer = bytearray()
        self._start = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def start_seq(self) -> int:
        """The oldest seq still held."""
        return self._start

    @property
    def end_seq(self) -> int:
        """The seq the next byte will get; equals the number of bytes ever appended."""
        return self._start + len(self._buffer)

    def append(self, data: bytes) -> int:
        """Add output; returns the seq of its first byte."""
        first = self.end_seq
        self._buffer += data
        excess = len(self._buffer) - self._capacity
        if excess >= self._slack:
            del self._buffer[:excess]
            self._start += excess
        return first

    def holds(self, seq: int) -> bool:
        """Whether a client at ``seq`` can be brought up to date exactly."""
        return self._start <= seq <= self.end_seq

    def read(self, start: int, end: int | None = None) -> bytes:
        """Bytes [start, end); raises LookupError if any of them are gone or not yet written."""
        stop = self.end_seq if end is None else end
        if not (self._start <= start <= stop <= self.end_seq):
            raise LookupError(f"range [{start}, {stop}) not held ({self._start}..{self.end_seq})")
        return bytes(self._buffer[start - self._start : stop - self._start])
