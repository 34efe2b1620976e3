"""Keeps a session's headless terminal beside the PTY reader, never on its path.

pyte renders about a hundred times slower than a PTY delivers, so the reader only
appends to the output log and pokes the renderer. The renderer feeds the log to the
terminal in small batches, in a worker thread, and only while the reader is quiet —
a flooding program is never throttled by rendering. If it falls more than
``lag_limit`` bytes behind, the oldest unrendered bytes are skipped (their private
mode changes still applied, see `HeadlessTerminal.skip`): the screen of a flood is
made by its last bytes, and a snapshot then costs at most ``lag_limit`` of rendering.
A snapshot first brings the terminal up to the log's end.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.to_thread

from ptyvisor.outputlog import OutputLog
from ptyvisor.terminal import HeadlessTerminal, TerminalSnapshot

BATCH_BYTES = 8 * 1024
DEFAULT_LAG_LIMIT = 512 * 1024
QUIET_SECONDS = 0.002


class Renderer:
    """Owns one HeadlessTerminal and the seq it has rendered up to."""

    def __init__(
        self,
        log: OutputLog,
        *,
        cols: int,
        rows: int,
        scrollback: int,
        lag_limit: int = DEFAULT_LAG_LIMIT,
        on_reply: Callable[[bytes], None] | None = None,
        reader_busy: Callable[[], bool] = lambda: False,
    ) -> None:
        self._log = log
        self._terminal = HeadlessTerminal(cols, rows, scrollback=scrollback, on_reply=on_reply)
        self._lag_limit = max(lag_limit, BATCH_BYTES)
        self._reader_busy = reader_busy
        self._lock = anyio.Lock()
        self._wake = anyio.Event()
        self.rendered_seq = log.start_seq
        self.skipped = 0

    @property
    def lag(self) -> int:
        return self._log.end_seq - self.rendered_seq

    def output_added(self) -> None:
        """Called by the reader after each append; O(1) unless the lag bound is hit."""
        self._wake.set()
        if self.lag > self._lag_limit and not self._lock.locked():
            self._skip_to(self._log.end_seq - self._lag_limit)

    def _skip_to(self, seq: int) -> None:
        start = max(self.rendered_seq, self._log.start_seq)
        skipped = self._log.read(start, seq) if start < seq else b""
        self._terminal.skip(skipped)
        self.skipped += seq - self.rendered_seq
        self.rendered_seq = seq

    async def run(self) -> None:
        """Render in the background while the reader is quiet; runs until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self.lag > 0:
                while self._reader_busy():  # noqa: ASYNC110 - polls the PTY fd, nothing to wait on
                    await anyio.sleep(QUIET_SECONDS)
                async with self._lock:
                    await self._feed_until(min(self._log.end_seq, self.rendered_seq + BATCH_BYTES))

    async def _feed_until(self, seq: int) -> None:
        """Feed [rendered_seq, seq) in a worker thread; call with the lock held."""
        if self.rendered_seq < self._log.start_seq:
            # Bytes left the log while a long feed held the lock: they are lost to us.
            self._skip_to(self._log.start_seq)
        if seq <= self.rendered_seq:
            return
        data = self._log.read(self.rendered_seq, seq)
        await anyio.to_thread.run_sync(self._terminal.feed, data)
        self.rendered_seq = seq

    async def snapshot(self, at_least: int) -> tuple[TerminalSnapshot, int]:
        """Render up to at least ``at_least`` and serialise.

        Returns the snapshot and the seq it shows, which may be past ``at_least``
        if the background renderer got there first.
        """
        async with self._lock:
            target = max(at_least, self.rendered_seq)
            if target - self.rendered_seq > self._lag_limit:
                self._skip_to(target - self._lag_limit)
            await self._feed_until(target)
            snap = await anyio.to_thread.run_sync(self._terminal.snapshot)
            return snap, self.rendered_seq

    async def resize(self, cols: int, rows: int) -> None:
        """Resize in stream order: render what was written at the old size first."""
        async with self._lock:
            await self._feed_until(self._log.end_seq)
            self._terminal.resize(cols, rows)
