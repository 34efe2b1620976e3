"""An async Python client for the ptyvisor server, used by the CLI and the tests.

    async with Client.connect(url, token) as client:
        session = await client.spawn(["bash"])
        await client.attach(session.id)
        async for event in client.events():
            ...   # Output(seq, data) or a typed server message

The client remembers the seq it has reached on the attached session, so
`reconnect()` resumes with exactly the bytes it missed (or a snapshot when they
are gone). Replies are matched to requests by ``req_id``; everything else (output,
activity/process changes, session-list pushes) arrives through `events()`.
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
import json
import logging
import math
import os
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, Self, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from pydantic import ValidationError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from ptyvisor import __version__
from ptyvisor.client.ssh import Channel, is_ssh, open_channel
from ptyvisor.errors import Disconnected, ServerError
from ptyvisor.wire.jsontext import is_text
from ptyvisor.wire.protocol import (
    SERVER_MESSAGE,
    Answer,
    Attach,
    Attached,
    Capture,
    Captured,
    ClientMessage,
    Close,
    Detach,
    Error,
    Export,
    Exported,
    GetStats,
    GetTimeline,
    Hello,
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
    ServerMessage,
    Sessions,
    SessionStats,
    SessionSummary,
    SignalName,
    Snapshot,
    SnapshotMessage,
    Spawn,
    Spawned,
    Stats,
    Timeline,
    Unsend,
    WatchSessions,
)
from ptyvisor.wire.untrusted import printable

log = logging.getLogger(__name__)
R = TypeVar("R", bound=ServerMessage)
MAX_UNREAD_KINDS = 16
"""Kinds of unreadable message logged (once each) per connection."""
Behavior = Literal["allow", "deny"]


@dataclass(frozen=True, slots=True)
class Output:
    """Terminal output of the attached session; ``seq`` is the seq of its first byte."""

    seq: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ConnectionLost:
    """The connection dropped without `aclose`; call `reconnect()` to resume."""

    reason: str


Event = Output | ConnectionLost | ServerMessage


async def dial(
    url: str, token: str | None, *, autostart: bool = True, max_size: int | None
) -> tuple[ClientConnection, Channel | None]:
    """Open a WebSocket to a server: ``ws://``/``wss://`` directly, ``ssh://`` through
    the user's ``ssh`` and ``dial-stdio`` there (with the far server's token unless
    ``token`` is given). Returns the connection and, for ``ssh://``, its channel, which
    the caller closes after the connection (`Channel.close`, blocking)."""
    channel = None
    sock = None
    if is_ssh(url):
        channel = await _open_channel(url, autostart)
        token = token or channel.token
        url, sock = "ws://localhost/", channel.sock
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        ws = await connect(
            url,
            sock=sock,
            additional_headers=headers,
            max_size=max_size,
            compression=None,
            open_timeout=10,
        )
    except BaseException:
        if channel is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(channel.close)
        raise
    return ws, channel


async def _open_channel(url: str, autostart: bool) -> Channel:
    """`open_channel` in a thread that a cancellation (a caller's timeout) leaves
    behind at once; a channel it opens after that is closed, never leaked."""
    lock = threading.Lock()
    opened: list[Channel] = []
    abandoned = threading.Event()

    def opening() -> Channel:
        channel = open_channel(url, autostart=autostart, cancelled=abandoned)
        with lock:
            if abandoned.is_set():
                channel.close()
            else:
                opened.append(channel)
        return channel

    try:
        return await anyio.to_thread.run_sync(opening, abandon_on_cancel=True)
    except BaseException:
        with lock:
            abandoned.set()
            late = opened[:]
        for channel in late:  # it opened, but the caller had gone
            threading.Thread(target=channel.close, daemon=True).start()
        raise


class Client:
    def __init__(self, url: str, token: str | None, *, autostart: bool = True) -> None:
        """``url``: ``ws://``, ``wss://`` or ``ssh://[user@]host[:port]`` (`ssh`: the
        remote server's token is used unless ``token`` is given); ``autostart``:
        whether a remote end with no server may start one."""
        self.url = url
        self._token = token
        self._autostart = autostart
        self._channel: Channel | None = None
        self.started_remote: str | None = None
        """What the far end of an ``ssh://`` connection started for it (a server)."""
        self._ws: ClientConnection | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, MemoryObjectSendStream[ServerMessage]] = {}
        # Unbounded on purpose: replies share the socket with output, so a bounded
        # queue would either lose output or deadlock a caller awaiting a reply while
        # not reading events. The server bounds what it sends; consume `events()`.
        self._events_in, self._events_out = anyio.create_memory_object_stream[Event](math.inf)
        self._tg: anyio.abc.TaskGroup | None = None
        self.hello: Hello | None = None
        self.session_id: str | None = None
        self.seq: int | None = None
        self._answers_queries = False
        self._size: tuple[int, int] | None = None
        self._view_only = False
        self._closing = False
        self._unread_kinds: set[str] = set()

    # ------------------------------------------------------------------ connection

    @classmethod
    @asynccontextmanager
    async def connect(
        cls, url: str, token: str | None, *, autostart: bool = True
    ) -> AsyncIterator[Self]:
        """A connected client, closed on leaving. What fails inside (the caller's own
        code, or the connection) comes out as itself, not wrapped in the exception
        group of the task that reads the connection: ``except Disconnected`` works."""
        client = cls(url, token, autostart=autostart)
        try:
            async with anyio.create_task_group() as tg:
                client._tg = tg
                try:  # a refused connection releases its event stream too
                    await client._open()
                    yield client
                finally:
                    await client.aclose()
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) != 1:
                raise
            raise group.exceptions[0] from None

    async def _open(self) -> None:
        await self._close_channel()
        self._ws, self._channel = await dial(
            self.url, self._token, autostart=self._autostart, max_size=None
        )
        if self._channel is not None:
            self.started_remote = self._channel.started
        greeting = await self._ws.recv()
        try:
            first = SERVER_MESSAGE.validate_json(greeting)
        except ValidationError:
            first = None
        if not isinstance(first, Hello):
            await self._ws.close()
            raise Disconnected(
                f"the server's greeting cannot be read by this client (ptyvisor "
                f"{__version__}): {printable(str(greeting)[:120])}"
            )
        self.hello = first
        assert self._tg is not None
        self._tg.start_soon(self._read_loop, self._ws)

    async def aclose(self) -> None:
        """Close the connection; also when cancelled (a stream abandoned midway),
        which must still release everything and say goodbye to the server."""
        self._closing = True
        self._events_in.close()
        self._events_out.close()
        with anyio.CancelScope(shield=True):
            if self._ws is not None:
                with anyio.move_on_after(5):
                    await self._ws.close()
            await self._close_channel()

    async def _close_channel(self) -> None:
        """End the ``ssh`` of the last connection, if it went through one."""
        if self._channel is not None:
            channel, self._channel = self._channel, None
            await anyio.to_thread.run_sync(channel.close)

    async def reconnect(self, *, resume: bool = True, scrollback: bool = True) -> Attached | None:
        """Open a new connection and, if a session was attached, resume from our seq
        (``resume``: exactly the missed bytes if still held) or from a fresh snapshot."""
        if self._ws is not None:
            old, self._ws = self._ws, None
            await old.close()
        await self._open()
        if self.session_id is None:
            return None
        return await self.attach(
            self.session_id,
            since=self.seq if resume else None,
            answers_queries=self._answers_queries,
            scrollback=scrollback,
            size=self._size,
            view_only=self._view_only,
        )

    async def _read_loop(self, ws: ClientConnection) -> None:
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    if self.seq is not None:
                        self._emit(Output(self.seq, message))
                        self.seq += len(message)
                    continue
                parsed: ServerMessage | None
                try:
                    parsed = SERVER_MESSAGE.validate_json(message)
                except ValidationError as error:
                    parsed = self._unreadable(message, error)
                if parsed is None:
                    continue
                self._track(parsed)
                req_id = getattr(parsed, "req_id", None)
                waiter = self._pending.pop(req_id, None) if isinstance(req_id, int) else None
                if waiter is not None:
                    waiter.send_nowait(parsed)
                    waiter.close()
                else:
                    self._emit(parsed)
        except ConnectionClosed:
            pass
        finally:
            if ws is self._ws:
                for waiter in self._pending.values():
                    waiter.close()
                self._pending.clear()
                if not self._closing:
                    self._emit(ConnectionLost(str(ws.close_reason or "connection closed")))

    def _unreadable(self, message: str, error: ValidationError) -> Error | None:
        """A message this client cannot read (a newer server's, over ``ssh://`` to
        another machine, say): a request it answers fails with ``bad_message``; any
        other is left out, logged once per kind. Never the end of the connection."""
        try:
            fields = json.loads(message)
        except ValueError:
            fields = None
        kind = fields.get("type") if isinstance(fields, dict) else None
        req_id = fields.get("req_id") if isinstance(fields, dict) else None
        shown = printable(str(kind)[:40])
        if isinstance(req_id, int) and req_id in self._pending:
            code, said = (fields or {}).get("code"), (fields or {}).get("message")
            if kind == "error" and isinstance(code, str) and isinstance(said, str):
                # A newer server's error code: still that error, with its message.
                return Error.model_construct(
                    type="error", req_id=req_id, code=printable(code[:64]), message=said
                )
            return Error(
                req_id=req_id,
                code="bad_message",
                message=f"the server's {shown} reply cannot be read by this client "
                f"(ptyvisor {__version__}): {error.error_count()} problem(s)",
            )
        if shown not in self._unread_kinds and len(self._unread_kinds) < MAX_UNREAD_KINDS:
            self._unread_kinds.add(shown)
            log.warning("left out messages of the server this client cannot read: %s", shown)
        return None

    def _track(self, message: ServerMessage) -> None:
        """Follow the stream position: every snapshot or attach restarts it."""
        if isinstance(message, Attached):
            self.seq = message.seq
        elif isinstance(message, SnapshotMessage) and message.reason == "lagging":
            self.seq = message.snapshot.seq

    def _emit(self, event: Event) -> None:
        with contextlib.suppress(anyio.ClosedResourceError):
            self._events_in.send_nowait(event)

    async def events(self) -> AsyncIterator[Event]:
        """Output and unsolicited messages, in arrival order; ends when the client closes."""
        with contextlib.suppress(anyio.ClosedResourceError):
            async for event in self._events_out:
                yield event

    async def next_event(self, wait: float = 10) -> Event:
        with anyio.fail_after(wait):
            return await self._events_out.receive()

    # ------------------------------------------------------------------ requests

    async def request(
        self, message: ClientMessage | Mapping[str, Any], wait: float = 30
    ) -> ServerMessage:
        """Send one request and wait for its reply; raises ServerError on ``error``.
        ``message``: a protocol model (what every method below sends, made without
        validation: the server is the one that checks, and answers what it refuses with
        a typed error), or, for tests of what a careless client may send, a plain
        object."""
        if self._ws is None:
            raise Disconnected("not connected")
        req_id = next(self._ids)
        if isinstance(message, Mapping):
            body = json.dumps({**message, "req_id": req_id})
        else:
            body = message.model_copy(update={"req_id": req_id}).model_dump_json()
        send, receive = anyio.create_memory_object_stream[ServerMessage](1)
        self._pending[req_id] = send
        try:
            await self._ws.send(body)
            with anyio.fail_after(wait):
                try:
                    reply = await receive.receive()
                except anyio.EndOfStream:
                    raise Disconnected("connection closed before the reply") from None
        except ConnectionClosed as error:
            raise Disconnected(str(error)) from None
        finally:
            self._pending.pop(req_id, None)
            send.close()
            receive.close()
        if isinstance(reply, Error):
            raise ServerError(reply.code, reply.message)
        return reply

    async def _call(self, message: ClientMessage, kind: type[R], *, wait: float = 30) -> R:
        """``message``'s reply, which must be a ``kind``."""
        reply = await self.request(message, wait)
        if not isinstance(reply, kind):
            raise Disconnected(f"{message.type} was answered with {reply.type}")
        return reply

    async def list(self, *, all: bool = False) -> list[SessionSummary]:
        """The sessions; with ``all``, also the past ones the records keep."""
        return (
            await self._call(ListSessions.model_construct(type="list", all=all), Sessions)
        ).sessions

    async def resume(self, session_id: str, *, rerun: bool = False) -> SessionSummary:
        """Start ``session_id`` again on its own conversation (see protocol.Resume)."""
        request = Resume.model_construct(type="resume", session=session_id, rerun=rerun)
        return (await self._call(request, Spawned)).session

    async def watch_sessions(self) -> None:
        await self._call(WatchSessions.model_construct(type="watch_sessions"), Ok)

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        name: str | None = None,
        cols: int = 80,
        rows: int = 24,
        agent: str | None = None,
        record: bool = False,
        via: Sequence[str] | None = None,
        worktree: str | None = None,
    ) -> SessionSummary:
        """Start a program (``agent``: one of the names ``hello.agents`` lists;
        ``via``: a wrapper to start the agent through, ``["ssh", "-t", "host"]``;
        ``worktree``: in a new git worktree of this name, "" for the session's id).
        Arguments and a directory that are not valid UTF-8 (as ``os.fsdecode`` names
        them) are sent as their exact bytes."""
        names: dict[str, Any] = {}
        if all(map(is_text, argv)):
            names["argv"] = list(argv)
        else:
            names["argv_bytes"] = [os.fsencode(arg) for arg in argv]
        if cwd is None or is_text(cwd):
            names["cwd"] = cwd
        else:
            names["cwd_bytes"] = os.fsencode(cwd)
        request = Spawn.model_construct(
            type="spawn",
            agent=agent,
            env=env or {},
            name=name,
            cols=cols,
            rows=rows,
            record=record,
            via=None if via is None else list(via),
            worktree=worktree,
            **names,
        )
        return (await self._call(request, Spawned)).session

    async def attach(
        self,
        session_id: str,
        *,
        since: int | None = None,
        answers_queries: bool = False,
        scrollback: bool = True,
        size: tuple[int, int] | None = None,
        view_only: bool = False,
    ) -> Attached:
        """``size`` (cols, rows): what this client would like; it gets it when no
        other client holds the size, else with its next input. ``view_only``: watch
        only (input and resize are refused)."""
        self.seq = None
        cols, rows = size if size is not None else (None, None)
        request = Attach.model_construct(
            type="attach",
            session=session_id,
            since=since,
            answers_queries=answers_queries,
            scrollback=scrollback,
            view_only=view_only,
            cols=cols,
            rows=rows,
        )
        reply = await self._call(request, Attached)
        self.session_id = session_id
        self._answers_queries = answers_queries
        self._size = size
        self._view_only = view_only
        return reply

    async def detach(self) -> None:
        await self._call(Detach.model_construct(type="detach"), Ok)
        self.session_id = None
        self.seq = None

    async def send_input(self, data: bytes | str) -> None:
        """Raw input to the attached session (binary message; no reply)."""
        if self._ws is None:
            raise Disconnected("not connected")
        try:
            await self._ws.send(data.encode() if isinstance(data, str) else data)
        except ConnectionClosed as error:
            raise Disconnected(str(error)) from None

    async def input(self, session_id: str, data: str) -> None:
        await self._call(Input.model_construct(type="input", session=session_id, data=data), Ok)

    async def resize(self, session_id: str, cols: int, rows: int) -> None:
        await self._call(
            Resize.model_construct(type="resize", session=session_id, cols=cols, rows=rows), Ok
        )
        if session_id == self.session_id:
            self._size = (cols, rows)  # what a reconnect attaches with

    async def signal(self, session_id: str, signal: SignalName) -> None:
        await self._call(
            SendSignal.model_construct(type="signal", session=session_id, signal=signal), Ok
        )

    async def send_keys(
        self, session_id: str, *keys: str, literal: bool = False, paste: bool = False
    ) -> None:
        """Keys by name and text, as tmux's send-keys (see `ptyvisor.terminal.keys`)."""
        request = SendKeys.model_construct(
            type="send_keys", session=session_id, keys=list(keys), literal=literal, paste=paste
        )
        await self._call(request, Ok)

    async def capture(
        self, session_id: str, *, scrollback: int = 0, ansi: bool = False
    ) -> Captured:
        """The screen as text rows (see protocol.Capture)."""
        request = Capture.model_construct(
            type="capture", session=session_id, scrollback=scrollback, ansi=ansi
        )
        return await self._call(request, Captured)

    async def export(self, session_id: str) -> str:
        """What the session's replay log holds, as asciicast v2 text (see protocol.Export)."""
        return (
            await self._call(Export.model_construct(type="export", session=session_id), Exported)
        ).asciicast

    async def timeline(self, session_id: str) -> Timeline:
        """The session's recorded activity transitions (live or past)."""
        return await self._call(
            GetTimeline.model_construct(type="timeline", session=session_id), Timeline
        )

    async def kill(self, session_id: str) -> None:
        await self._call(Kill.model_construct(type="kill", session=session_id), Ok)

    async def close(self, session_id: str, *, remove_worktree: bool = False) -> None:
        """Kill and forget the session; ``remove_worktree``: and its git worktree
        (ServerError ``worktree_kept`` when it has changes: kept, the session closed)."""
        request = Close.model_construct(
            type="close", session=session_id, remove_worktree=remove_worktree
        )
        await self._call(request, Ok)

    async def prompt(
        self,
        session_id: str,
        text: str,
        *,
        ready_wait: float = 120.0,
        confirm_wait: float = 20.0,
    ) -> int:
        """Type ``text`` as the agent's next prompt and return when (Unix ms) the agent
        reported taking it (protocol.Prompt); ServerError ``prompt_not_taken`` says
        why it did not."""
        request = Prompt.model_construct(
            type="prompt",
            session=session_id,
            text=text,
            ready_wait=ready_wait,
            confirm_wait=confirm_wait,
        )
        wait = ready_wait + confirm_wait + 30  # the server's own bounds decide
        return (await self._call(request, PromptAccepted, wait=wait)).at

    async def rename(self, session_id: str, name: str) -> None:
        """A new name for the session (kept across restarts and in the records)."""
        await self._call(Rename.model_construct(type="rename", session=session_id, name=name), Ok)

    async def snapshot(self, session_id: str, *, scrollback: bool = True) -> Snapshot:
        request = RequestSnapshot.model_construct(
            type="snapshot", session=session_id, scrollback=scrollback
        )
        return (await self._call(request, SnapshotMessage)).snapshot

    async def notify_test(self) -> builtins.list[NotifyResult]:
        """A test notification to each of the server's targets: which got it."""
        reply = await self._call(NotifyTest.model_construct(type="notify_test"), NotifyTested)
        return reply.results

    async def stats(self, session_id: str) -> SessionStats:
        return (
            await self._call(GetStats.model_construct(type="stats", session=session_id), Stats)
        ).stats

    async def answer(
        self,
        session_id: str,
        interaction_id: str,
        *,
        behavior: Behavior | None = None,
        message: str | None = None,
        suggestion: int | None = None,
        answers: Mapping[str, Sequence[str] | str] | None = None,
    ) -> None:
        """Answer a pending interaction; raises ServerError (``gone``, ``bad_request``)."""
        request = Answer.model_construct(
            type="answer",
            session=session_id,
            interaction=interaction_id,
            behavior=behavior,
            message=message,
            suggestion=suggestion,
            answers=None
            if answers is None
            else {
                key: value if isinstance(value, str) else list(value)
                for key, value in answers.items()
            },
        )
        await self._call(request, Ok)

    async def send_message(self, session_id: str, message: str) -> None:
        """Queue ``message`` for the next Stop; ServerError ``not_running``,
        ``not_supported`` (the agent cannot take one), ``bad_request``."""
        await self._call(
            SendMessage.model_construct(type="send", session=session_id, message=message), Ok
        )

    async def unsend(self, session_id: str) -> None:
        await self._call(Unsend.model_construct(type="unsend", session=session_id), Ok)


def _answer(value: Sequence[str] | str) -> list[str] | str:
    """A question's answer as the protocol carries it: a text, or a list of labels."""
    return value if isinstance(value, str) else list(value)
