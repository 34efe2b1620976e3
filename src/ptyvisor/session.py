"""One supervised program: the PTY, its frames, its output log, state and clients.

Data flows one way. The reader task drains the PTY master and, for each read, runs
the frame scanner: frames go to authentication and the activity tracker; the
remaining bytes go to the output log and straight into every attached client's
outbox. Nothing on that path waits: the headless terminal (`Renderer`) catches up
beside it, and each client's sender drains its own outbox.

    PTY ──▶ FrameScanner ──┬──▶ frames ──▶ decode_frame ──▶ ActivityTracker ──▶ events
                           └──▶ bytes ──▶ OutputLog ──┬──▶ client outboxes ──▶ WebSockets
                                                      └╌╌▶ Renderer (pyte, beside)
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import select
import signal as signals
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Protocol

import anyio
from pydantic import ValidationError

from ptyvisor.activity import (
    FRAME_PAYLOAD,
    ActivityPhase,
    ActivityRules,
    Changed,
    DropQueuedMessage,
    Event,
    FrameApplied,
    IdRefused,
    KeyTyped,
    MessageQueued,
    ProgramExited,
    ScreenShown,
    SignalsSeen,
    Stale,
    Tick,
    Which,
    Withdraw,
)
from ptyvisor.child import Child
from ptyvisor.config import DEFAULT_LAG_LIMIT
from ptyvisor.control import nonce_matches
from ptyvisor.frames import Rejected, RejectReason, decode_frame
from ptyvisor.identity import Identity
from ptyvisor.jsontext import display, is_text, raw_bytes
from ptyvisor.keynames import encode_keys
from ptyvisor.outbox import Outbox
from ptyvisor.outputlog import OutputLog, join
from ptyvisor.owner import Owner
from ptyvisor.proctable import ProcessTable, in_session_tree
from ptyvisor.protocol import (
    ActivityChanged,
    ActivityField,
    Attached,
    Captured,
    Ended,
    ProcessChanged,
    ProcessState,
    RawNames,
    Resized,
    Screen,
    SessionStats,
    SessionSummary,
    Snapshot,
    SnapshotMessage,
    TerminalModesModel,
    TermSize,
)
from ptyvisor.recording import Recorder, asciicast, marker_label
from ptyvisor.recording import Screen as RecordedScreen
from ptyvisor.records import Records
from ptyvisor.renderer import QUIET_SECONDS, Renderer
from ptyvisor.ring import Ring
from ptyvisor.scanner import FrameScanner, ScanResult
from ptyvisor.sizing import SizePolicy
from ptyvisor.terminal import HeadlessTerminal, TerminalSignal, TerminalSnapshot

log = logging.getLogger(__name__)

READ_BYTES = 64 * 1024
INGEST_BYTES = 64 * 1024
"""Reads are joined into groups of about this size before they are ingested."""
MAX_MESSAGE = 4000
"""Longest message a client may queue for a session (`queue_message`)."""
READ_SLICE = 64 * 1024
"""Bytes read per wake-up while another session is reading too: they take turns, so a
flooding session delays another's echo by well under a millisecond per turn."""
READ_ALONE = 1024 * 1024
"""Bytes read per wake-up by a session reading alone: fewer trips through the event
loop, so one busy session keeps up with the kernel."""
TOGETHER_SECONDS = 0.05
"""Another session that read this recently counts as busy (see `Readers`)."""


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
INPUT_LIMIT = 1024 * 1024
EXIT_DRAIN_SECONDS = 0.5
"""How long, after the child exits, to wait for the reader to reach the PTY's end."""
EXIT_DRAIN_BYTES = 8 * 1024 * 1024
"""At most this much is read at the exit when the PTY's end never came (another
process holds the terminal and still writes)."""
KILL_GRACE_SECONDS = 2.0
MAX_FRAME_AHEAD_MS = 5 * 60 * 1000
"""A frame stamped further ahead of the server's clock is rejected (``future``); one
less far ahead counts as stamped now, so no frame can hold activity still."""
TICK_SECONDS = 0.1
"""How often time is told to the activity rules while it matters to them."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Subscriber(Protocol):
    """An attached client, as a session sees it."""

    @property
    def outbox(self) -> Outbox: ...

    @property
    def answers_queries(self) -> bool: ...


class SessionConfig(Protocol):
    replay_bytes: int
    render_lag_limit: int
    scrollback: int
    record_limit: int
    url: str
    control_path: str


class Session:
    """Owns the child process and everything derived from its output."""

    def __init__(
        self,
        identity: Identity,
        child: Child,
        *,
        cols: int,
        rows: int,
        config: SessionConfig,
        on_change: Callable[[], None],
        ring: Ring | None = None,
        withdraw: Callable[[str, int, Which], bool] | None = None,
        holds: Callable[[str, str], bool] | None = None,
        processes: ProcessTable | None = None,
        owner: Owner | None = None,
        records: Records | None = None,
        resumed_from: str | None = None,
    ) -> None:
        """``ring``: shared memory to mirror output into, and to resume from when it
        already holds some (a program adopted after a server restart)."""
        self.identity = identity
        self.id = identity.id
        self.agent = identity.agent
        self.name = identity.name
        self.argv = list(identity.argv)
        self.command = list(identity.command)
        self.cwd = identity.cwd
        self._raw_names = raw_names(self.argv, self.command, self.cwd)
        self.created_at = identity.created_at
        self._nonce = identity.nonce
        self._on_change = on_change
        self._withdraw = withdraw
        """Withdraws held requests a frame ends (control.PendingRequests.withdraw)."""
        self._holds = holds
        """Whether a hook waits on the control socket for (session, interaction id)."""
        self._answerable_shown = False
        self._processes = processes or ProcessTable()
        self._owner = owner
        self._records = records
        self.resumed_from = resumed_from
        self.kill_requested = False
        """A client asked for it (kill or close): its end is ``killed``."""
        self._ending: Ended = "exited"
        self._stop_program_on_exit = owner is None or owner.stops_programs_on_exit
        self.size = TermSize(cols=cols, rows=rows)
        self.child = child
        self.process = ProcessState(state="running", pid=self.child.pid)
        self.rules = ActivityRules(self.created_at, agent=self.agent)
        """Every activity rule (activity.py): fed events, it says what to do."""
        self.tracker = self.rules.tracker
        start_seq, held = ring.contents() if ring is not None else (0, b"")
        self.log = OutputLog(config.replay_bytes, mirror=ring, start_seq=start_seq, held=held)
        self.recorder = (
            None
            if identity.recording is None
            else Recorder(
                Path(identity.recording),
                title=identity.name,
                term=identity.term,
                cols=cols,
                rows=rows,
                screen=self._recording_screen,
                limit=config.record_limit,
                start_seq=self.log.end_seq,
                fresh=self.log.end_seq == 0,
            )
        )
        self._activity_shown = self._activity_view()
        """The activity as the last event (or the start) showed it: an event is sent
        only when some of it changes (see `_activity_changed`)."""
        self._scanner = FrameScanner()
        self._ticks_wanted = anyio.Event()
        """Set when time starts to matter to the rules (`_tick_loop`)."""
        self.renderer = Renderer(
            self.log,
            cols=cols,
            rows=rows,
            scrollback=config.scrollback,
            lag_limit=config.render_lag_limit or DEFAULT_LAG_LIMIT,
            on_reply=self._answer_query,
            on_signals=self._terminal_signals,
            reader_busy=self._reader_busy,
            on_screen=self._on_screen,
            watch_screen=self.rules.watches_screen,
        )
        self._subscribers: list[Subscriber] = []
        self._viewers: set[Subscriber] = set()
        """Attached with ``view_only``: they never type or resize."""
        self.sizing: SizePolicy[Subscriber] = SizePolicy()
        self._renderer_resize_due = anyio.Event()
        self._answering = 0
        self._input = bytearray()
        self._input_ready = anyio.Event()
        self._last_read = 0.0
        self._reader_done = anyio.Event()
        self.exited = anyio.Event()
        self._cancel = anyio.CancelScope()
        self.frames_applied = 0
        self.resyncs = 0
        """Clients redrawn from a snapshot because they fell behind."""
        self.frames_ignored = 0
        self.frames_rejected: dict[str, int] = {}
        self.queued_message: str | None = None
        """One message for the agent's next Stop hook (see `queue_message`)."""
        self._message_generation = 0
        self.closed = False
        self.finished = anyio.Event()
        """Set once every task has stopped and the child is reaped."""

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Run the session's tasks until `close`, cancellation or a failure of one of
        them; whichever it is, stop and reap the program before returning (or
        raising: the caller logs a failure and forgets the session)."""
        try:
            with self._cancel:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._read_loop)
                    tg.start_soon(self._watch_exit)
                    tg.start_soon(self.renderer.run)
                    tg.start_soon(self._write_loop)
                    tg.start_soon(self._renderer_resize_loop)
                    if self.recorder is not None:
                        tg.start_soon(self.recorder.run)
                    tg.start_soon(self._tick_loop)
        finally:
            # Shielded: a server being stopped cancels from outside, and this is
            # exactly when every program must still be stopped and reaped — unless a
            # keeper owns it, which keeps it running for the next server.
            with anyio.CancelScope(shield=True):
                if self.closed or self._stop_program_on_exit:
                    if not self.closed:
                        self._ending = "server"  # it ends because this server does
                    await self.terminate()
                self.child.close_fd()
            self.finished.set()

    async def terminate(self, grace: float = KILL_GRACE_SECONDS) -> None:
        """Stop every process of the program's session and reap the child.

        HUP first, as a closing terminal would (with CONT, so stopped jobs see it),
        then KILL whatever is left after ``grace``. Polls rather than relying on the
        exit watcher, which is not running while the session shuts down; the
        ``/proc`` scans are shared and off the event loop (`ProcessTable`).
        """
        for signum, wait in ((signals.SIGHUP, grace), (signals.SIGKILL, KILL_GRACE_SECONDS)):
            members = await self._members()
            if not self.child.alive_among(members) and self.child.poll():
                break
            self.child.signal_members(members, signum)
            if signum == signals.SIGHUP:
                self.child.signal_members(members, signals.SIGCONT)
            # KILL cannot be ignored, but it is delivered asynchronously: wait until
            # the child is reaped and the rest of its session is gone too.
            with anyio.move_on_after(wait):
                while not await self._all_gone():  # noqa: ASYNC110 - other processes: no event
                    await anyio.sleep(0.02)
        self._exited()

    async def _all_gone(self) -> bool:
        return self.child.poll() and not self.child.alive_among(await self._members())

    async def _members(self) -> list[int]:
        """The live processes of the program's session; a failed scan counts as the
        child alone (its process group is signalled as well)."""
        members = await self._processes.members(self.child.pid)
        return [self.child.pid] if members is None else members

    def nonce_matches(self, nonce: str) -> bool:
        """Whether ``nonce`` is this spawn's secret (constant time)."""
        return nonce_matches(self._nonce, nonce)

    def holds_process(self, pid: int) -> bool:
        """Whether process ``pid`` runs inside this session's program (in its process
        session, or descended from it), as far as that can be told: a process already
        gone, or in another pid namespace, cannot be checked and counts as inside."""
        return in_session_tree(pid, self.child.pid) is not False

    def close(self) -> None:
        """Stop the session's tasks; `run` then terminates the program and returns."""
        self.closed = True
        self._cancel.cancel()

    # ------------------------------------------------------------------ PTY → everything

    async def _read_loop(self) -> None:
        """Drain the PTY from a persistent event-loop reader callback.

        asyncio-specific on purpose (the server runs on asyncio, as websockets does):
        one registered callback per session costs far less per read than awaiting
        readability each time, and the read path is what bounds throughput.
        """
        loop = asyncio.get_running_loop()
        fd = self.child.fd
        eof = anyio.Event()
        failure: list[BaseException] = []

        def on_readable() -> None:
            try:
                at_end = self._drain(READERS.slice(fd, time.monotonic()))
            except Exception as error:  # a bug: it ends this session (see run)
                failure.append(error)
                at_end = True
            if at_end:
                loop.remove_reader(fd)
                eof.set()
            self._last_read = time.monotonic()

        loop.add_reader(fd, on_readable)
        try:
            await eof.wait()
        finally:
            loop.remove_reader(fd)
            # A held partial prefix at EOF was the program's own output.
            self._ingest(self._scanner.flush())
            self._reader_done.set()
        if failure:
            raise failure[0]

    def _drain(self, budget: int) -> bool:
        """Read what the PTY holds now, up to about ``budget`` bytes; returns True at
        its end (EIO: every slave descriptor is closed and nothing is left).

        A PTY hands out about 4 KiB per read, so reads are joined into groups of
        `INGEST_BYTES` and each group is ingested once: scanning, logging and queueing
        for each client then cost once per group rather than once per 4 KiB (the copy
        costs far less). Groups stay small enough for the log's and the renderer's
        bounds, which move by whole appends."""
        fd = self.child.fd
        reads: list[bytes] = []
        grouped = 0
        at_end = False
        while budget > 0:
            try:
                data = os.read(fd, READ_BYTES)
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
                self._ingest_reads(reads)
                reads, grouped = [], 0
        if reads:
            self._ingest_reads(reads)
        return at_end

    def _ingest_reads(self, reads: list[bytes]) -> None:
        self._ingest(self._scanner.feed(reads[0] if len(reads) == 1 else b"".join(reads)))

    def _ingest(self, scanned: ScanResult) -> None:
        """Everything the reader does with one wake-up's output; must stay cheap."""
        for body in scanned.frames:
            self._apply_frame(body)
        if scanned.dropped:
            self._count_rejection(RejectReason.UNTERMINATED.value, scanned.dropped)
        output = scanned.output
        if output:
            seq = self.log.append(output)
            if self.recorder is not None:
                self.recorder.output(seq, output)
            for subscriber in self._subscribers:
                subscriber.outbox.put_output(output)
            self.renderer.output_added()

    def _reader_busy(self) -> bool:
        """True while the PTY has data or was read a moment ago: the renderer waits."""
        if time.monotonic() - self._last_read < QUIET_SECONDS:
            return True
        if self._reader_done.is_set():
            return False
        try:
            readable, _, _ = select.select([self.child.fd], [], [], 0)
        except (OSError, ValueError):
            return False
        return bool(readable)

    def _apply_frame(self, body: bytes) -> None:
        """Authenticate and apply one frame. A bug in applying it costs that frame
        (counted as ``error``, logged once), never the session."""
        try:
            self._apply_authentic(body)
        except Exception:
            if "error" not in self.frames_rejected:
                log.exception("session %s: applying a frame failed", self.id)
            self.frames_rejected["error"] = self.frames_rejected.get("error", 0) + 1

    def _apply_authentic(self, body: bytes) -> None:
        decoded = decode_frame(body, self.id, self._nonce)
        if isinstance(decoded, Rejected):
            self._count_rejection(decoded.reason.value)
            return
        try:
            payload = FRAME_PAYLOAD.validate_python(decoded)
        except ValidationError:
            self._count_rejection(RejectReason.INVALID.value)
            return
        now = now_ms()
        if payload.at > now + MAX_FRAME_AHEAD_MS:
            # Authentic but absurd (10^30): it would freeze activity until the exit.
            self._count_rejection(RejectReason.FUTURE.value)
            return
        if payload.at > now:
            payload = payload.model_copy(update={"at": now})
        stale = withdrew = False
        for effect in self._feed(FrameApplied(payload)):
            match effect:
                case Stale():
                    stale = True
                case IdRefused():
                    self._count_rejection(RejectReason.NATIVE_ID.value)
                case Withdraw(before=before, which=which) if self._withdraw is not None:
                    withdrew = self._withdraw(self.id, before, which) or withdrew
        if stale and not withdrew:
            self.frames_ignored += 1  # older than what was applied: it changed nothing
        else:
            self.frames_applied += 1

    def _count_rejection(self, reason: str, count: int = 1) -> None:
        first = reason not in self.frames_rejected
        self.frames_rejected[reason] = self.frames_rejected.get(reason, 0) + count
        if first:
            # Once per reason; never the frame itself (it may carry the nonce).
            log.warning("session %s: rejected activity frame: %s", self.id, reason)

    def _terminal_signals(self, signals: list[TerminalSignal]) -> None:
        """Signals the renderer found in the output (on the event loop, after a batch):
        inferred activity, unless an extension reports (see `ActivityTracker`)."""
        self._feed(SignalsSeen(signals, now_ms()))

    def _on_screen(self, display: list[str]) -> None:
        """The renderer's view of the screen, while the rules watch it."""
        self._feed(ScreenShown(display, now_ms()))

    def _feed(self, event: Event) -> list[object]:
        """Hand ``event`` to the activity rules and carry out what they say; the
        effects only the caller can (counting a frame) are returned as well."""
        effects = self.rules.handle(event)
        for effect in effects:
            match effect:
                case Changed():
                    self._activity_changed()
                case DropQueuedMessage():
                    self.drop_message()
        if self.rules.wants_ticks():
            self._ticks_wanted.set()
        return list(effects)

    async def _tick_loop(self) -> None:
        """Tell the rules the time while it matters to them (`ActivityRules.wants_ticks`):
        start-up quiet, a guessed turn whose busy line has gone."""
        while True:
            if not self.rules.wants_ticks():
                self._ticks_wanted = anyio.Event()
                await self._ticks_wanted.wait()
            await anyio.sleep(TICK_SECONDS)
            quiet = max(time.monotonic() - self._last_read, 0.0)
            self._feed(Tick(now_ms(), int(quiet * 1000), self.log.end_seq > 0))

    # ------------------------------------------------------------------ exit

    async def _watch_exit(self) -> None:
        await self.child.exit.event.wait()  # its owner reaped it
        with anyio.move_on_after(EXIT_DRAIN_SECONDS):
            await self._reader_done.wait()
        self._exited()

    def _exited(self) -> None:
        if self.exited.is_set():
            return
        if not self._reader_done.is_set():
            # The exit is reported after every byte the program wrote: what is still
            # in the PTY (a process that inherited the terminal keeps it open, so no
            # end-of-file tells the reader) is read first.
            self._drain(EXIT_DRAIN_BYTES)
        at = now_ms()
        ended: Ended = "killed" if self.kill_requested or self.closed else self._ending
        self.process = ProcessState(
            state="exited",
            pid=self.child.pid,
            exit_code=self.child.exit_code,
            signal=self.child.signal,
            exited_at=at,
            ended=ended,
        )
        if self._records is not None:
            self._records.ended(
                self.id,
                at=at,
                how=ended,
                exit_code=self.child.exit_code,
                signal=self.child.signal,
            )
        self._feed(ProgramExited(self.child.exit_code, self.child.signal, ended == "killed", at))
        self._broadcast(ProcessChanged(session=self.id, process=self.process).model_dump_json())
        self.exited.set()
        self._on_change()

    # ------------------------------------------------------------------ restarts

    async def handover(self) -> dict[str, Any]:
        """What only this server knows, for the next one at a planned restart: the
        screen (as a snapshot and the seq it shows), the activity, the queued message
        and the frame counts. The output itself is in the ring."""
        snapshot = await self.snapshot()
        return {
            "session": self.id,
            "screen": {"ansi": snapshot.screen.ansi, "seq": snapshot.seq},
            "tracker": self.tracker.export(),
            "queued_message": self.queued_message,
            "frames": {
                "applied": self.frames_applied,
                "ignored": self.frames_ignored,
                "rejected": self.frames_rejected,
            },
        }

    def take_over(self, state: Mapping[str, Any]) -> None:
        """Continue from what the previous server handed over (`handover`)."""
        self.tracker.restore(state["tracker"])
        self.queued_message = state.get("queued_message")
        frames = state.get("frames", {})
        self.frames_applied = int(frames.get("applied", 0))
        self.frames_ignored = int(frames.get("ignored", 0))
        self.frames_rejected = {str(k): int(v) for k, v in frames.get("rejected", {}).items()}
        screen = state.get("screen")
        if screen is not None:
            self.renderer.restore(str(screen["ansi"]), int(screen["seq"]))

    # ------------------------------------------------------------------ queued message

    def queue_message(self, text: str) -> bool:
        """Queue ``text`` for the agent's next Stop, replacing any queued one; False
        (nothing queued) unless the agent is working on a turn."""
        if self.exited.is_set() or self.tracker.activity.phase is not ActivityPhase.WORKING:
            return False
        self.queued_message = text
        self._feed(MessageQueued(now_ms()))
        self._message_generation += 1
        self._on_change()
        return True

    def drop_message(self) -> None:
        """Deleted, a new prompt, or the session's end: a message taken meanwhile is
        not put back either."""
        self._message_generation += 1
        if self.queued_message is not None:
            self.queued_message = None
            self._on_change()

    def take_message(self) -> tuple[str, int] | None:
        """The queued message and its generation, taken out; None if there is none."""
        text = self.queued_message
        if text is None:
            return None
        self.queued_message = None
        self._on_change()
        return text, self._message_generation

    def put_back_message(self, text: str, generation: int) -> None:
        """A taken message was not delivered: queued again unless superseded since."""
        if generation == self._message_generation and self.queued_message is None:
            self.queued_message = text
            self._on_change()

    # ------------------------------------------------------------------ clients → PTY

    def write_input(self, data: bytes) -> bool:
        """Queue input for the program; False if it is not reading and the queue is full."""
        if self.exited.is_set():
            return False
        if len(self._input) + len(data) > INPUT_LIMIT:
            return False
        self._feed(KeyTyped(data, now_ms()))
        self._input += data
        self._input_ready.set()
        return True

    async def _write_loop(self) -> None:
        while True:
            await self._input_ready.wait()
            self._input_ready = anyio.Event()
            while self._input:
                written = self.child.write_some(self._input)
                if written:
                    del self._input[:written]
                    continue
                if self.exited.is_set():
                    self._input.clear()
                    break
                await anyio.sleep(0.01)  # the program's input queue is full

    def _answer_query(self, reply: bytes) -> None:
        """Called from the renderer's thread for DA/DSR queries."""
        if self._answering == 0 and not self.exited.is_set():
            self.child.write_some(reply)

    def send_signal(self, signum: int) -> None:
        self.child.send_signal(signum)

    async def resize(self, cols: int, rows: int) -> None:
        """Resize the program, and the headless terminal once it has rendered what
        came before (so a snapshot taken after this returns is at the new size)."""
        if self._resize_program(TermSize(cols=cols, rows=rows)):
            await self.renderer.resize(cols, rows)

    def _resize_program(self, size: TermSize) -> bool:
        """The program's side of a resize, at once (TIOCSWINSZ, then everyone is
        told); the headless terminal follows in stream order (`resize`, or the
        resize loop for callers that cannot wait). False when nothing changed."""
        if size == self.size or self.exited.is_set():
            return False
        self.size = size
        self.child.resize(size.cols, size.rows)
        if self._owner is not None:
            self._owner.resized(self.id, size.cols, size.rows)
        if self._records is not None:
            self._records.resized(self.id, size.cols, size.rows)
        if self.recorder is not None:
            self.recorder.resized(size.cols, size.rows)
        self._broadcast(Resized(session=self.id, size=size).model_dump_json())
        self._on_change()
        return True

    def _resize_soon(self, size: TermSize | None) -> None:
        if size is not None and self._resize_program(size):
            self._renderer_resize_due.set()

    async def _renderer_resize_loop(self) -> None:
        while True:
            await self._renderer_resize_due.wait()
            self._renderer_resize_due = anyio.Event()
            await self.renderer.resize(self.size.cols, self.size.rows)

    def rename(self, name: str) -> None:
        """A new name, everywhere: clients, the keeper (for a later server), records."""
        if name == self.name:
            return
        self.name = name
        self.identity = replace(self.identity, name=name)
        if self._owner is not None:
            self._owner.identity_changed(self.id, self.identity.to_json())
        if self._records is not None:
            self._records.renamed(self.id, name)
        self._on_change()

    async def send_keys(
        self, client: Subscriber, keys: list[str], *, literal: bool, paste: bool
    ) -> bool:
        """tmux's send-keys (see `keynames`), encoded for the program's modes now."""
        modes = await self.renderer.inspect(lambda terminal: terminal.modes)
        data = encode_keys(
            keys,
            literal=literal,
            paste=paste,
            application_cursor=modes.application_cursor_keys,
            bracketed_paste=modes.bracketed_paste,
        )
        self.typed_by(client)
        return self.write_input(data)

    async def capture(self, *, scrollback: int, ansi: bool) -> Captured:
        """The screen (and some scrollback) as text, up to date with the output."""

        def look(terminal: HeadlessTerminal) -> Captured:
            history, rows = terminal.text(scrollback=scrollback, ansi=ansi)
            row, col = terminal.cursor
            return Captured(
                session=self.id,
                size=TermSize(cols=terminal.cols, rows=terminal.rows),
                rows=rows,
                scrollback=history,
                cursor_row=row,
                cursor_col=col,
                title=terminal.title,
                modes=TerminalModesModel.model_validate(asdict(terminal.modes)),
            )

        return await self.renderer.inspect(look)

    # Size policy (see `sizing`): which attached client's size the program gets.

    def is_viewer(self, client: Subscriber) -> bool:
        return client in self._viewers

    def typed_by(self, client: Subscriber) -> None:
        """Input from ``client`` is next: it takes its size back first (tmux's latest)."""
        self._resize_soon(self.sizing.typed(client))

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
        await self.resize(cols, rows)

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
        if view_only:
            self._viewers.add(subscriber)
        else:
            self._viewers.discard(subscriber)
            wanted = self.sizing.attached(subscriber, size)
            if wanted is not None:
                await self.resize(wanted.cols, wanted.rows)
        if since is not None and self.log.holds(since):
            self._subscribe(subscriber)
            subscriber.outbox.put_text(
                Attached(
                    req_id=req_id,
                    session=self.summary(),
                    seq=since,
                    # Queries the headless terminal has parsed were answered (by it,
                    # or by the client then attached); from here on this client
                    # answers, as the server now stays silent (see replay.py).
                    live_seq=min(max(since, self.renderer.rendered_seq), self.log.end_seq),
                    replay="exact",
                    truncated=False,
                ).model_dump_json()
            )
            subscriber.outbox.put_output(self.log.read(since))
            return
        target = self.log.end_seq
        subscriber.outbox.hold()
        self._subscribe(subscriber)
        snapshot = await self.snapshot(at_least=target, scrollback=scrollback)
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
        self.resyncs += 1
        subscriber.outbox.discard_output()
        subscriber.outbox.resynced()
        summary = self.summary()  # first, as in `snapshot`
        target = self.log.end_seq
        subscriber.outbox.hold()
        # Shared with clients that lag at about the same point; the bytes since that
        # screen are replayed after it (`_release`), a quarter of the buffer at most.
        terminal, seq = await self.renderer.shared_snapshot(target, subscriber.outbox.limit // 4)
        message = SnapshotMessage(reason="lagging", snapshot=self._snapshot(summary, terminal, seq))
        self._release(subscriber, message.model_dump_json(), seq, target)

    def _release(self, subscriber: Subscriber, message: str, seq: int, held_from: int) -> None:
        """Send a snapshot ``message`` showing the screen up to ``seq``, then the stream
        from there: output held since ``held_from``, less what the snapshot shows, or
        also the few bytes before it that the snapshot does not (see `Renderer`)."""
        replay = self.log.read(seq, held_from) if seq < held_from else b""
        subscriber.outbox.release(message, covered=max(seq - held_from, 0), replay=replay)

    def _subscribe(self, subscriber: Subscriber) -> None:
        if subscriber not in self._subscribers:
            self._subscribers.append(subscriber)
            self._answering += subscriber.answers_queries
            self._on_change()

    def detach(self, subscriber: Subscriber) -> None:
        self._viewers.discard(subscriber)
        self._resize_soon(self.sizing.detached(subscriber))
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)
            self._answering -= subscriber.answers_queries
            subscriber.outbox.detached()
            self._on_change()

    def detach_all(self) -> list[Subscriber]:
        subscribers, self._subscribers = self._subscribers, []
        self._answering = 0
        self._viewers.clear()
        self.sizing = SizePolicy()
        return subscribers

    # ------------------------------------------------------------------ views

    async def snapshot(self, at_least: int | None = None, *, scrollback: bool = True) -> Snapshot:
        """The screen as of output seq ``at_least`` (default: now) or later, as ``seq`` says.

        The summary is taken first: an exit it reports happened after all of the
        program's output was in the log (see `_exited`), so the screen shows that
        output — never an ``exited`` beside a screen from before the last output."""
        target = self.log.end_seq if at_least is None else at_least
        summary = self.summary()
        terminal, seq = await self.renderer.snapshot(target, scrollback=scrollback)
        return self._snapshot(summary, terminal, seq)

    @staticmethod
    def _snapshot(summary: SessionSummary, terminal: TerminalSnapshot, seq: int) -> Snapshot:
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

    async def _recording_screen(self, at_least: int) -> RecordedScreen:
        terminal, seq = await self.renderer.snapshot(at_least, scrollback=False)
        return RecordedScreen(terminal.ansi, seq, terminal.cols, terminal.rows)

    async def export(self, markers: list[tuple[float, str]]) -> str:
        """What the replay log holds, as an asciicast (``ptyvisor export``), with
        ``markers`` (wall-clock seconds, label) among it. Only references to the log's
        chunks are taken here; copying and encoding happen in a worker thread."""
        pieces = self.log.timed_spans()
        return await anyio.to_thread.run_sync(
            functools.partial(
                asciicast,
                ((at, join(spans)) for at, spans in pieces),
                markers,
                cols=self.size.cols,
                rows=self.size.rows,
                title=self.name,
                term=self.identity.term,
            )
        )

    @property
    def answerable(self) -> bool:
        """Whether a client can answer the pending interaction: only while an agent hook
        holds a request for it (Codex questions, for one, are answered in the terminal)."""
        pending = self.tracker.pending
        return pending is not None and self._holds is not None and self._holds(self.id, pending.id)

    def requests_changed(self) -> None:
        """A hook began or stopped waiting for an answer: clients learn when that changes
        whether the pending interaction is answerable."""
        if self.answerable != self._answerable_shown:
            self._activity_changed()

    def summary(self) -> SessionSummary:
        activity = self.tracker.activity
        return SessionSummary(
            id=self.id,
            name=display(self.name),
            argv=[display(arg) for arg in self.argv],
            command=[display(arg) for arg in self.command],
            cwd=display(self.cwd),
            raw=self._raw_names,
            resumed_from=self.resumed_from,
            recording=self.identity.recording,
            agent=self.agent or activity.agent,
            process=self.process,
            activity=activity,
            pending_interaction=self.tracker.pending,
            answerable=self.answerable,
            queued_message=self.queued_message,
            clients=len(self._subscribers),
            created_at=self.created_at,
            size=self.size,
        )

    def stats(self) -> SessionStats:
        return SessionStats(
            output_bytes=self.log.end_seq,
            replay_start=self.log.start_seq,
            render_lag=self.renderer.lag,
            render_skipped=self.renderer.skipped,
            frames_applied=self.frames_applied,
            frames_ignored=self.frames_ignored,
            frames_rejected=dict(self.frames_rejected),
            client_queues=[subscriber.outbox.size for subscriber in self._subscribers],
        )

    def _activity_changed(self) -> None:
        self._answerable_shown = self.answerable
        activity = self.tracker.activity
        if self._records is not None:
            self._records.activity(
                self.id,
                phase=activity.phase.value,
                since=activity.since,
                reason=activity.reason,
                native_session_id=activity.native_session_id,
                agent=activity.agent,
                source=activity.source,
            )
        shown = self._activity_view()
        differs = [name for name, value in shown.items() if self._activity_shown[name] != value]
        if not differs:
            return  # nothing a client sees changed: no event (see protocol.ActivityChanged)
        self._activity_shown = shown
        if self.recorder is not None and {"phase", "reason"} & set(differs):
            self.recorder.marker(marker_label(activity.phase.value, activity.reason))
        changed = ActivityChanged(
            session=self.id,
            activity=activity,
            pending_interaction=self.tracker.pending,
            answerable=self._answerable_shown,
            changed=differs,
        )
        self._broadcast(changed.model_dump_json())
        self._on_change()

    def _activity_view(self) -> dict[ActivityField, object]:
        activity = self.tracker.activity
        return {
            "phase": activity.phase,
            "since": activity.since,
            "reason": activity.reason,
            "agent": activity.agent,
            "native_session_id": activity.native_session_id,
            "source": activity.source,
            "pending_interaction": self.tracker.pending,
            "answerable": self._answerable_shown,
        }

    def _broadcast(self, text: str) -> None:
        for subscriber in self._subscribers:
            subscriber.outbox.put_text(text)


def new_session_id() -> str:
    return "s" + secrets.token_hex(4)


def raw_names(argv: Sequence[str], command: Sequence[str], cwd: str) -> RawNames | None:
    """The exact bytes of names that are not valid UTF-8, or None when all are."""
    if all(map(is_text, [*argv, *command, cwd])):
        return None
    return RawNames(
        argv=[raw_bytes(arg) for arg in argv],
        command=[raw_bytes(arg) for arg in command],
        cwd=raw_bytes(cwd),
    )
