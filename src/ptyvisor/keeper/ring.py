"""A session's recent output in shared memory, where a crash of the server loses none.

The keeper (keeper.py) creates one memfd per session and keeps it open; the server
maps it and copies every output byte it reads into it, beside its own replay log.
A server started after a crash maps the same memory and finds exactly the bytes the
last one had taken from the PTY, so a client reconnecting with ``since`` still gets
an exact replay. Bytes the dead server had read but not yet copied are the only
loss: at most one read, since the copy is the first thing done with each read.

Layout: a 64-byte header ``magic, version, capacity, end_seq`` (little-endian), then
``capacity`` bytes of ring. Output seq ``s`` lives at ``64 + s % capacity``.
``end_seq`` is stored after the bytes it covers, so a server dying mid-copy leaves
the ring as it was before that read. One writer at a time (the server); readers
read only a ring nobody writes (a new server, before it writes). Stdlib only.
"""

from __future__ import annotations

import mmap
import os
import struct

from ptyvisor.errors import RingError

MAGIC = b"PTYVRING"
VERSION = 1
HEADER = struct.Struct("<8sIIQQ")
HEADER_BYTES = 64
END_OFFSET = 8 + 4 + 4 + 8


def create(capacity: int) -> int:
    """A new, empty ring of ``capacity`` bytes: its descriptor (close-on-exec)."""
    if capacity <= 0:
        raise ValueError("capacity must be positive")
    fd = os.memfd_create("ptyvisor-ring", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, HEADER_BYTES + capacity)
        os.pwrite(fd, HEADER.pack(MAGIC, VERSION, 0, capacity, 0), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Ring:
    """A mapped ring. Memory pages are only used once written (a quiet session's
    ring costs next to nothing)."""

    def __init__(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        if size < HEADER_BYTES:
            raise RingError("too small to be a ring")
        self._map = mmap.mmap(fd, size)
        magic, version, _, capacity, _ = HEADER.unpack_from(self._map, 0)
        if magic != MAGIC or version != VERSION or capacity != size - HEADER_BYTES:
            self._map.close()
            raise RingError("not a ptyvisor ring of this version")
        self.capacity: int = capacity

    @property
    def end_seq(self) -> int:
        value: int = struct.unpack_from("<Q", self._map, END_OFFSET)[0]
        return value

    def append(self, data: bytes) -> None:
        """Copy ``data`` in (only its last ``capacity`` bytes matter), then commit."""
        end = self.end_seq
        new_end = end + len(data)
        if len(data) > self.capacity:
            data = data[-self.capacity :]
        start = (new_end - len(data)) % self.capacity
        first = min(len(data), self.capacity - start)
        self._map[HEADER_BYTES + start : HEADER_BYTES + start + first] = data[:first]
        if first < len(data):
            self._map[HEADER_BYTES : HEADER_BYTES + len(data) - first] = data[first:]
        struct.pack_into("<Q", self._map, END_OFFSET, new_end)

    def contents(self) -> tuple[int, bytes]:
        """(seq of the first byte held, the bytes held) — the last ``capacity`` at most."""
        end = self.end_seq
        held = min(end, self.capacity)
        start = (end - held) % self.capacity
        first = min(held, self.capacity - start)
        data = bytes(self._map[HEADER_BYTES + start : HEADER_BYTES + start + first])
        if first < held:
            data += bytes(self._map[HEADER_BYTES : HEADER_BYTES + held - first])
        return end - held, data

    def close(self) -> None:
        self._map.close()
