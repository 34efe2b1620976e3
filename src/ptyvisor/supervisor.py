"""The set of sessions: spawn, look up, close, and the session-list stream."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from anyio.abc import TaskGroup

from ptyvisor.agents import AgentName, launch
from ptyvisor.child import Child
from ptyvisor.config import ServerConfig
from ptyvisor.control import PendingRequests
from ptyvisor.frames import new_nonce
from ptyvisor.keeperlink import Adopted
from ptyvisor.outbox import Outbox
from ptyvisor.owner import Owner, ProgramSpec
from ptyvisor.proctable import ProcessTable
from ptyvisor.protocol import SessionClosed, SessionSummary
from ptyvisor.ring import Ring
from ptyvisor.session import Identity, Session, new_session_id, now_ms
from ptyvisor.spawn import SpawnError, program_environment

log = logging.getLogger(__name__)


class UnknownSession(KeyError):
    """No session has that id (it never existed or was closed)."""


class Supervisor:
    """Owns every session's tasks; sessions outlive the clients that started them."""

    def __init__(self, config: ServerConfig, task_group: TaskGroup, owner: Owner) -> None:
        self.config = config
        self._tg = task_group
        self.owner = owner
        self._sessions: dict[str, Session] = {}
        self._watchers: set[Outbox] = set()
        self._processes = ProcessTable()
        self._unlisted: set[str] = set()
        self.requests = PendingRequests(on_change=self._requests_changed)
        """Hooks waiting on the control socket for a client's answer."""

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
    ) -> Session:
        """Start a session; raises SpawnError (nothing registered) if the program cannot start."""
        session_id = new_session_id()
        while session_id in self._sessions:
            session_id = new_session_id()
        extra_env: dict[str, str] = {}
        command = list(argv)
        if agent is not None:
            started = launch(agent, argv, session_dir=self.session_dir(session_id))
            # What the user asked for: the agent's program and their own arguments,
            # without the extension flags (a page-long hooks JSON for Claude).
            command = [started.argv[0], *argv]
            argv, extra_env = started.argv, started.env
        if not argv:
            raise SpawnError("empty command")
        identity = Identity(
            id=session_id,
            name=name or agent or argv[0].rsplit("/", 1)[-1],
            argv=list(argv),
            command=command,
            cwd=cwd,
            agent=agent,
            created_at=now_ms(),
            nonce=new_nonce(),
        )
        spec = ProgramSpec(
            session_id=session_id,
            argv=identity.argv,
            env=self._environment(identity, {**env, **extra_env}),
            cwd=cwd,
            cols=cols,
            rows=rows,
            ring_capacity=self.config.replay_bytes,
            identity=identity.to_json(),
        )
        try:
            child, ring = await self.owner.start(spec)
        except SpawnError:
            shutil.rmtree(self.session_dir(session_id), ignore_errors=True)
            raise
        session = self._add(identity, child, ring, cols=cols, rows=rows)
        log.info("session %s started: %s (pid %d)", session_id, session.name, child.pid)
        return session

    def _environment(self, identity: Identity, requested: Mapping[str, str]) -> dict[str, str]:
        """The program's environment (see the README's *Environment of a program*)."""
        env = program_environment(os.environ, requested)
        env.update(
            PTYVISOR_SESSION=identity.id,
            PTYVISOR_NONCE=identity.nonce,
            PTYVISOR_URL=self.config.url,
        )
        if self.config.control_path:
            env["PTYVISOR_CONTROL"] = self.config.control_path
        return env

    def _add(
        self, identity: Identity, child: Child, ring: Ring | None, *, cols: int, rows: int
    ) -> Session:
        session = Session(
            identity,
            child,
            ring=ring,
            cols=cols,
            rows=rows,
            config=self.config,
            on_change=self.changed,
            on_frame=self.requests.frame_applied,
            holds=self.requests.holds,
            processes=self._processes,
            owner=self.owner,
        )
        self._sessions[identity.id] = session
        self._tg.start_soon(self._run, session, name=f"session {identity.id}")
        self.changed()
        return session

    def adopt(self, adopted: Adopted, handed_over: Mapping[str, Any] | None) -> Session:
        """A program the keeper already ran when this server started; ``handed_over``
        is what the previous server knew of it, at a planned restart."""
        identity = Identity.from_json(adopted.identity)
        session = self._add(
            identity, adopted.child, adopted.ring, cols=adopted.cols, rows=adopted.rows
        )
        if handed_over is not None:
            session.take_over(handed_over)
        log.info("session %s adopted: %s (pid %d)", identity.id, identity.name, adopted.child.pid)
        return session

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    async def _run(self, session: Session) -> None:
        """One session's life. A bug in its code ends that session (its program is
        stopped and reaped, see `Session.run`), logged once; never the server."""
        try:
            await session.run()
        except Exception:
            log.exception("session %s failed; it is closed", session.id)
        finally:
            self._forget(session)

    def session_dir(self, session_id: str) -> Path:
        """Private per-session files (agent configuration); removed with the session."""
        return self.config.state_dir / "sessions" / session_id

    def _forget(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]
        subscribers = session.detach_all()
        if not (session.closed or session.exited.is_set() or self.owner.stops_programs_on_exit):
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

    async def close(self, session_id: str) -> None:
        session = self.get(session_id)
        session.close()
        await session.finished.wait()

    def summaries(self) -> list[SessionSummary]:
        """Every session's summary. One that cannot be made (a bug) is left out and
        logged once, so that it never takes the whole list down with it."""
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
            session.requests_changed()

    def changed(self) -> None:
        """A summary changed: every watcher gets the current list once its sender runs."""
        for outbox in self._watchers:
            outbox.mark_sessions_dirty()
