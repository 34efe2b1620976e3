"""The set of sessions: spawn, look up, close, and the session-list stream."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import get_args

import anyio
from anyio.abc import TaskGroup

from ptyvisor.agents.activity import Activity, ActivityPhase, ActivitySource
from ptyvisor.agents.launch import AGENTS, PROGRAMS, AgentName, launch, resume_args
from ptyvisor.agents.via import COMMAND as VIA_COMMAND
from ptyvisor.config import BadNotifyTarget, ServerConfig, notify_targets
from ptyvisor.errors import (
    BadNativeId,
    NoRecords,
    NotResumable,
    RecordsUnavailable,
    SpawnError,
    UnknownSession,
    WorktreeKept,
)
from ptyvisor.keeper import descriptors
from ptyvisor.keeper.proctable import ProcessTable
from ptyvisor.keeper.ring import Ring
from ptyvisor.keeper.spawn import program_environment
from ptyvisor.server import worktrees
from ptyvisor.server.child import Child
from ptyvisor.server.control import PendingRequests
from ptyvisor.server.identity import Identity
from ptyvisor.server.keeperlink import Adopted
from ptyvisor.server.notifications import Notifier
from ptyvisor.server.outbox import Outbox
from ptyvisor.server.owner import Owner
from ptyvisor.server.records import Record, Records
from ptyvisor.server.session import Session, new_session_id, now_ms, raw_names
from ptyvisor.wire.frames import new_nonce
from ptyvisor.wire.jsontext import display
from ptyvisor.wire.link import ProgramSpec, SessionHandover
from ptyvisor.wire.protocol import ProcessState, SessionClosed, SessionSummary, TermSize, Transition
from ptyvisor.wire.untrusted import native_id_problem

log = logging.getLogger(__name__)


_PHASES = frozenset(phase.value for phase in ActivityPhase)
EXPORTS_AT_ONCE = 2
"""Exports made at once by the whole server; more wait their turn."""


class Supervisor:
    """Owns every session's tasks; sessions outlive the clients that started them."""

    def __init__(
        self,
        config: ServerConfig,
        task_group: TaskGroup,
        owner: Owner,
        records: Records | None = None,
    ) -> None:
        self.config = config
        self._tg = task_group
        self.owner = owner
        self.records = records
        self._sessions: dict[str, Session] = {}
        self._watchers: set[Outbox] = set()
        self._processes = ProcessTable()
        self._unlisted: set[str] = set()
        self.requests = PendingRequests(on_change=self._requests_changed)
        """Hooks waiting on the control socket for a client's answer."""
        self.exports = anyio.Semaphore(EXPORTS_AT_ONCE)
        """Exports being made or sent, across every connection (see server.py)."""
        try:
            targets = notify_targets(config)
        except (OSError, BadNotifyTarget) as error:  # serve checked them; the file changed
            log.warning("notifying nobody: %s", error)
            targets = []
        self.notifier = Notifier(targets, config.notify_quiet) if targets else None
        """Notifications when a session needs input, ends a turn, fails or exits."""

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        name: str | None,
        cols: int,
        rows: int,
        agent: AgentName | None = None,
        resume: str | None = None,
        resumed_from: str | None = None,
        record: bool = False,
        via: Sequence[str] | None = None,
        worktree: str | None = None,
        in_worktree: str | None = None,
    ) -> Session:
        """Start a session; raises SpawnError (nothing registered) if the program cannot
        start. ``resume``: the agent's own id of a conversation to continue. ``record``:
        as asciicast (see recording.py), as every session is with ``serve --record``.
        ``via``: a wrapper the agent runs through (agents/via.py). ``worktree``: start
        in a new git worktree of this name ("": the session's id; server/worktrees.py);
        ``in_worktree``: the worktree ``cwd`` is in already (a session started again)."""
        shortage = descriptors.spawn_shortage()
        if shortage is not None:
            raise SpawnError(shortage)
        session_id = new_session_id()
        while session_id in self._sessions:
            session_id = new_session_id()
        extra_env: dict[str, str] = {}
        command = list(argv)
        if agent is not None and via:
            try:  # the far side starts it; its resume id is checked here all the same
                if resume is not None:
                    resume_args(agent, resume)
            except BadNativeId as bad:
                raise NotResumable(str(bad)) from None
            command = [*via, PROGRAMS[agent], *argv]
            argv = [*via, *VIA_COMMAND, session_id, new_nonce()]  # a one-time token
        elif agent is not None:
            try:
                started = launch(
                    agent,
                    argv,
                    session_dir=self.session_dir(session_id),
                    resume=resume,
                    env=program_environment(os.environ, env),  # what the agent will see
                )
            except BadNativeId as bad:
                raise NotResumable(str(bad)) from None
            # What the user asked for: the agent's program and their own arguments,
            # without the extension flags (a page-long hooks JSON for Claude).
            command = [started.argv[0], *argv]
            argv, extra_env = started.argv, started.env
        if not argv:
            raise SpawnError("empty command")
        made = None
        if worktree is not None:
            try:
                made = await worktrees.create(cwd, worktree or session_id, self.config.state_dir)
            except SpawnError:
                shutil.rmtree(self.session_dir(session_id), ignore_errors=True)
                raise
            cwd, in_worktree = made.cwd, made.path
        recording = record or self.config.record_dir is not None
        program_env = {**env, **extra_env}
        identity = Identity(
            id=session_id,
            name=name or agent or argv[0].rsplit("/", 1)[-1],
            argv=list(argv),
            command=command,
            cwd=cwd,
            agent=agent,
            created_at=now_ms(),
            nonce=new_nonce(),
            recording=str(self.config.recordings / f"{session_id}.cast") if recording else None,
            via=list(via) if agent is not None and via else None,
            resume=resume,
            worktree=in_worktree,
        )
        environment = self._environment(identity, program_env)
        identity = replace(identity, term=environment.get("TERM", identity.term))
        spec = ProgramSpec(
            session_id=session_id,
            argv=identity.argv,
            env=environment,
            cwd=cwd,
            cols=cols,
            rows=rows,
            ring_capacity=self.config.replay_bytes,
            identity=identity.to_json(),
        )
        try:
            child, ring = await self.owner.start(spec)
        except BaseException:
            shutil.rmtree(self.session_dir(session_id), ignore_errors=True)
            if made is not None:  # nothing in it yet: no session, no worktree
                with anyio.CancelScope(shield=True), contextlib.suppress(WorktreeKept):
                    await worktrees.remove(made.path)
            raise
        session = self._add(identity, child, ring, cols=cols, rows=rows, resumed_from=resumed_from)
        log.info("session %s started: %s (pid %d)", session_id, session.name, child.pid)
        return session

    async def resume(self, session_id: str, *, rerun: bool) -> Session:
        """Start ``session_id`` again (see protocol.Resume); raises UnknownSession,
        NotResumable or SpawnError."""
        live = self._sessions.get(session_id)
        if live is not None and not live.exited.is_set():
            raise NotResumable(f"session {session_id} is still running")
        if live is not None:
            identity, native = live.identity, live.tracker.activity.native_session_id
            cols, rows = live.size.cols, live.size.rows
        elif (record := await self._record(session_id, "resume")) is not None:
            identity, native = record.identity, record.native_session_id
            cols, rows = record.cols, record.rows
        else:
            raise UnknownSession(session_id)
        agent = identity.agent
        # Only a frame (untrusted), or a record from before ids were checked, can have
        # put a bad id there: it never reaches the agent's argv.
        problem = native_id_problem(agent, native) if agent in AGENTS and native else None
        if agent in AGENTS and native and problem is None:
            args, resume = identity.agent_args, native
        elif rerun:
            args = identity.agent_args if agent in AGENTS else identity.argv
            resume = None
        elif problem is not None:
            raise NotResumable(
                f"session {session_id}'s recorded conversation id is refused: {problem} "
                "(rerun starts it afresh)"
            )
        elif agent in AGENTS:
            raise NotResumable(
                f"{agent} never reported its conversation's id in session {session_id}: "
                "nothing to resume (rerun starts it afresh)"
            )
        else:
            raise NotResumable(
                f"session {session_id} ran a plain command, which has no conversation to "
                "resume (rerun starts it again with the same arguments)"
            )
        return await self.spawn(
            args,
            cwd=identity.cwd,
            env={},
            name=identity.name,
            cols=cols,
            rows=rows,
            agent=agent if agent in AGENTS else None,
            resume=resume,
            resumed_from=session_id,
            record=identity.recording is not None,  # recorded then, recorded again
            via=identity.via,  # through the same wrapper
            in_worktree=identity.worktree,  # in the same worktree (cwd is in it)
        )

    def _environment(self, identity: Identity, requested: Mapping[str, str]) -> dict[str, str]:
        """The program's environment (docs/architecture.md, *Environment of a program*)."""
        env = program_environment(os.environ, requested)
        env.update(
            PTYVISOR_SESSION=identity.id,
            PTYVISOR_NONCE=identity.nonce,
            PTYVISOR_URL=self.config.url,
        )
        if identity.agent is not None:
            env["PTYVISOR_AGENT"] = identity.agent  # which agent an extension speaks for
        if self.config.control_path:
            env["PTYVISOR_CONTROL"] = self.config.control_path
        return env

    def _add(
        self,
        identity: Identity,
        child: Child,
        ring: Ring | None,
        *,
        cols: int,
        rows: int,
        resumed_from: str | None = None,
    ) -> Session:
        if self.records is not None:
            self.records.started(
                identity.to_json(),
                name=display(identity.name),
                cols=cols,
                rows=rows,
                pid=child.pid,
                resumed_from=resumed_from,
            )
        session = Session(
            identity,
            child,
            ring=ring,
            cols=cols,
            rows=rows,
            config=self.config,
            on_change=self.changed,
            withdraw=self.requests.withdraw_for,
            holds=self.requests.holds,
            processes=self._processes,
            owner=self.owner,
            records=self.records,
            resumed_from=resumed_from,
        )
        self._sessions[identity.id] = session
        self._tg.start_soon(self._run, session, name=f"session {identity.id}")
        self.changed()
        return session

    async def _record(self, session_id: str, why: str) -> Record | None:
        """The session's record, or None: no records, none for it, or unreadable (a
        past session's record is a convenience, and a broken one costs nothing)."""
        if self.records is None:
            return None
        try:
            return await self.records.get(session_id)
        except RecordsUnavailable as error:
            log.warning("no record of session %s for %s: %s", session_id, why, error)
            return None

    async def adopt(self, adopted: Adopted, handed_over: SessionHandover | None) -> Session:
        """A program the keeper already ran when this server started; ``handed_over``
        is what the previous server knew of it, at a planned restart."""
        identity = Identity.from_json(adopted.identity)
        session = self._add(
            identity, adopted.child, adopted.ring, cols=adopted.cols, rows=adopted.rows
        )
        if handed_over is None or not self._took_over(session, handed_over):
            # After a crash, or with a handover that does not fit: the last activity
            # the records know, until the next frame.
            record = await self._record(identity.id, "its last activity")
            if record is not None and record.phase is not None:
                session.tracker.resume(
                    Activity(
                        phase=ActivityPhase(record.phase),
                        since=record.phase_since or identity.created_at,
                        agent=record.agent,
                        reason=record.reason,
                        native_session_id=record.native_session_id,
                        source=_source(record.source),
                    )
                )
        log.info("session %s adopted: %s (pid %d)", identity.id, identity.name, adopted.child.pid)
        return session

    @staticmethod
    def _took_over(session: Session, handed_over: SessionHandover) -> bool:
        """Whether the session continues from the previous server's state; one that
        does not fit (a bug in that server) costs that session's state, nothing more."""
        try:
            session.take_over(handed_over)
        except (ValueError, LookupError, TypeError) as error:
            log.warning("session %s: its handover is unusable: %s", session.id, error)
            return False
        return True

    async def stopping_for_good(self) -> None:
        """The keeper stops every program once this server is gone: record that."""
        if self.records is None:
            return
        for session in self._sessions.values():
            if not session.exited.is_set():
                self.records.ended(
                    session.id, at=now_ms(), how="server", exit_code=None, signal=None
                )
        await self.records.commit()

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    async def _run(self, session: Session) -> None:
        """One session's life. A bug in its code ends that session (its program is
        stopped and reaped, see `Session.run`), logged once; never the server."""
        try:
            await session.run()
        except Exception:
            log.exception("session %s failed; it is closed", session.id)
            session.end.change("close")  # its owner stops what is left of it
        finally:
            self._forget(session)

    def session_dir(self, session_id: str) -> Path:
        """Private per-session files (agent configuration); removed with the session."""
        return self.config.state_dir / "sessions" / session_id

    def _forget(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]
        subscribers = session.clients.detach_all()
        if not (session.closed or self.owner.stops_programs_on_exit):
            log.info("session %s left running for the next server", session.id)
            return
        self.owner.forget(session.id)
        shutil.rmtree(self.session_dir(session.id), ignore_errors=True)
        closed = SessionClosed(session=session.id).model_dump_json()
        for subscriber in subscribers:
            subscriber.outbox.put_text(closed)
        log.info("session %s closed", session.id)
        self.changed()

    def get(self, session_id: str) -> Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise UnknownSession(session_id) from None

    def find(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    async def close(self, session_id: str, *, remove_worktree: bool = False) -> None:
        """Kill and forget the session; ``remove_worktree``: and its worktree, unless it
        has changes (raises WorktreeKept then, the session closed all the same)."""
        session = self.get(session_id)
        session.close()
        await session.finished.wait()
        if remove_worktree and session.identity.worktree is not None:
            await worktrees.remove(session.identity.worktree)

    async def timeline(self, session_id: str) -> tuple[list[Transition], int | None]:
        """The recorded activity transitions of a live or past session, oldest first,
        and when its program exited; raises UnknownSession, NoRecords."""
        if self.records is None:
            raise NoRecords("this server could not open its session records")
        live = self._sessions.get(session_id)
        try:
            record = None if live is not None else await self.records.get(session_id)
            if live is None and record is None:
                raise UnknownSession(session_id)
            kept = await self.records.timeline(session_id)
        except RecordsUnavailable as error:
            raise NoRecords(f"the session records cannot be read now: {error}") from None
        transitions = [
            Transition(at=at, phase=ActivityPhase(phase), reason=reason)
            for at, phase, reason in kept
            if phase in _PHASES
        ]
        if live is not None:
            ended_at = live.process.exited_at
        else:
            assert record is not None
            ended_at = record.ended_at
        return transitions, ended_at

    async def all_summaries(self) -> list[SessionSummary]:
        """Every session's summary, then the records' past sessions, newest first
        (none when the records cannot be read now: logged, and the live ones stand)."""
        summaries = self.summaries()
        if self.records is None:
            return summaries
        try:
            records = await self.records.all()
        except RecordsUnavailable as error:
            log.warning("past sessions left out: the records cannot be read now (%s)", error)
            return summaries
        for record in records:
            if record.id not in self._sessions:  # a live one left out stays out
                with contextlib.suppress(Exception):  # a bug in one: that one is left out
                    summaries.append(past_summary(record))
        return summaries

    def summaries(self) -> list[SessionSummary]:
        """Every live session's summary. One that cannot be made (a bug) is left out
        and logged once, so that it never takes the whole list down with it."""
        summaries = []
        for session in list(self._sessions.values()):
            try:
                summaries.append(session.summary())
            except Exception:
                if session.id not in self._unlisted:
                    self._unlisted.add(session.id)
                    log.exception("session %s cannot be summarised; left out", session.id)
        return summaries

    def watch(self, outbox: Outbox) -> None:
        self._watchers.add(outbox)
        outbox.mark_sessions_dirty()

    def unwatch(self, outbox: Outbox) -> None:
        self._watchers.discard(outbox)

    def _requests_changed(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.publisher.requests_changed()

    def changed(self) -> None:
        """A summary changed: every watcher gets the current list once its sender runs,
        and the notifier looks at it."""
        for outbox in self._watchers:
            outbox.mark_sessions_dirty()
        if self.notifier is not None:
            self.notifier.changed()


def past_summary(record: Record) -> SessionSummary:
    """A session the records keep, as the protocol shows it (``past``)."""
    identity = record.identity
    phase = ActivityPhase(record.phase) if record.phase else ActivityPhase.UNAVAILABLE
    return SessionSummary(
        id=record.id,
        name=record.name,
        argv=[display(arg) for arg in identity.argv],
        command=[display(arg) for arg in identity.command],
        cwd=display(identity.cwd),
        agent=record.agent,
        process=ProcessState(
            state="exited",
            pid=record.pid,
            exit_code=record.exit_code,
            signal=record.signal,
            exited_at=record.ended_at,
            ended=record.ended,  # type: ignore[arg-type]
        ),
        activity=Activity(
            phase=phase,
            since=record.phase_since or record.created_at,
            agent=record.agent,
            reason=record.reason,
            native_session_id=record.native_session_id,
            source=_source(record.source),
        ),
        raw=raw_names(identity.argv, identity.command, identity.cwd),
        past=True,
        resumed_from=record.resumed_from,
        worktree=None if identity.worktree is None else display(identity.worktree),
        clients=0,
        created_at=record.created_at,
        size=TermSize(cols=record.cols, rows=record.rows),
    )


def _source(kept: str | None) -> ActivitySource:
    """The source the records kept (None for records from before it was kept)."""
    for source in get_args(ActivitySource):
        if kept == source:
            return source  # type: ignore[no-any-return]
    return "process"
