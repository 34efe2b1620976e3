"""The read path: drain a program's PTY master as fast as the kernel hands it out, fair
across sessions, and hand each group of reads to the session at once.

It does nothing else: what the bytes mean is the session core's (core.py), where they
go (the log, the clients, the headless terminal) the session's, and nothing on this
path waits for either.
"""

from __future__ import annotations

import asyncio
import os
import select
import time
from collections.abc import Callable

import anyio

READ_BYTES = 64 * 1024
INGEST_BYTES = 64 * 1024
"""Reads are joined into groups of about this size before they are ingested."""
READ_SLICE = 64 * 1024
"""Bytes read per wake-up while another session is reading too: they take turns, so a
flooding session delays another's echo by well under a millisecond per turn."""
READ_ALONE = 1024 * 1024
"""Bytes read per wake-up by a session reading alone: fewer trips through the event
loop, so one busy session keeps up with the kernel."""
TOGETHER_SECONDS = 0.05
"""Another session that read this recently counts as busy (see `Readers`)."""
QUIET_SECONDS = 0.002
"""Output read this recently means more is coming: the renderer waits (`Reader.busy`)."""


class Readers:
    """Which sessions read lately, so each wake-up knows its slice: a session alone
    drains big chunks, several take turns in short ones. The two most recent distinct
    readers are all it takes to know whether someone else read recently (O(1))."""

    def __init__(self) -> None:
        self._recent: list[tuple[int, float]] = []

    def slice(self, fd: int, now: float) -> int:
        recent = self._recent
        others = [at for reader, at in recent if reader != fd]
        self._recent = [(fd, now), *((reader, at) for reader, at in recent if reader != fd)][:2]
        together = bool(others) and now - others[0] < TOGETHER_SECONDS
        return READ_SLICE if together else READ_ALONE


READERS = Readers()
"""One per process: the sessions of one event loop take turns."""


class Reader:
    """Drains one PTY master into ``ingest`` (one call per group of reads)."""

    def __init__(self, fd: int, ingest: Callable[[bytes], None]) -> None:
        self._fd = fd
        self._ingest = ingest
        self.last_read = 0.0
        """When output was last read (monotonic seconds)."""
        self.done = anyio.Event()
        """Set at the PTY's end (every slave descriptor closed and nothing left)."""

    async def run(self) -> None:
        """Drain the PTY from a persistent event-loop reader callback until its end.

        asyncio-specific on purpose (the server runs on asyncio, as websockets does):
        one registered callback per session costs far less per read than awaiting
        readability each time, and the read path is what bounds throughput. A bug in
        ingesting is raised here (it ends the session).
        """
        loop = asyncio.get_running_loop()
        fd = self._fd
        eof = anyio.Event()
        failure: list[BaseException] = []

        def on_readable() -> None:
            try:
                at_end = self.drain(READERS.slice(fd, time.monotonic()))
            except Exception as error:  # a bug: it ends this session
                failure.append(error)
                at_end = True
            if at_end:
                loop.remove_reader(fd)
                eof.set()
            self.last_read = time.monotonic()

        loop.add_reader(fd, on_readable)
        try:
            await eof.wait()
        finally:
            loop.remove_reader(fd)
            self.done.set()
        if failure:
            raise failure[0]

    def drain(self, budget: int) -> bool:
        """Read what the PTY holds now, up to about ``budget`` bytes; returns True at
        its end (EIO: every slave descriptor is closed and nothing is left).

        A PTY hands out about 4 KiB per read, so reads are joined into groups of
        `INGEST_BYTES` and each group is ingested once: scanning, logging and queueing
        for each client then cost once per group rather than once per 4 KiB (the copy
        costs far less). Groups stay small enough for the log's and the renderer's
        bounds, which move by whole appends."""
        reads: list[bytes] = []
        grouped = 0
        at_end = False
        while budget > 0:
            try:
                data = os.read(self._fd, READ_BYTES)
            except BlockingIOError:
                break
            except OSError:  # EIO (or the descriptor is closed already)
                at_end = True
                break
            if not data:
                at_end = True
                break
            reads.append(data)
            grouped += len(data)
            budget -= len(data)
            if grouped >= INGEST_BYTES:
                self._ingest(reads[0] if len(reads) == 1 else b"".join(reads))
                reads, grouped = [], 0
        if reads:
            self._ingest(reads[0] if len(reads) == 1 else b"".join(reads))
        return at_end

    def busy(self) -> bool:
        """True while the PTY has data or was read a moment ago: the renderer waits."""
        if time.monotonic() - self.last_read < QUIET_SECONDS:
            return True
        if self.done.is_set():
            return False
        try:
            readable, _, _ = select.select([self._fd], [], [], 0)
        except (OSError, ValueError):
            return False
        return bool(readable)
