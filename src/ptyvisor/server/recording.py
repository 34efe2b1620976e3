"""Recording a session as asciicast v2, beside the PTY read path, never on it.

A recorded session is written to ``<dir>/<session id>.cast``: a header line (size,
title, start time, the program's ``TERM``), then one JSON array per event, the time in
seconds since the header: ``"o"`` output, ``"r"`` a resize (``"120x40"``), and ``"m"``
a marker for every activity change (``"working"``, ``"waiting: Ready"``), so a
player shows where the agent worked, waited and asked.

The reader only appends to a queue (`Recorder.output`, O(1)); a writer task decodes,
encodes and writes batches in a worker thread. A disk slower than the program costs
the recording, never the program: past `PENDING_LIMIT` queued bytes output is dropped
until the writer catches up, which then draws the screen afresh from a snapshot and
marks the gap.

Files are bounded: once a file holds ``limit`` bytes it is rotated (``ID.cast`` →
``ID.1.cast`` …, the oldest of ``parts`` dropped) and the new file starts with the
screen as it is then, so each file plays on its own. A server that adopts a
recorded session after a restart starts a new file the same way.

`asciicast` turns the replay log's bytes into a cast for ``ptyvisor export``.

A file is never opened through a link: a new file is created with ``O_EXCL`` and
``O_NOFOLLOW`` (a link planted at ``<id>.cast`` is rotated away like a file, never
followed), and a directory others can write to is refused unless it is sticky and
ours (`directory_problem`). The title (the session's name) and the markers (an
agent's reasons) are untrusted and made printable (untrusted.py).
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from ptyvisor.config import DEFAULT_RECORD_LIMIT
from ptyvisor.errors import UnsafeDirectory
from ptyvisor.keeper.privatefiles import create_new, directory_problem
from ptyvisor.wire.untrusted import printable

log = logging.getLogger(__name__)

DEFAULT_LIMIT = DEFAULT_RECORD_LIMIT
DEFAULT_PARTS = 4
PENDING_LIMIT = 8 * 1024 * 1024
"""Output queued for the writer past which it is dropped (and the screen redrawn)."""


@dataclass(frozen=True)
class Screen:
    """What a new file starts from: the screen as terminal output, up to ``seq``."""

    ansi: str
    seq: int
    cols: int
    rows: int


def header(cols: int, rows: int, *, title: str, term: str, started: float) -> str:
    return json.dumps(
        {
            "version": 2,
            "width": cols,
            "height": rows,
            "timestamp": int(started),
            "title": printable(title),
            "env": {"TERM": term},
        },
        ensure_ascii=False,
    )


def event(at: float, kind: str, data: str) -> str:
    return json.dumps([round(max(at, 0.0), 6), kind, data], ensure_ascii=False)


def marker_label(phase: str, reason: str | None) -> str:
    """A marker's text: players show it, and the reason is the agent's (untrusted)."""
    return printable(f"{phase}: {reason}" if reason else phase)


def asciicast(
    chunks: Iterable[tuple[float, bytes]],
    markers: Iterable[tuple[float, str]],
    *,
    cols: int,
    rows: int,
    title: str,
    term: str,
) -> str:
    """A whole cast from output chunks and markers, each with its wall-clock time
    (seconds); times are made relative to the first chunk's."""
    chunks = list(chunks)
    start = chunks[0][0] if chunks else time.time()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    events: list[tuple[float, int, str]] = []
    for order, (at, data) in enumerate(chunks):
        text = decoder.decode(data)
        if text:
            events.append((at - start, order, event(at - start, "o", text)))
    for at, label in markers:
        if at >= start:
            events.append((at - start, -1, event(at - start, "m", label)))
    events.sort(key=lambda e: (e[0], e[1]))
    lines = [header(cols, rows, title=title, term=term, started=start)]
    lines += [line for _, _, line in events]
    return "\n".join(lines) + "\n"


class Recorder:
    """One session's recording; the session feeds it, `run` writes it."""

    def __init__(
        self,
        path: Path,
        *,
        title: str,
        term: str,
        cols: int,
        rows: int,
        screen: Callable[[int], Awaitable[Screen]],
        limit: int = DEFAULT_LIMIT,
        parts: int = DEFAULT_PARTS,
        start_seq: int = 0,
        fresh: bool = True,
    ) -> None:
        """``screen(seq)``: the session's screen as of ``seq`` or later. ``fresh``:
        the session starts now (else it is adopted: the new file starts with its
        screen, and an older file is kept as a part)."""
        self.path = path
        self._title = title
        self._term = term
        self._size = (cols, rows)
        """The size at the start: the first file's header (resizes follow as events)."""
        self._screen = screen
        self._limit = max(limit, 4096)
        self._parts = max(parts, 1)
        self._pending: deque[tuple[float, str, bytes | str, int]] = deque()
        self._pending_bytes = 0
        self._dropped_from: int | None = None
        """Output from this seq on was dropped: the next file part, or a redraw, covers it."""
        self._gap_owed = False
        """Output was dropped and the redraw that covers it is not written yet."""
        self._seq = start_seq
        self._skip_until = start_seq
        self._wake = anyio.Event()
        self._file: int | None = None
        self._written = 0
        self._part_start = 0.0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._needs_screen = not fresh
        self.failed = False
        """Writing failed (a full disk, say): the recording stopped, the session did not."""

    # ----------------------------------------------------------- the session's side

    def output(self, seq: int, data: bytes) -> None:
        """Called on the read path with each output chunk: queue it, nothing more."""
        self._seq = seq + len(data)
        if self._dropped_from is not None or self.failed:
            return
        if self._pending_bytes + len(data) > PENDING_LIMIT:
            self._dropped_from = seq
            self._wake.set()
            return
        self._pending.append((time.monotonic(), "o", data, seq))
        self._pending_bytes += len(data)
        self._wake.set()

    def resized(self, cols: int, rows: int) -> None:
        self._queue("r", f"{cols}x{rows}")

    def marker(self, label: str) -> None:
        self._queue("m", label)

    def _queue(self, kind: str, text: str) -> None:
        if not self.failed:
            self._pending.append((time.monotonic(), kind, text, self._seq))
            self._wake.set()

    # ------------------------------------------------------------------- the writer

    async def run(self) -> None:
        """Write what is queued until cancelled; then write the rest and close."""
        try:
            while not self.failed:
                await self._wake.wait()
                self._wake = anyio.Event()
                await self._write_pending()
        finally:
            with anyio.CancelScope(shield=True):
                await self._write_pending()
                if self._file is not None:
                    os.close(self._file)
                    self._file = None

    async def _write_pending(self) -> None:
        """Write what is queued. Nothing leaves the queue before it is on disk: a
        worker thread is started only after a checkpoint, so a session closed at that
        moment cancels the write, and the final pass in `run` must still find it."""
        if self.failed:
            return
        try:
            if self._file is None or self._needs_screen or self._written >= self._limit:
                await self._new_file()
            batch = list(self._pending)
            await anyio.to_thread.run_sync(self._write_batch, batch)
            self._forget(len(batch))
            if self._dropped_from is not None:
                self._dropped_from = None  # output queues again; the redraw covers the gap
                self._gap_owed = True
            if self._gap_owed:
                screen = await self._screen(self._seq)
                await anyio.to_thread.run_sync(self._write_gap, screen)
                self._gap_owed = False
        except OSError as error:
            log.warning("recording %s stopped: %s", self.path, error.strerror or error)
            self.failed = True
            self._pending.clear()

    def _forget(self, count: int) -> None:
        """The oldest ``count`` queued events are written."""
        for _ in range(count):
            _at, _kind, payload, _seq = self._pending.popleft()
            if isinstance(payload, bytes):
                self._pending_bytes -= len(payload)

    async def _new_file(self) -> None:
        """The first file, or the next one (rotated, or after an adoption): it starts
        with the screen as it is, so that it plays on its own."""
        first = self._file is None and not self._needs_screen
        screen = None if first else await self._screen(self._seq)
        await anyio.to_thread.run_sync(self._open, screen)
        self._needs_screen = False

    def _open(self, screen: Screen | None) -> None:
        if self._file is not None:
            os.close(self._file)
            self._file = None
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        problem = directory_problem(self.path.parent, "recordings")
        if problem is not None:
            raise UnsafeDirectory(problem)
        if os.path.lexists(self.path):  # a full file, the last one before a restart, a link
            self._rotate()
        self._file = create_new(self.path)
        self._written = 0
        self._part_start = time.monotonic()
        self._decoder.reset()
        cols, rows = (screen.cols, screen.rows) if screen else self._size
        lines = [header(cols, rows, title=self._title, term=self._term, started=time.time())]
        if screen is not None:
            lines.append(event(0, "o", screen.ansi))
            self._skip_until = screen.seq
        self._write_lines(lines)

    def _rotate(self) -> None:
        stem = self.path.name.removesuffix(".cast")
        part = [self.path] + [
            self.path.with_name(f"{stem}.{n}.cast") for n in range(1, self._parts)
        ]
        part[-1].unlink(missing_ok=True)
        for older, newer in zip(reversed(part[1:]), reversed(part[:-1]), strict=True):
            if os.path.lexists(newer):
                newer.rename(older)  # a link is moved, never followed

    def _write_batch(self, batch: list[tuple[float, str, bytes | str, int]]) -> None:
        lines = []
        for at, kind, payload, seq in batch:
            if isinstance(payload, str):
                lines.append(event(at - self._part_start, kind, payload))
                continue
            if seq + len(payload) <= self._skip_until:
                continue  # the file's opening screen shows it already
            text = self._decoder.decode(payload[max(self._skip_until - seq, 0) :])
            if text:
                lines.append(event(at - self._part_start, "o", text))
        self._write_lines(lines)

    def _write_gap(self, screen: Screen) -> None:
        """Output was dropped: draw the screen as it is now, and say so."""
        at = time.monotonic() - self._part_start
        self._skip_until = screen.seq
        self._decoder.reset()
        self._write_lines([event(at, "o", "\x1bc" + screen.ansi), event(at, "m", "recording gap")])

    def _write_lines(self, lines: list[str]) -> None:
        if not lines or self._file is None:
            return
        data = ("\n".join(lines) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._file, view) :]
        self._written += len(data)
