"""The WebSocket server: authentication, one `Connection` per client, dispatch.

Every connection must carry the token: ``Authorization: Bearer …``, or, for browsers,
which cannot set headers on a WebSocket, the subprotocol ``ptyvisor.token.<token>``
offered beside ``ptyvisor`` (kept out of URLs) or ``?token=``. A browser's ``Origin``
must be the server's own host unless allowed by ``--allow-origin``. Plain GETs on the
same port are the web page (webpage.py). Bad messages get a typed ``error`` back and
the connection carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sqlite3
import time
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any, assert_never
from urllib.parse import urlsplit

import anyio
import anyio.abc
from pydantic import ValidationError
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from ptyvisor import __version__, access, descriptors, httpapi, jsontext
from ptyvisor.agents import AGENTS
from ptyvisor.child import SIGNALS
from ptyvisor.config import ServerConfig, control_path
from ptyvisor.control import BadAnswer, ControlServer, Gone
from ptyvisor.keeperlink import KeeperLink
from ptyvisor.outbox import Outbox, Tracked
from ptyvisor.owner import LocalOwner
from ptyvisor.protocol import (
    CLIENT_MESSAGE,
    CLIENT_MESSAGE_TYPES,
    MAX_TEXT_MESSAGE,
    REQUEST_ID,
    Answer,
    Attach,
    Capture,
    Captured,
    ClientMessage,
    Close,
    Detach,
    Error,
    ErrorCode,
    Export,
    Exported,
    GetStats,
    GetTimeline,
    Hello,
    Input,
    Kill,
    ListSessions,
    Ok,
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
from ptyvisor.recording import marker_label
from ptyvisor.records import Records
from ptyvisor.session import MAX_MESSAGE, Session, now_ms
from ptyvisor.spawn import SpawnError
from ptyvisor.supervisor import NoRecords, NotResumable, Supervisor, UnknownSession
from ptyvisor.webpage import WebPage
from ptyvisor.wire import link as wire

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_SECONDS = 5.0
HARD_MESSAGE_LIMIT = 2 * MAX_TEXT_MESSAGE
"""Beyond this websockets closes the connection (1009); below it, ``too_large`` errors."""
INCOMING_QUEUE = 4
"""Messages websockets buffers before it stops reading the socket (TCP backpressure)."""
MAX_CLIENTS = 256
"""WebSocket connections served at once; more are refused (503) until some close."""
STARTED_AT = time.time_ns() // 1_000_000
"""When this server process started (``hello.started_at``)."""
NOT_READING = "not reading: too many messages queued for this client"
SLOW_REQUESTS = (Kill, Close, Answer)
"""Requests that wait (for a program to stop, a hook to take its answer)."""
EXPORT_SEND_SECONDS = 30.0
"""How long an export's reply may wait to be sent before its place goes to the next."""
SLOW_REQUESTS_AT_ONCE = 256
"""Slow requests one connection may have under way; more wait (and stop reading)."""


class RequestError(Exception):
    """A request that cannot be carried out; becomes an ``error`` message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message


SUBPROTOCOL = "ptyvisor"


def _select_subprotocol(
    connection: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    """Accept ``ptyvisor`` when offered (browsers must echo one); never echo the token."""
    del connection
    return Subprotocol(SUBPROTOCOL) if SUBPROTOCOL in offered else None


def _is_upgrade(request: Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


class Connection:
    """One client: a receiver that dispatches requests and a sender draining the outbox."""

    def __init__(self, websocket: ServerConnection, supervisor: Supervisor) -> None:
        self._ws = websocket
        self._supervisor = supervisor
        self.outbox = Outbox(
            supervisor.config.client_buffer, text_limit=supervisor.config.reply_buffer
        )
        self.answers_queries = False
        self._session: Session | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._slow = anyio.Semaphore(SLOW_REQUESTS_AT_ONCE)

    async def run(self) -> None:
        """Serve the client until it leaves. A bug in handling it (anything but a
        closed connection) is logged once and ends this connection only (1011)."""
        hello = Hello(server_version=__version__, agents=list(AGENTS), started_at=STARTED_AT)
        self.outbox.put_text(hello.model_dump_json())
        try:
            async with anyio.create_task_group() as tg:
                self._tasks = tg
                tg.start_soon(self._send_loop)
                tg.start_soon(self._close_when_overflowing)
                await self._receive_loop()
                tg.cancel_scope.cancel()
        except Exception:
            log.exception("connection from %s failed; closing it", _peer(self._ws))
            with anyio.move_on_after(CLOSE_TIMEOUT_SECONDS, shield=True):
                await self._ws.close(CloseCode.INTERNAL_ERROR, "internal error")
        finally:
            self.outbox.close()
            self._supervisor.unwatch(self.outbox)
            self._detach()

    async def _close_when_overflowing(self) -> None:
        """A client that reads nothing while events pile up is closed, with a reason
        (its sender is stuck in a send meanwhile, so this cannot wait for it)."""
        await self.outbox.overflow.wait()
        log.warning("client %s is not reading its messages; closing it", _peer(self._ws))
        await self._ws.close(CloseCode.POLICY_VIOLATION, NOT_READING)

    async def _send_loop(self) -> None:
        outbox = self.outbox
        try:
            while True:
                await outbox.wait()
                if outbox.closed:
                    return
                if outbox.lagging:
                    if self._session is not None:
                        await self._session.resync(self)
                    else:
                        outbox.detached()
                if outbox.sessions_dirty:
                    outbox.sessions_dirty = False
                    sessions = Sessions(sessions=self._supervisor.summaries())
                    await self._ws.send(sessions.model_dump_json())
                while (item := outbox.pop()) is not None:
                    if isinstance(item, Tracked):
                        # In fragments: one frame of megabytes would be built and
                        # copied in one step of the event loop.
                        await self._ws.send(item.fragments(), text=True)
                        item.sent.set()
                    else:
                        await self._ws.send(item)
        except ConnectionClosed:
            return

    async def _receive_loop(self) -> None:
        try:
            async for message in self._ws:
                if isinstance(message, bytes):
                    self._binary_input(message)
                else:
                    await self._text_message(message)
                # Backpressure: a client that does not read its replies is not read.
                await self.outbox.room()
                # Messages already received come without a pause: let the other
                # connections and sessions run between two.
                await anyio.lowlevel.checkpoint()
        except ConnectionClosed:
            pass

    def _error(self, code: ErrorCode, message: str, req_id: str | int | None = None) -> None:
        self.outbox.put_text(Error(req_id=req_id, code=code, message=message).model_dump_json())

    def _binary_input(self, data: bytes) -> None:
        if len(data) > MAX_TEXT_MESSAGE:
            self._error("too_large", f"input message over {MAX_TEXT_MESSAGE} bytes")
        elif self._session is None:
            self._error("not_attached", "binary input needs an attached session")
        elif self._session.is_viewer(self):
            self._error("view_only", "attached to watch only: input is not sent")
        else:
            self._session.typed_by(self)
            if not self._session.write_input(data):
                self._error("session_exited", "the program has exited or is not reading input")

    async def _text_message(self, text: str) -> None:
        if len(text) > MAX_TEXT_MESSAGE:
            self._error("too_large", f"message over {MAX_TEXT_MESSAGE} bytes")
            return
        try:
            raw = jsontext.loads(text)
        except jsontext.BadJSON as error:
            self._error("bad_json" if error.syntax else "bad_message", error.reason)
            return
        req_id = _req_id_of(raw)
        kind = raw.get("type") if isinstance(raw, dict) else None
        if not isinstance(kind, str):
            # Not even a name (`{"type": []}` is unhashable: no set lookup for it).
            self._error("bad_message", "a message is an object whose type is a string", req_id)
            return
        if kind not in CLIENT_MESSAGE_TYPES:
            self._error("unknown_type", f"unknown message type: {kind!r}", req_id)
            return
        try:
            request = CLIENT_MESSAGE.validate_python(raw)
        except ValidationError as error:
            self._error("bad_message", _describe(error), req_id)
            return
        if isinstance(request, SLOW_REQUESTS):
            # Stopping a program takes up to its grace period, an answer waits for its
            # hook: they run beside the next requests (replies carry req_id), a bounded
            # number at a time.
            await self._slow.acquire()
            assert self._tasks is not None
            self._tasks.start_soon(self._carry_out_slowly, request, req_id)
            return
        await self._carry_out(request, req_id)

    async def _carry_out_slowly(self, request: ClientMessage, req_id: str | int | None) -> None:
        try:
            await self._carry_out(request, req_id)
        finally:
            self._slow.release()

    async def _carry_out(self, request: ClientMessage, req_id: str | int | None) -> None:
        try:
            await self._dispatch(request)
        except RequestError as error:
            self._error(error.code, error.message, req_id)
        except UnknownSession as error:
            self._error("unknown_session", f"no session {error.args[0]!r}", req_id)

    async def _dispatch(self, request: ClientMessage) -> None:
        supervisor = self._supervisor
        match request:
            case ListSessions():
                listed = await supervisor.all_summaries() if request.all else supervisor.summaries()
                self._reply(Sessions(req_id=request.req_id, sessions=listed))
            case WatchSessions():
                supervisor.watch(self.outbox)
                self._ok(request.req_id)
            case UnwatchSessions():
                supervisor.unwatch(self.outbox)
                self._ok(request.req_id)
            case Spawn():
                cwd = os.path.expanduser(request.working_directory or os.getcwd())  # noqa: ASYNC240
                try:
                    session = await supervisor.spawn(
                        request.command_argv,
                        cwd=cwd,
                        env=request.env,
                        name=request.name,
                        cols=request.cols,
                        rows=request.rows,
                        agent=request.agent,
                        record=request.record,
                    )
                except SpawnError as error:
                    raise RequestError("spawn_failed", str(error)) from None
                self._reply(Spawned(req_id=request.req_id, session=session.summary()))
            case Attach():
                session = supervisor.get(request.session)
                self._detach()
                self.answers_queries = request.answers_queries
                self._session = session
                size = (
                    TermSize(cols=request.cols, rows=request.rows)
                    if request.cols is not None and request.rows is not None
                    else None
                )
                await session.attach(
                    self,
                    since=request.since,
                    req_id=request.req_id,
                    scrollback=request.scrollback,
                    size=size,
                    view_only=request.view_only,
                )
            case Detach():
                self._detach()
                self._ok(request.req_id)
            case Input():
                session = self._unless_viewer(supervisor.get(request.session), "input")
                session.typed_by(self)
                if not session.write_input(request.data.encode()):
                    raise RequestError("session_exited", "the program has exited or is busy")
                self._ok_if_asked(request.req_id)
            case Resize():
                session = self._unless_viewer(supervisor.get(request.session), "resize")
                await session.resized_by(self, request.cols, request.rows, claim=request.claim)
                self._ok_if_asked(request.req_id)
            case SendSignal():
                session = supervisor.get(request.session)
                if session.exited.is_set():
                    raise RequestError("session_exited", "the program has already exited")
                session.send_signal(SIGNALS[request.signal])
                self._ok(request.req_id)
            case Kill():
                session = supervisor.get(request.session)
                session.kill_requested = True
                await session.terminate()
                self._ok(request.req_id)
            case Close():
                await supervisor.close(request.session)
                self._ok(request.req_id)
            case RequestSnapshot():
                snapshot = await supervisor.get(request.session).snapshot(
                    scrollback=request.scrollback
                )
                self._reply(
                    SnapshotMessage(req_id=request.req_id, reason="requested", snapshot=snapshot)
                )
            case Rename():
                supervisor.get(request.session).rename(request.name)
                self._ok(request.req_id)
            case SendKeys():
                session = self._unless_viewer(supervisor.get(request.session), "input")
                sent = await session.send_keys(
                    self, request.keys, literal=request.literal, paste=request.paste
                )
                if not sent:
                    raise RequestError("session_exited", "the program has exited or is busy")
                self._ok(request.req_id)
            case Capture():
                captured = await supervisor.get(request.session).capture(
                    scrollback=request.scrollback, ansi=request.ansi
                )
                self._reply(captured.model_copy(update={"req_id": request.req_id}))
            case Export():
                session = supervisor.get(request.session)
                try:
                    transitions, _ = await supervisor.timeline(session.id)
                except NoRecords:
                    transitions = []
                markers = [
                    (t.at / 1000, marker_label(t.phase.value, t.reason)) for t in transitions
                ]
                await self._export(session, markers, request.req_id)
            case GetTimeline():
                try:
                    transitions, ended_at = await supervisor.timeline(request.session)
                except NoRecords as error:
                    raise RequestError("no_records", str(error)) from None
                self._reply(
                    Timeline(
                        req_id=request.req_id,
                        session=request.session,
                        transitions=transitions,
                        ended_at=ended_at,
                    )
                )
            case GetStats():
                session = supervisor.get(request.session)
                self._reply(Stats(req_id=request.req_id, session=session.id, stats=session.stats()))
            case Answer():
                session = supervisor.get(request.session)
                try:
                    await supervisor.requests.answer(
                        request.session,
                        request.interaction,
                        behavior=request.behavior,
                        message=request.message,
                        suggestion=request.suggestion,
                        answers=request.answers,
                        pending=session.tracker.pending,
                    )
                except Gone as gone:
                    if gone.terminal_only:
                        raise RequestError(
                            "not_answerable",
                            f"interaction {request.interaction!r} can only be answered in the "
                            "terminal: no agent hook is waiting for a remote answer",
                        ) from None
                    raise RequestError(
                        "gone",
                        f"interaction {request.interaction!r} is not waiting: already "
                        "answered, timed out, or its session moved on",
                    ) from None
                except BadAnswer as error:
                    raise RequestError("bad_request", str(error)) from None
                self._ok(request.req_id)
            case SendMessage():
                session = supervisor.get(request.session)
                if not request.message.strip():
                    raise RequestError("bad_request", "the message is blank")
                if len(request.message) > MAX_MESSAGE:
                    raise RequestError(
                        "bad_request", f"the message is longer than {MAX_MESSAGE} characters"
                    )
                if not session.queue_message(request.message):
                    raise RequestError(
                        "not_running",
                        f"session {request.session!r} is not running a turn: a message is "
                        "queued only while its agent is working",
                    )
                self._ok(request.req_id)
            case Unsend():
                supervisor.get(request.session).drop_message()
                self._ok(request.req_id)
            case Resume():
                try:
                    session = await supervisor.resume(request.session, rerun=request.rerun)
                except NotResumable as error:
                    raise RequestError("not_resumable", str(error)) from None
                except SpawnError as error:
                    raise RequestError("spawn_failed", str(error)) from None
                self._reply(Spawned(req_id=request.req_id, session=session.summary()))
            case _:
                assert_never(request)

    async def _export(
        self, session: Session, markers: list[tuple[float, str]], req_id: str | int | None
    ) -> None:
        """An export is a reply of up to seven times the replay log (every control
        byte becomes ``\\u001b``): a few at a time are made, each off the loop (its
        JSON in slices, see `protocol.exported_json`), and each holds its place until
        its reply has been sent (or `EXPORT_SEND_SECONDS` passed: a client that does
        not read is closed by its outbox), so all of them together take a bounded
        amount of memory."""
        async with self._supervisor.exports:
            cast = await session.export(markers)
            data = await anyio.to_thread.run_sync(encoded_export, req_id, session.id, cast)
            del cast
            tracked = self.outbox.put_tracked(data)
            del data
            with anyio.move_on_after(EXPORT_SEND_SECONDS):
                await tracked.sent.wait()

    def _unless_viewer(self, session: Session, what: str) -> Session:
        if session.is_viewer(self):
            raise RequestError("view_only", f"attached to watch only: no {what}")
        return session

    def _detach(self) -> None:
        if self._session is not None:
            self._session.detach(self)
            self._session = None

    def _reply(
        self,
        message: Sessions | Spawned | SnapshotMessage | Stats | Timeline | Captured | Exported | Ok,
    ) -> None:
        self.outbox.put_text(message.model_dump_json())

    def _ok(self, req_id: str | int | None) -> None:
        self._reply(Ok(req_id=req_id))

    def _ok_if_asked(self, req_id: str | int | None) -> None:
        if req_id is not None:
            self._ok(req_id)


def encoded_export(req_id: str | int | None, session: str, cast: str) -> bytes:
    """The `Exported` reply as UTF-8, for a worker thread (see `Connection._export`)."""
    return exported_json(req_id, session, cast).encode()


def _local_address(connection: ServerConnection) -> str | None:
    """The address the client connected to (what an address-literal Host must say)."""
    try:
        address = connection.local_address
    except Exception:  # the transport is gone
        return None
    return str(address[0]) if isinstance(address, tuple) else None


def _peer(websocket: ServerConnection) -> str:
    try:
        address = websocket.remote_address
    except Exception:  # the transport is gone
        return "?"
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


def _req_id_of(raw: Any) -> str | int | None:
    """The request's ``req_id`` if it is one an error can echo; a malformed one is
    not echoed (the error says what is wrong with it instead)."""
    if isinstance(raw, dict):
        try:
            return REQUEST_ID.validate_python(raw.get("req_id"))
        except ValidationError:
            return None
    return None


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "message"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def _page_request(
    config: ServerConfig, page: WebPage, request: Request, local_address: str | None
) -> Response:
    refused = access.browser_refusal(config, request, local_address)
    if refused is not None:
        return page.refuse(*refused)
    offered = access.offered_token(request)
    token_ok = None if offered is None else access.token_matches(config, offered)
    path = urlsplit(request.path).path
    return page.respond(request.method, path, request.headers, token_ok=token_ok)


async def run_server(
    config: ServerConfig,
    *,
    keeper: KeeperLink | None = None,
    task_status: anyio.abc.TaskStatus[Server] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled. Alone (``keeper`` None), this process owns the programs,
    and they are stopped on the way out. Under a keeper (keeper.py), it adopts the
    programs the keeper already runs, serves on the keeper's sockets, and stops when
    the keeper says so — leaving the programs running for the next server."""
    descriptors.raise_nofile_limit()
    undo_shedding = descriptors.shed_on_exhaustion(
        asyncio.get_running_loop(), what="WebSocket listener"
    )
    try:
        await _serve(config, keeper, task_status)
    finally:
        undo_shedding()


async def _serve(
    config: ServerConfig, keeper: KeeperLink | None, task_status: anyio.abc.TaskStatus[Server]
) -> None:
    records = await _open_records(config)
    try:
        await _serve_sessions(config, keeper, records, task_status)
    finally:
        if records is not None:
            await records.aclose()


async def _serve_sessions(
    config: ServerConfig,
    keeper: KeeperLink | None,
    records: Records | None,
    task_status: anyio.abc.TaskStatus[Server],
) -> None:
    control_listener: socket.socket | None
    async with anyio.create_task_group() as tg:
        owner = LocalOwner(tg) if keeper is None else keeper.owner()
        supervisor = Supervisor(config, tg, owner, records)
        if records is not None:
            tg.start_soon(records.run)
        if keeper is None:
            control_listener = descriptors.bind_private_unix(control_path(config.state_dir))
            config.control_path = (
                "" if control_listener is None else str(control_path(config.state_dir))
            )
            where: dict[str, Any] = {"host": config.host, "port": config.port}
        else:
            control_listener = keeper.control
            for adopted in keeper.adopted:
                try:
                    await supervisor.adopt(adopted, keeper.handed_over.get(adopted.session))
                except Exception:
                    # One program this server cannot take over (a bug, bad state from
                    # the keeper) must not crash every server started after it.
                    log.exception("session %s cannot be adopted; stopping it", adopted.session)
                    adopted.child.close_fd()
                    owner.forget(adopted.session)
            where = {"sock": keeper.tcp}
        if records is not None:
            # Sessions recorded as running that no program backs any more ended while
            # no server ran (a reboot, a kill -9 of everything).
            records.lost((s.id for s in supervisor.sessions()), at=now_ms())
        page = WebPage()

        clients = 0

        async def process_request(
            connection: ServerConnection, request: Request
        ) -> Response | None:
            local = _local_address(connection)
            if not _is_upgrade(request) or request.method != "GET":
                if httpapi.handles(urlsplit(request.path).path):
                    return await httpapi.respond(
                        config, supervisor, request, local, lambda: clients
                    )
                return _page_request(config, page, request, local)
            refused = access.refusal(config, request, local)
            if refused is None and clients >= MAX_CLIENTS:
                refused = HTTPStatus.SERVICE_UNAVAILABLE, "too many clients; try again later\n"
            if refused is None:
                return None
            status, body = refused
            log.info("refused connection: %s", body.strip())
            return connection.respond(status, body)

        async def handler(websocket: ServerConnection) -> None:
            nonlocal clients
            clients += 1
            try:
                await Connection(websocket, supervisor).run()
            finally:
                clients -= 1

        try:
            async with serve(
                handler,
                **where,
                process_request=process_request,
                select_subprotocol=_select_subprotocol,
                max_size=HARD_MESSAGE_LIMIT,
                max_queue=INCOMING_QUEUE,
                ssl=config.tls_context(),
                compression=None,
                server_header=f"ptyvisor/{__version__}",
            ) as server:
                if keeper is None:
                    port = server.sockets[0].getsockname()[1] if server.sockets else config.port
                    config.port = port
                    host = config.host if ":" not in config.host else f"[{config.host}]"
                    scheme = "wss" if config.tls_cert is not None else "ws"
                    config.url = config.url or f"{scheme}://{host}:{port}/"
                if control_listener is not None:
                    control = ControlServer(supervisor.requests, supervisor.find, config.settings)
                    tg.start_soon(control.serve, control_listener)
                task_status.started(server)
                if keeper is None:
                    # Cancellation ends here; each session's task then stops and reaps
                    # its program (HUP, then KILL after a grace period).
                    await anyio.sleep_forever()
                else:
                    await _follow(keeper, server, supervisor)
                tg.cancel_scope.cancel()
        finally:
            if keeper is None and control_listener is not None:
                control_listener.close()
                with contextlib.suppress(OSError):
                    os.unlink(config.control_path)


async def _follow(keeper: KeeperLink, server: Server, supervisor: Supervisor) -> None:
    """Serve until the keeper says ``stop`` (for good: it stops the programs itself)
    or ``restart`` (hand over what only this server knows, then go); clients are
    closed with 1012 (service restart) then, and reconnect to the next server."""
    done = anyio.Event()

    async def restart() -> None:
        # Stop accepting (new connections wait in the keeper's listening socket for
        # the next server) and close every client with 1012: "come back in a moment".
        server.close(code=CloseCode.SERVICE_RESTART, reason="server restarting")
        with anyio.move_on_after(CLOSE_TIMEOUT_SECONDS):
            await server.wait_closed()
        sessions = [await session.handover() for session in supervisor.sessions()]
        await keeper.send(wire.Handover(sessions))
        done.set()

    stopping = False

    def stop() -> None:
        nonlocal stopping
        stopping = True
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: keeper.run(on_stop=stop, on_restart=restart))
        await keeper.send(wire.Ready())
        await done.wait()
        tg.cancel_scope.cancel()
    if stopping:
        await supervisor.stopping_for_good()


async def _open_records(config: ServerConfig) -> Records | None:
    try:
        return await Records.open(config.state_dir)
    except (OSError, sqlite3.Error) as error:
        log.warning("no session records (%s): past sessions cannot be listed or resumed", error)
        return None
