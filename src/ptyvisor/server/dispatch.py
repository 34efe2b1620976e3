"""What each request does: one handler per client message type, and the one place
where what they raise becomes a wire error (`wire_error`).

A handler returns the reply (or None: some reply themselves, or not at all) and
raises what it refuses as it is named in ptyvisor.errors; nothing here writes
``try/except`` to turn one error into another. `Connection` (connection.py) reads,
validates and queues; this module decides.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio

from ptyvisor.agents.launch import takes_queued_message
from ptyvisor.errors import (
    BadAnswer,
    Gone,
    NoRecords,
    NotResumable,
    PromptNotTaken,
    PtyvisorError,
    Refused,
    SpawnError,
    UnknownSession,
    WorktreeKept,
)
from ptyvisor.server.child import SIGNALS
from ptyvisor.server.outbox import Outbox
from ptyvisor.server.recording import marker_label
from ptyvisor.server.session import MAX_MESSAGE, Session
from ptyvisor.server.supervisor import Supervisor
from ptyvisor.wire.protocol import (
    Answer,
    Attach,
    Capture,
    Captured,
    ClientMessage,
    Close,
    Detach,
    ErrorCode,
    Export,
    GetStats,
    GetTimeline,
    Input,
    Kill,
    ListSessions,
    NotifyResult,
    NotifyTest,
    NotifyTested,
    Ok,
    Prompt,
    PromptAccepted,
    Rename,
    RequestSnapshot,
    Resize,
    Resume,
    SendKeys,
    SendMessage,
    SendSignal,
    Sessions,
    SnapshotMessage,
    Spawn,
    Spawned,
    Stats,
    TermSize,
    Timeline,
    Unsend,
    UnwatchSessions,
    WatchSessions,
    exported_json,
)

Reply = (
    Sessions
    | Spawned
    | SnapshotMessage
    | Stats
    | Timeline
    | Captured
    | NotifyTested
    | PromptAccepted
    | Ok
)
EXPORT_SEND_SECONDS = 30.0
"""How long an export's reply may wait to be sent before its place goes to the next."""


class RequestError(Refused):
    """A request that cannot be carried out, with the wire error it is."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message


def wire_error(error: PtyvisorError) -> tuple[ErrorCode, str] | None:
    """The wire error a refusal is (its code and message); None for anything else,
    which is a bug to log (see `Connection`)."""
    match error:
        case RequestError():
            return error.code, error.message
        case UnknownSession():
            return "unknown_session", f"no session {error.args[0]!r}"
        case SpawnError():
            return "spawn_failed", str(error)
        case WorktreeKept():
            return "worktree_kept", str(error)
        case NotResumable():
            return "not_resumable", str(error)
        case NoRecords():
            return "no_records", str(error)
        case BadAnswer():
            return "bad_request", str(error)
        case Gone(terminal_only=True):
            return "not_answerable", (
                f"interaction {error.args[0]!r} can only be answered in the terminal: no "
                "agent hook is waiting for a remote answer"
            )
        case Gone():
            return "gone", (
                f"interaction {error.args[0]!r} is not waiting: already answered, timed "
                "out, or its session moved on"
            )
    return None


class Client(Protocol):
    """The connection a request came on, as its handlers see it."""

    outbox: Outbox
    answers_queries: bool
    session: Session | None
    """The session it is attached to."""

    def detach(self) -> None: ...


class Dispatcher:
    """Carries out one connection's requests against the server's sessions."""

    def __init__(self, supervisor: Supervisor, client: Client) -> None:
        self._supervisor = supervisor
        self._client = client
        self._handlers: dict[type[Any], Callable[[Any], Awaitable[Reply | None]]] = {
            ListSessions: self._list,
            WatchSessions: self._watch,
            UnwatchSessions: self._unwatch,
            Spawn: self._spawn,
            Attach: self._attach,
            Detach: self._detach,
            Input: self._input,
            Resize: self._resize,
            SendSignal: self._signal,
            Kill: self._kill,
            Close: self._close,
            RequestSnapshot: self._snapshot,
            Rename: self._rename,
            SendKeys: self._send_keys,
            Prompt: self._prompt,
            Capture: self._capture,
            Export: self._export,
            GetTimeline: self._timeline,
            GetStats: self._stats,
            Answer: self._answer,
            SendMessage: self._send_message,
            Unsend: self._unsend,
            Resume: self._resume,
            NotifyTest: self._notify_test,
        }

    async def __call__(self, request: ClientMessage) -> Reply | None:
        """Carry out ``request``; its reply, if it has one to queue. Raises what
        `wire_error` turns into an error message."""
        return await self._handlers[type(request)](request)

    # ------------------------------------------------------------------ sessions

    def _session(self, session_id: str, *, typing: str | None = None) -> Session:
        """The session; ``typing``: what the request would do to it, refused to a
        client attached to watch only."""
        session = self._supervisor.get(session_id)
        if typing is not None and session.clients.is_viewer(self._client):
            raise RequestError("view_only", f"attached to watch only: no {typing}")
        return session

    async def _list(self, request: ListSessions) -> Reply:
        supervisor = self._supervisor
        listed = await supervisor.all_summaries() if request.all else supervisor.summaries()
        return Sessions(req_id=request.req_id, sessions=listed)

    async def _watch(self, request: WatchSessions) -> Reply:
        self._supervisor.watch(self._client.outbox)
        return Ok(req_id=request.req_id)

    async def _unwatch(self, request: UnwatchSessions) -> Reply:
        self._supervisor.unwatch(self._client.outbox)
        return Ok(req_id=request.req_id)

    async def _spawn(self, request: Spawn) -> Reply:
        cwd = os.path.expanduser(request.working_directory or os.getcwd())  # noqa: ASYNC240
        session = await self._supervisor.spawn(
            request.command_argv,
            cwd=cwd,
            env=request.env,
            name=request.name,
            cols=request.cols,
            rows=request.rows,
            agent=request.agent,
            record=request.record,
            via=request.via,
            worktree=request.worktree,
        )
        return Spawned(req_id=request.req_id, session=session.summary())

    async def _resume(self, request: Resume) -> Reply:
        session = await self._supervisor.resume(request.session, rerun=request.rerun)
        return Spawned(req_id=request.req_id, session=session.summary())

    async def _attach(self, request: Attach) -> None:
        session = self._session(request.session)
        client = self._client
        client.detach()
        client.answers_queries = request.answers_queries
        client.session = session
        size = (
            TermSize(cols=request.cols, rows=request.rows)
            if request.cols is not None and request.rows is not None
            else None
        )
        await session.clients.attach(
            client,
            since=request.since,
            req_id=request.req_id,
            scrollback=request.scrollback,
            size=size,
            view_only=request.view_only,
        )  # it queues the `attached` reply itself, in order with the stream

    async def _detach(self, request: Detach) -> Reply:
        self._client.detach()
        return Ok(req_id=request.req_id)

    # ------------------------------------------------------------------ the program

    async def _input(self, request: Input) -> Reply | None:
        session = self._session(request.session, typing="input")
        session.clients.typed_by(self._client)
        if not session.write_input(request.data.encode()):
            raise RequestError("session_exited", "the program has exited or is busy")
        return None if request.req_id is None else Ok(req_id=request.req_id)

    async def _resize(self, request: Resize) -> Reply | None:
        session = self._session(request.session, typing="resize")
        await session.clients.resized_by(
            self._client, request.cols, request.rows, claim=request.claim
        )
        return None if request.req_id is None else Ok(req_id=request.req_id)

    async def _send_keys(self, request: SendKeys) -> Reply:
        session = self._session(request.session, typing="input")
        sent = await session.send_keys(
            self._client, request.keys, literal=request.literal, paste=request.paste
        )
        if not sent:
            raise RequestError("session_exited", "the program has exited or is busy")
        return Ok(req_id=request.req_id)

    async def _prompt(self, request: Prompt) -> Reply:
        session = self._session(request.session, typing="input")
        if session.agent is None:
            raise RequestError("bad_request", "a prompt goes to an agent's session (--agent)")
        session.clients.typed_by(self._client)
        try:
            at = await session.prompt(
                request.text, ready_wait=request.ready_wait, confirm_wait=request.confirm_wait
            )
        except PromptNotTaken as refused:
            code: ErrorCode = "session_exited" if refused.exited else "prompt_not_taken"
            raise RequestError(code, str(refused)) from None
        return PromptAccepted(req_id=request.req_id, session=session.id, at=at)

    async def _signal(self, request: SendSignal) -> Reply:
        session = self._session(request.session)
        if session.exited.is_set():
            raise RequestError("session_exited", "the program has already exited")
        session.send_signal(SIGNALS[request.signal])
        return Ok(req_id=request.req_id)

    async def _kill(self, request: Kill) -> Reply:
        await self._session(request.session).kill()
        return Ok(req_id=request.req_id)

    async def _close(self, request: Close) -> Reply:
        await self._supervisor.close(request.session, remove_worktree=request.remove_worktree)
        return Ok(req_id=request.req_id)

    async def _rename(self, request: Rename) -> Reply:
        self._session(request.session).rename(request.name)
        return Ok(req_id=request.req_id)

    # ------------------------------------------------------------------ views

    async def _snapshot(self, request: RequestSnapshot) -> Reply:
        snapshot = await self._session(request.session).snapshot(scrollback=request.scrollback)
        return SnapshotMessage(req_id=request.req_id, reason="requested", snapshot=snapshot)

    async def _capture(self, request: Capture) -> Reply:
        session = self._session(request.session)
        captured = await session.capture(scrollback=request.scrollback, ansi=request.ansi)
        return captured.model_copy(update={"req_id": request.req_id})

    async def _notify_test(self, request: NotifyTest) -> Reply:
        notifier = self._supervisor.notifier
        tested = [] if notifier is None else await notifier.test()
        results = [NotifyResult(target=shown, delivered=ok) for shown, ok in tested]
        return NotifyTested(req_id=request.req_id, results=results)

    async def _stats(self, request: GetStats) -> Reply:
        session = self._session(request.session)
        return Stats(req_id=request.req_id, session=session.id, stats=session.stats())

    async def _timeline(self, request: GetTimeline) -> Reply:
        transitions, ended_at = await self._supervisor.timeline(request.session)
        return Timeline(
            req_id=request.req_id,
            session=request.session,
            transitions=transitions,
            ended_at=ended_at,
        )

    async def _export(self, request: Export) -> None:
        """An export is a reply of up to seven times the replay log (every control
        byte becomes ``\\u001b``): a few at a time are made, each off the loop (its
        JSON in slices, see `protocol.exported_json`), and each holds its place until
        its reply has been sent (or `EXPORT_SEND_SECONDS` passed: a client that does
        not read is closed by its outbox), so all of them together take a bounded
        amount of memory."""
        session = self._session(request.session)
        try:
            transitions, _ = await self._supervisor.timeline(session.id)
        except NoRecords:
            transitions = []  # the cast goes without its markers
        markers = [(t.at / 1000, marker_label(t.phase.value, t.reason)) for t in transitions]
        async with self._supervisor.exports:
            cast = await session.export(markers)
            data = await anyio.to_thread.run_sync(encoded_export, request.req_id, session.id, cast)
            del cast
            tracked = self._client.outbox.put_tracked(data)
            del data
            with anyio.move_on_after(EXPORT_SEND_SECONDS):
                await tracked.sent.wait()

    # ------------------------------------------------------------------ the agent

    async def _answer(self, request: Answer) -> Reply:
        session = self._session(request.session)
        await self._supervisor.requests.answer(
            request.session,
            request.interaction,
            behavior=request.behavior,
            message=request.message,
            suggestion=request.suggestion,
            answers=request.answers,
            pending=session.tracker.pending,
        )
        return Ok(req_id=request.req_id)

    async def _send_message(self, request: SendMessage) -> Reply:
        session = self._session(request.session)
        if not request.message.strip():
            raise RequestError("bad_request", "the message is blank")
        if len(request.message) > MAX_MESSAGE:
            raise RequestError(
                "bad_request", f"the message is longer than {MAX_MESSAGE} characters"
            )
        if not takes_queued_message(session.agent):
            raise RequestError(
                "not_supported",
                f"session {request.session!r} runs {session.agent}, whose extension cannot "
                "hand a queued message over at a turn's end: type it when the turn is over",
            )
        if not session.queue_message(request.message):
            raise RequestError(
                "not_running",
                f"session {request.session!r} is not running a turn: a message is "
                "queued only while its agent is working",
            )
        return Ok(req_id=request.req_id)

    async def _unsend(self, request: Unsend) -> Reply:
        self._session(request.session).drop_message()
        return Ok(req_id=request.req_id)


def encoded_export(req_id: str | int | None, session: str, cast: str) -> bytes:
    """The `Exported` reply as UTF-8, for a worker thread (see `Dispatcher._export`)."""
    return exported_json(req_id, session, cast).encode()
