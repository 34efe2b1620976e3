"""One supervised program, composed of parts with one job each:

- `Reader` (reader.py) drains the PTY master, fair across sessions;
- `SessionCore` (core.py), I/O-free, makes sense of what it read — frames
  authenticated and applied by the activity rules, output passed on, the queued
  message kept — and of keys, screens, time and the exit;
- the output goes into the `OutputLog` (the replay ring), every `Clients` outbox, the
  `Recorder` and the headless terminal (`Renderer`, beside the read path, never on it);
- `Clients` (clients.py) catch each client up and redraw one that fell behind;
- `ProgramEnd` (ending.py) names how the program ends.

The `Session` itself wires them, carries out what the core says (publish a change,
tell the session list), and writes clients' input to the program.

    PTY ──▶ Reader ──▶ SessionCore ──┬──▶ activity ──▶ records, recorder, clients' events
                                     └──▶ output ──▶ OutputLog ──┬──▶ Clients' outboxes
                                                                 └╌╌▶ Renderer (beside)
"""

from __future__ import annotations

import functools
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Protocol

import anyio

from ptyvisor.agents.activity import (
    ActivityPhase,
    Changed,
    Event,
    KeyTyped,
    ProgramExited,
    ScreenShown,
    SignalsSeen,
    Tick,
    Which,
)
from ptyvisor.agents.launch import SUBMIT_GAP, takes_queued_message
from ptyvisor.agents.via import ViaSetup
from ptyvisor.config import DEFAULT_LAG_LIMIT
from ptyvisor.keeper.proctable import ProcessTable, in_session_tree
from ptyvisor.keeper.ring import Ring
from ptyvisor.server.child import KILL_GRACE_SECONDS, Child
from ptyvisor.server.identity import Identity
from ptyvisor.server.outputlog import OutputLog, join
from ptyvisor.server.owner import Owner
from ptyvisor.server.recording import Recorder, asciicast
from ptyvisor.server.recording import Screen as RecordedScreen
from ptyvisor.server.records import Records
from ptyvisor.server.renderer import Renderer
from ptyvisor.server.session.clients import Clients, Subscriber, snapshot_of
from ptyvisor.server.session.core import (
    Outcome,
    PromptTaken,
    QueueChanged,
    SessionCore,
    ViaHello,
)
from ptyvisor.server.session.ending import ProgramEnd
from ptyvisor.server.session.prompting import Prompter
from ptyvisor.server.session.publish import ActivityPublisher
from ptyvisor.server.session.reader import Reader
from ptyvisor.server.session.typed_input import TypedInput
from ptyvisor.terminal import HeadlessTerminal, TerminalSignal
from ptyvisor.terminal.keys import encode_keys
from ptyvisor.wire.jsontext import display, is_text, raw_bytes
from ptyvisor.wire.link import HandedScreen, SessionHandover
from ptyvisor.wire.protocol import (
    Captured,
    ProcessChanged,
    ProcessState,
    RawNames,
    Resized,
    SessionStats,
    SessionSummary,
    Snapshot,
    TerminalModesModel,
    TermSize,
)

log = logging.getLogger(__name__)

INPUT_LIMIT = 1024 * 1024
EXIT_DRAIN_SECONDS = 0.5
"""How long, after the child exits, to wait for the reader to reach the PTY's end."""
EXIT_DRAIN_BYTES = 8 * 1024 * 1024
"""At most this much is read at the exit when the PTY's end never came (another
process holds the terminal and still writes)."""
TICK_SECONDS = 0.1
"""How often time is told to the activity rules while it matters to them."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class SessionConfig(Protocol):
    replay_bytes: int
    render_lag_limit: int
    scrollback: int
    record_limit: int
    url: str
    control_path: str


class Session:
    """One program and everything derived from its output (see the module's notes)."""

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
        already holds some (a program adopted after a server restart);
        ``withdraw(session, before, which)``: withdraw held requests a frame ends;
        ``holds(session, interaction)``: whether a hook waits for that answer."""
        self.identity = identity
        self.id = identity.id
        self.agent = identity.agent
        self.name = identity.name
        self.created_at = identity.created_at
        self._raw_names = raw_names(identity.argv, identity.command, identity.cwd)
        self._on_change = on_change
        self._processes = processes or ProcessTable()
        self._owner = owner
        self._records = records
        self.resumed_from = resumed_from
        self._stop_program_on_exit = owner is None or owner.stops_programs_on_exit
        self.size = TermSize(cols=cols, rows=rows)
        self.child = child
        self.process = ProcessState(state="running", pid=child.pid)
        self.end = ProgramEnd()
        self.core = SessionCore(
            identity.id,
            identity.nonce,
            agent=identity.agent,
            created_at=identity.created_at,
            agent_args=identity.agent_args,
            resumed=identity.resume is not None,
            withdraw=None if withdraw is None else functools.partial(withdraw, identity.id),
            # The far side's one-time token ends argv (supervisor.spawn, agents/via.py).
            via=None if identity.via is None else (identity.via, identity.argv[-1]),
        )
        self.tracker = self.core.tracker
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
        self.reader = Reader(child.fd, self._ingest)
        self.renderer = Renderer(
            self.log,
            cols=cols,
            rows=rows,
            scrollback=config.scrollback,
            lag_limit=config.render_lag_limit or DEFAULT_LAG_LIMIT,
            on_reply=self._answer_query,
            on_signals=self._terminal_signals,
            reader_busy=self.reader.busy,
            on_screen=self._on_screen,
            watch_screen=self.core.rules.watches_screen,
        )
        self.clients = Clients(self)
        self.publisher = ActivityPublisher(
            identity.id,
            self.tracker,
            self.clients,
            on_change=on_change,
            holds=holds,
            records=records,
            recorder=self.recorder,
        )
        self._ticks_wanted = anyio.Event()
        """Set when time starts to matter to the activity rules (`_tick_loop`)."""
        self._renderer_resize_due = anyio.Event()
        self._input = TypedInput(limit=INPUT_LIMIT, gap=SUBMIT_GAP.get(identity.agent or ""))
        self._input_ready = anyio.Event()
        self.prompter = Prompter(self, now_ms, agent=identity.agent)
        self.exited = anyio.Event()
        self._cancel = anyio.CancelScope()
        self.finished = anyio.Event()
        """Set once every task has stopped and the child is reaped."""

    # ------------------------------------------------------------------ its life

    async def run(self) -> None:
        """Run the session's tasks until `close`, cancellation or a failure of one of
        them; whichever it is, stop and reap the program before returning (or
        raising: the caller logs a failure and forgets the session)."""
        try:
            with self._cancel:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._read)
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
                if self.end.closing or self._stop_program_on_exit:
                    self.end.change("server")  # no change if a client asked first
                    await self.terminate()
                self.child.close_fd()
            self.finished.set()

    @property
    def closed(self) -> bool:
        """Whether the session is to be forgotten once its program is gone."""
        return self.end.closing

    def close(self) -> None:
        """Stop the session's tasks; `run` then terminates the program and returns."""
        self.end.change("close")
        self._cancel.cancel()

    async def kill(self) -> None:
        """A client's kill: stop the program (its end is ``killed``)."""
        self.end.change("kill")
        await self.terminate()

    async def terminate(self, grace: float = KILL_GRACE_SECONDS) -> None:
        """Stop every process of the program (`Child.terminate`), then publish its end.
        The exit watcher is not running while the session shuts down."""
        await self.child.terminate(self._processes, grace)
        self._reaped()

    async def _watch_exit(self) -> None:
        await self.child.exit.event.wait()  # its owner reaped it
        with anyio.move_on_after(EXIT_DRAIN_SECONDS):
            await self.reader.done.wait()
        self._reaped()

    def _reaped(self) -> None:
        """The program is gone: its end, published once to everyone who keeps it."""
        if self.end.reaped:
            return
        if not self.reader.done.is_set():
            # The exit is reported after every byte the program wrote: what is still
            # in the PTY (a process that inherited the terminal keeps it open, so no
            # end-of-file tells the reader) is read first.
            self.reader.drain(EXIT_DRAIN_BYTES)
        self.end.change("reaped")
        ended = self.end.ended
        assert ended is not None
        at = now_ms()
        child = self.child
        self.process = ProcessState(
            state="exited",
            pid=child.pid,
            exit_code=child.exit_code,
            signal=child.signal,
            exited_at=at,
            ended=ended,
        )
        if self._records is not None:
            self._records.ended(
                self.id, at=at, how=ended, exit_code=child.exit_code, signal=child.signal
            )
        self._feed(ProgramExited(child.exit_code, child.signal, ended == "killed", at))
        self.clients.broadcast(
            ProcessChanged(session=self.id, process=self.process).model_dump_json()
        )
        self.exited.set()
        self._on_change()

    def nonce_matches(self, nonce: str) -> bool:
        """Whether ``nonce`` is this spawn's secret (constant time)."""
        return self.core.nonce_matches(nonce)

    def holds_process(self, pid: int) -> bool:
        """Whether process ``pid`` runs inside this session's program (in its process
        session, or descended from it), as far as that can be told: a process already
        gone, or in another pid namespace, cannot be checked and counts as inside."""
        return in_session_tree(pid, self.child.pid) is not False

    # ------------------------------------------------------------------ output

    async def _read(self) -> None:
        try:
            await self.reader.run()
        finally:
            self._pass_on(*self.core.end_of_output(now_ms(), self.log.end_seq))

    def _ingest(self, data: bytes) -> None:
        """What the reader read; must stay cheap (it is the read path)."""
        self._pass_on(*self.core.output(data, now_ms(), self.log.end_seq))

    def _pass_on(self, output: bytes, outcomes: list[Outcome]) -> None:
        """What the frames of a read changed goes out before the read's output, as
        the frames came first (a hook's frame precedes what its agent prints next)."""
        self._carry_out(outcomes)
        if output:
            self._input.output_seen(time.monotonic())  # a held Enter waits for it
            seq = self.log.append(output)
            if self.recorder is not None:
                self.recorder.output(seq, output)
            self.clients.output(output)
            self.renderer.output_added()

    def _terminal_signals(self, signals: list[TerminalSignal]) -> None:
        """Signals the renderer found in the output (on the event loop, after a batch)."""
        self._feed(SignalsSeen(signals, now_ms()))

    def _on_screen(self, rows: list[str], seq: int) -> None:
        """The renderer's view of the screen (up to output ``seq``), while the activity
        rules watch it."""
        self._feed(ScreenShown(rows, now_ms(), seq))

    def _feed(self, event: Event) -> None:
        self._carry_out(self.core.feed(event))

    def _carry_out(self, outcomes: list[Outcome]) -> None:
        """Make known what the core changed."""
        for outcome in outcomes:
            if isinstance(outcome, Changed):
                self.publisher.changed(outcome)
                self.prompter.activity_changed()
            elif isinstance(outcome, QueueChanged):
                self._on_change()
            elif isinstance(outcome, PromptTaken):
                self.prompter.taken(outcome.digest)
            elif isinstance(outcome, ViaHello) and self.agent is not None:
                # The setup goes before any key typed later; it holds the nonce, so it
                # is written straight to the program, never through what clients see.
                setup = ViaSetup(
                    self.id,
                    self.identity.nonce,
                    self.agent,
                    self.identity.agent_args,
                    self.identity.resume,
                )
                self._input.add(setup.line(), time.monotonic())
                self._input_ready.set()
        if self.core.rules.wants_ticks():
            self._ticks_wanted.set()

    async def _tick_loop(self) -> None:
        """Tell the activity rules the time while it matters to them (start-up quiet,
        a guessed turn whose busy line has gone)."""
        while True:
            if not self.core.rules.wants_ticks():
                self._ticks_wanted = anyio.Event()
                await self._ticks_wanted.wait()
            await anyio.sleep(TICK_SECONDS)
            quiet = max(time.monotonic() - self.reader.last_read, 0.0)
            self._feed(Tick(now_ms(), int(quiet * 1000), self.log.end_seq > 0))

    # ------------------------------------------------------------------ restarts

    async def handover(self) -> SessionHandover:
        """What only this server knows, for the next one at a planned restart: the
        core's state and the screen (as a snapshot, and the seq it shows)."""
        snapshot = await self.snapshot()
        return self.core.handover(HandedScreen(snapshot.screen.ansi, snapshot.seq))

    def take_over(self, state: SessionHandover) -> None:
        """Continue from what the previous server handed over (`handover`)."""
        self.core.take_over(state)
        if state.screen is not None:
            self.renderer.restore(state.screen.ansi, state.screen.seq)

    # ------------------------------------------------------------------ queued message

    @property
    def queued_message(self) -> str | None:
        return self.core.queued_message

    def queue_message(self, text: str) -> bool:
        """Queue ``text`` for the agent's next Stop, replacing any queued one; False
        (nothing queued) unless the agent is working on a turn."""
        if self.exited.is_set() or not self.core.queue_message(text, now_ms()):
            return False
        self._carry_out([QueueChanged()])
        return True

    def drop_message(self) -> None:
        self._carry_out(self.core.drop_message())

    def take_message(self) -> tuple[str, int] | None:
        """The queued message and its generation, taken out (see control.py)."""
        taken = self.core.take_message()
        if taken is not None:
            self._on_change()
        return taken

    def put_back_message(self, text: str, generation: int) -> None:
        if self.core.put_back_message(text, generation):
            self._on_change()

    # ------------------------------------------------------------------ clients → the program

    def write_input(self, data: bytes) -> bool:
        """Queue input for the program; False if it is not reading and the queue is full."""
        if self.exited.is_set() or not self._input.add(data, time.monotonic()):
            return False
        self._feed(KeyTyped(data, now_ms()))
        self._input_ready.set()
        return True

    async def _write_loop(self) -> None:
        while True:
            await self._input_ready.wait()
            self._input_ready = anyio.Event()
            while (due := self._input.next(time.monotonic())) is not None:
                if isinstance(due, float):
                    with anyio.move_on_after(due):  # an Enter held back (typed_input.py)
                        await self._input_ready.wait()
                    continue
                written = self.child.write_some(due)
                self._input.put_back(due[written:])
                if written:
                    continue
                if self.exited.is_set():
                    self._input.clear()
                    break
                await anyio.sleep(0.01)  # the program's input queue is full

    def _answer_query(self, reply: bytes) -> None:
        """Called from the renderer's thread for DA/DSR queries: answered only while no
        attached client answers them itself."""
        if self.clients.answering == 0 and not self.exited.is_set():
            self.child.write_some(reply)

    def send_signal(self, signum: int) -> None:
        self.child.send_signal(signum)

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
        self.clients.typed_by(client)
        return self.write_input(data)

    async def prompt(self, text: str, *, ready_wait: float, confirm_wait: float) -> int:
        """Type ``text`` as the agent's next prompt; when (Unix ms) it reported taking
        it (see prompting.py). Raises PromptNotTaken saying why not."""
        return await self.prompter.deliver(text, ready_wait=ready_wait, confirm_wait=confirm_wait)

    # What prompting.Prompter needs of its session (prompting.Typist).

    def phase(self) -> ActivityPhase:
        return self.tracker.activity.phase

    def ended(self) -> bool:
        return self.exited.is_set()

    async def bracketed_paste(self) -> bool:
        return await self.renderer.inspect(lambda terminal: terminal.modes.bracketed_paste)

    async def screen_rows(self) -> list[str]:
        return await self.renderer.inspect(lambda terminal: terminal.display)

    async def resize(self, cols: int, rows: int) -> None:
        """Resize the program, and the headless terminal once it has rendered what
        came before (so a snapshot taken after this returns is at the new size)."""
        if self._resize_program(TermSize(cols=cols, rows=rows)):
            await self.renderer.resize(cols, rows)

    def resize_soon(self, size: TermSize | None) -> None:
        """`resize`, for callers that cannot wait: the headless terminal follows."""
        if size is not None and self._resize_program(size):
            self._renderer_resize_due.set()

    def _resize_program(self, size: TermSize) -> bool:
        """The program's side of a resize, at once (TIOCSWINSZ, then everyone is
        told); the headless terminal follows in stream order. False when nothing
        changed."""
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
        self.clients.broadcast(Resized(session=self.id, size=size).model_dump_json())
        self._on_change()
        return True

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

    # ------------------------------------------------------------------ clients

    def changed(self) -> None:
        """The session list shows something new."""
        self._on_change()

    # ------------------------------------------------------------------ views

    async def snapshot(self, at_least: int | None = None, *, scrollback: bool = True) -> Snapshot:
        """The screen as of output seq ``at_least`` (default: now) or later, as ``seq`` says.

        The summary is taken first: an exit it reports happened after all of the
        program's output was in the log (see `_reaped`), so the screen shows that
        output — never an ``exited`` beside a screen from before the last output."""
        target = self.log.end_seq if at_least is None else at_least
        summary = self.summary()
        terminal, seq = await self.renderer.snapshot(target, scrollback=scrollback)
        return snapshot_of(summary, terminal, seq)

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

    def summary(self) -> SessionSummary:
        activity = self.tracker.activity
        identity = self.identity
        return SessionSummary(
            id=self.id,
            name=display(self.name),
            argv=[display(arg) for arg in identity.argv],
            command=[display(arg) for arg in identity.command],
            cwd=display(identity.cwd),
            raw=self._raw_names,
            resumed_from=self.resumed_from,
            worktree=None if identity.worktree is None else display(identity.worktree),
            recording=identity.recording,
            agent=self.agent or activity.agent,
            process=self.process,
            activity=activity,
            pending_interaction=self.tracker.pending,
            answerable=self.publisher.answerable,
            queued_message=self.core.queued_message,
            takes_messages=takes_queued_message(self.agent),
            clients=len(self.clients),
            created_at=self.created_at,
            size=self.size,
        )

    def stats(self) -> SessionStats:
        frames = self.core.frames
        return SessionStats(
            output_bytes=self.log.end_seq,
            replay_start=self.log.start_seq,
            render_lag=self.renderer.lag,
            render_skipped=self.renderer.skipped,
            frames_applied=frames.applied,
            frames_ignored=frames.ignored,
            frames_rejected=dict(frames.rejected),
            client_queues=self.clients.queues(),
        )


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
