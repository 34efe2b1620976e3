"""Keeps a session's headless terminal beside the PTY reader, never on its path.

pyte renders about a hundred times slower than a PTY delivers, so the reader only
appends to the output log and pokes the renderer. The renderer feeds the log to the
terminal in small batches, in a worker thread, and only while the reader is quiet —
a flooding program is never throttled by rendering. If it falls more than
``lag_limit`` bytes behind, the oldest unrendered bytes are skipped: the screen of a
flood is made by its last bytes, and a snapshot then costs at most ``lag_limit`` of
rendering. A snapshot first brings the terminal up to the log's end.

Skipped bytes still carry mode changes a client needs (alternate screen, mouse
tracking, bracketed paste — see `HeadlessTerminal.skip`), but scanning them costs
the read path about a fifth of its throughput. So skipping only keeps references to
the skipped chunks (no copy) and the scan runs later, before the next render, when
the reader is quiet. A flood longer than ``MODE_SCAN_LIMIT`` has its older part
scanned as it goes (with a cheap prefilter, see `_skip_to`), so memory stays
bounded and mode changes are kept.

The terminal's signals (notifications, bells, progress, shell prompt marks: see
`terminal.TerminalSignal`) are taken after each batch and handed to ``on_signals``
on the event loop, never from the worker thread. Skipped bytes give none: the
signals of a flood's skipped part are lost, which inferred activity can afford.

While someone watches the screen (``watch_screen`` says so: an agent's start-up until
its input prompt shows, its ``waiting`` for its busy line), each batch also hands the
visible rows to ``on_screen``, taken in the same worker thread call and passed on the
event loop with the seq they were rendered up to.
"""

from __future__ import annotations

import functools
import logging
from collections import deque
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from ptyvisor.config import DEFAULT_LAG_LIMIT
from ptyvisor.server.outputlog import OutputLog
from ptyvisor.terminal import HeadlessTerminal, TerminalSignal, TerminalSnapshot

log = logging.getLogger(__name__)

T = TypeVar("T")

BATCH_BYTES = 8 * 1024
SKIP_STEP = 256 * 1024
"""Skipping is done in steps this big, so a flood pays for it once per step, not per read."""
QUIET_SECONDS = 0.002
MODE_SCAN_LIMIT = 4 * 1024 * 1024


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
        on_signals: Callable[[list[TerminalSignal]], None] | None = None,
        reader_busy: Callable[[], bool] = lambda: False,
        on_screen: Callable[[list[str], int], None] | None = None,
        watch_screen: Callable[[], bool] = lambda: False,
    ) -> None:
        self._log = log
        self._on_signals = on_signals
        self._on_screen = on_screen
        self._watch_screen = watch_screen
        self._terminal = HeadlessTerminal(cols, rows, scrollback=scrollback, on_reply=on_reply)
        # Skipped bytes must still be in the log when they are skipped (their mode
        # changes are kept), so both bounds shrink with a small log.
        self._skip_step = min(SKIP_STEP, max(log.capacity // 4, 1))
        self._lag_limit = max(min(lag_limit, log.capacity - 2 * self._skip_step), 1)
        self._reader_busy = reader_busy
        self._lock = anyio.Lock()
        self._last_shared: tuple[TerminalSnapshot, int] | None = None
        """The last `shared_snapshot`, until the screen's size or basis changes."""
        self.shared_made = 0
        """Snapshots `shared_snapshot` rendered (the rest it handed out again)."""
        self._wake = anyio.Event()
        self.rendered_seq = log.start_seq
        self.skipped = 0
        self.failed = 0
        """Batches the headless terminal raised on (see `_feed_until`)."""
        self._draw_failed = False
        self._unscanned: deque[tuple[bytes, int, int]] = deque()
        self._unscanned_bytes = 0

    @property
    def lag(self) -> int:
        return self._log.end_seq - self.rendered_seq

    def output_added(self) -> None:
        """Called by the reader after each append; O(1) unless the lag bound is hit."""
        self._wake.set()
        if self.lag > self._lag_limit + self._skip_step and not self._lock.locked():
            self._skip_to(self._log.end_seq - self._lag_limit)

    def _skip_to(self, seq: int) -> None:
        """Mark [rendered_seq, seq) skipped; their modes are scanned later."""
        start = max(self.rendered_seq, self._log.start_seq)
        if start < seq:
            for span in self._log.spans(start, seq):
                self._unscanned.append(span)
                self._unscanned_bytes += span[2] - span[1]
            while self._unscanned_bytes >= MODE_SCAN_LIMIT + self._skip_step:
                # A long flood: scan the oldest now, rather than keep it or lose its
                # modes. '?' is rare in output and every private mode has one, so
                # bytes.find (memchr speed) spares the regex almost every chunk;
                # the price is a keypad change (ESC = / ESC >) sent on its own.
                chunk, lo, hi = self._unscanned.popleft()
                self._unscanned_bytes -= hi - lo
                if chunk.find(b"?", lo, hi) >= 0:
                    self._terminal.skip(chunk, lo, hi)
        self._unscanned.append((b"", 0, 0))  # even an empty skip resets the parser
        self.skipped += seq - self.rendered_seq
        self.rendered_seq = seq

    def _scan_skipped(self) -> None:
        """Apply the mode changes of skipped bytes, in order; call before feeding."""
        while self._unscanned:
            chunk, lo, hi = self._unscanned.popleft()
            self._unscanned_bytes -= hi - lo
            self._terminal.skip(chunk, lo, hi)

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
            if self._terminal.scrollback_undrawn and not self._draw_failed:
                # Caught up: draw the new scrollback lines now, not in the next attach.
                async with self._lock:
                    try:
                        await anyio.to_thread.run_sync(self._terminal.draw_scrollback)
                    except Exception:  # a bug costs the head start, not the session
                        log.exception("drawing the scrollback ahead failed; not trying again")
                        self._draw_failed = True

    async def _feed_until(self, seq: int) -> None:
        """Feed [rendered_seq, seq) in a worker thread; call with the lock held."""
        if self.rendered_seq < self._log.start_seq:
            # Bytes left the log while a long feed held the lock: they are lost to us.
            self._skip_to(self._log.start_seq)
        self._scan_skipped()
        if seq <= self.rendered_seq:
            return
        data = self._log.read(self.rendered_seq, seq)
        display = None
        look = self._on_screen is not None and self._watch_screen()
        try:
            display = await anyio.to_thread.run_sync(self._feed, data, look)
        except Exception:
            # A bug in the headless terminal costs this batch of the screen (its
            # modes are kept), not the session and its program.
            if not self.failed:
                log.exception("headless terminal failed on output; skipping it")
            self.failed += 1
            self._terminal.skip(data)
        self.rendered_seq = seq
        signals = self._terminal.take_signals()
        if signals and self._on_signals is not None:
            try:
                self._on_signals(signals)
            except Exception:  # inferred activity is not worth the session
                log.exception("applying terminal signals failed; dropped")
        if display is not None and self._on_screen is not None:
            try:
                self._on_screen(display, self.rendered_seq)
            except Exception:  # a guess from the screen is not worth the session
                log.exception("watching the screen failed; not watching any more")
                self._on_screen = None

    def _feed(self, data: bytes, look: bool) -> list[str] | None:
        """In the worker thread: render ``data``; the visible rows after it if ``look``."""
        self._terminal.feed(data)
        return self._terminal.display if look else None

    async def snapshot(
        self, at_least: int, *, scrollback: bool = True
    ) -> tuple[TerminalSnapshot, int]:
        """Render up to at least ``at_least`` and serialise.

        Returns the snapshot and the seq the stream continues from: where rendering
        stopped (possibly past ``at_least``, if the background renderer got there
        first), less the bytes of a UTF-8 character it has only the start of.
        """
        async with self._lock:
            return await self._snapshot(at_least, scrollback)

    async def _snapshot(self, at_least: int, scrollback: bool) -> tuple[TerminalSnapshot, int]:
        await self._catch_up(max(at_least, self.rendered_seq))
        snap = await anyio.to_thread.run_sync(
            functools.partial(self._terminal.snapshot, include_scrollback=scrollback)
        )
        return snap, max(self.rendered_seq - self._terminal.undecoded, self._log.start_seq)

    async def shared_snapshot(self, at_least: int, reuse: int) -> tuple[TerminalSnapshot, int]:
        """`snapshot` (with scrollback) for a client that fell behind: the last one
        made here again if it shows the screen no more than ``reuse`` bytes before
        ``at_least`` (the caller replays those bytes after it). Fifty clients that fall
        behind one flood at about the same time cost one snapshot, not fifty: each
        was a third of the server's time with 50 clients on a flood."""
        async with self._lock:  # callers that lag meanwhile wait here, then share it
            last = self._last_shared
            if last is not None and self._log.holds(last[1]) and at_least - last[1] <= reuse:
                return last
            self._last_shared = await self._snapshot(at_least, True)
            self.shared_made += 1
            return self._last_shared

    async def inspect(self, look: Callable[[HeadlessTerminal], T]) -> T:
        """Bring the terminal up to the log's end, then ``look`` at it in a worker
        thread (nothing renders meanwhile): the screen as text, the current modes."""
        async with self._lock:
            await self._catch_up(self._log.end_seq)
            return await anyio.to_thread.run_sync(look, self._terminal)

    async def _catch_up(self, target: int) -> None:
        """Render up to ``target``, skipping what lies beyond the lag limit; with the lock."""
        if target - self.rendered_seq > self._lag_limit:
            self._skip_to(target - self._lag_limit)
        await self._feed_until(target)

    def restore(self, ansi: str, seq: int) -> None:
        """Start from a snapshot of the screen at ``seq`` (handed over by the previous
        server) instead of rendering the log from its start; ignored if the log no
        longer holds ``seq`` (then the log's bytes are rendered as usual)."""
        if not self._log.holds(seq):
            return
        self._last_shared = None
        self._terminal.feed(ansi.encode())
        self._terminal.take_signals()  # the screen as it was, not new output
        self.rendered_seq = seq
        self._wake.set()

    async def resize(self, cols: int, rows: int) -> None:
        """Resize in stream order: render what was written at the old size first."""
        async with self._lock:
            await self._feed_until(self._log.end_seq)
            self._terminal.resize(cols, rows)
            self._last_shared = None
