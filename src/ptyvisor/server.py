"""The WebSocket server: authentication, one `Connection` per client, dispatch.

Every connection must carry the token: ``Authorization: Bearer …``, or, for browsers,
which cannot set headers on a WebSocket, the subprotocol ``ptyvisor.token.<token>``
offered beside ``ptyvisor`` (kept out of URLs) or ``?token=``. A browser's ``Origin``
must be the server's own host unless allowed by ``--allow-origin``. Plain GETs on the
same port are the web page (webpage.py). Bad messages get a typed ``error`` back and
the connection carries on.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any, assert_never
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from pydantic import ValidationError
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from ptyvisor import __version__
from ptyvisor.agents import AGENTS
from ptyvisor.child import SIGNALS, SpawnError
from ptyvisor.config import ServerConfig
from ptyvisor.control import BadAnswer, ControlServer, Gone, control_path
from ptyvisor.outbox import Outbox
from ptyvisor.protocol import (
    CLIENT_MESSAGE,
    CLIENT_MESSAGE_TYPES,
    MAX_TEXT_MESSAGE,
    Answer,
    Attach,
    ClientMessage,
    Close,
    Detach,
    Error,
    ErrorCode,
    GetStats,
    Hello,
    Input,
    Kill,
    ListSessions,
    Ok,
    RequestSnapshot,
    Resize,
    SendMessage,
    SendSignal,
    Sessions,
    SnapshotMessage,
    Spawn,
    Spawned,
    Stats,
    Unsend,
    UnwatchSessions,
    WatchSessions,
)
from ptyvisor.session import MAX_MESSAGE, Session
from ptyvisor.supervisor import Supervisor, UnknownSession
from ptyvisor.webpage import WebPage

log = logging.getLogger(__name__)

HARD_MESSAGE_LIMIT = 16 * MAX_TEXT_MESSAGE
"""Beyond this websockets closes the connection (1009); below it, ``too_large`` errors."""


class RequestError(Exception):
    """A request that cannot be carried out; becomes an ``error`` message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message


SUBPROTOCOL = "ptyvisor"
TOKEN_SUBPROTOCOL_PREFIX = "ptyvisor.token."


def check_request(config: ServerConfig, request: Request) -> tuple[HTTPStatus, str] | None:
    """Refusal for an unauthenticated or cross-origin request, or None to accept it."""
    origin = request.headers.get("Origin")
    if origin is not None and not _origin_allowed(config, origin, request.headers.get("Host")):
        return HTTPStatus.FORBIDDEN, "origin not allowed\n"
    if not token_matches(config, _offered_token(request)):
        return HTTPStatus.UNAUTHORIZED, "missing or wrong token\n"
    return None


def token_matches(config: ServerConfig, offered: str | None) -> bool:
    return offered is not None and hmac.compare_digest(offered.encode(), config.token.encode())


def _offered_token(request: Request) -> str | None:
    authorization = request.headers.get("Authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    for header in request.headers.get_all("Sec-WebSocket-Protocol"):
        for offered in header.split(","):
            if offered.strip().startswith(TOKEN_SUBPROTOCOL_PREFIX):
                return offered.strip().removeprefix(TOKEN_SUBPROTOCOL_PREFIX)
    values = parse_qs(urlsplit(request.path).query).get("token")
    return values[0] if values else None


def _select_subprotocol(
    connection: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    """Accept ``ptyvisor`` when offered (browsers must echo one); never echo the token."""
    del connection
    return Subprotocol(SUBPROTOCOL) if SUBPROTOCOL in offered else None


def _is_upgrade(request: Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


def _origin_allowed(config: ServerConfig, origin: str, host: str | None) -> bool:
    if "*" in config.allowed_origins or origin in config.allowed_origins:
        return True
    return host is not None and urlsplit(origin).netloc.lower() == host.lower()


class Connection:
    """One client: a receiver that dispatches requests and a sender draining the outbox."""

    def __init__(self, websocket: ServerConnection, supervisor: Supervisor) -> None:
        self._ws = websocket
        self._supervisor = supervisor
        self.outbox = Outbox(supervisor.config.client_buffer)
        self.answers_queries = False
        self._session: Session | None = None

    async def run(self) -> None:
        hello = Hello(server_version=__version__, agents=list(AGENTS))
        self.outbox.put_text(hello.model_dump_json())
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._send_loop)
                await self._receive_loop()
                tg.cancel_scope.cancel()
        finally:
            self.outbox.close()
            self._supervisor.unwatch(self.outbox)
            self._detach()

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
                        outbox.resynced()
                if outbox.sessions_dirty:
                    outbox.sessions_dirty = False
                    sessions = Sessions(sessions=self._supervisor.summaries())
                    await self._ws.send(sessions.model_dump_json())
                while (item := outbox.pop()) is not None:
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
        except ConnectionClosed:
            pass

    def _error(self, code: ErrorCode, message: str, req_id: str | int | None = None) -> None:
        self.outbox.put_text(Error(req_id=req_id, code=code, message=message).model_dump_json())

    def _binary_input(self, data: bytes) -> None:
        if len(data) > MAX_TEXT_MESSAGE:
            self._error("too_large", f"input message over {MAX_TEXT_MESSAGE} bytes")
        elif self._session is None:
            self._error("not_attached", "binary input needs an attached session")
        elif not self._session.write_input(data):
            self._error("session_exited", "the program has exited or is not reading input")

    async def _text_message(self, text: str) -> None:
        if len(text) > MAX_TEXT_MESSAGE:
            self._error("too_large", f"message over {MAX_TEXT_MESSAGE} bytes")
            return
        try:
            raw = json.loads(text)
        except ValueError as error:
            self._error("bad_json", f"not JSON: {error}")
            return
        req_id = _req_id_of(raw)
        kind = raw.get("type") if isinstance(raw, dict) else None
        if kind not in CLIENT_MESSAGE_TYPES:
            self._error("unknown_type", f"unknown message type: {kind!r}", req_id)
            return
        try:
            request = CLIENT_MESSAGE.validate_python(raw)
        except ValidationError as error:
            self._error("bad_message", _describe(error), req_id)
            return
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
                self._reply(Sessions(req_id=request.req_id, sessions=supervisor.summaries()))
            case WatchSessions():
                supervisor.watch(self.outbox)
                self._ok(request.req_id)
            case UnwatchSessions():
                supervisor.unwatch(self.outbox)
                self._ok(request.req_id)
            case Spawn():
                cwd = os.path.expanduser(request.cwd or os.getcwd())  # noqa: ASYNC240 - no I/O
                try:
                    session = supervisor.spawn(
                        request.argv,
                        cwd=cwd,
                        env=request.env,
                        name=request.name,
                        cols=request.cols,
                        rows=request.rows,
                        agent=request.agent,
                    )
                except SpawnError as error:
                    raise RequestError("spawn_failed", str(error)) from None
                self._reply(Spawned(req_id=request.req_id, session=session.summary()))
            case Attach():
                session = supervisor.get(request.session)
                self._detach()
                self.answers_queries = request.answers_queries
                self._session = session
                await session.attach(self, since=request.since, req_id=request.req_id)
            case Detach():
                self._detach()
                self._ok(request.req_id)
            case Input():
                if not supervisor.get(request.session).write_input(request.data.encode()):
                    raise RequestError("session_exited", "the program has exited or is busy")
                self._ok_if_asked(request.req_id)
            case Resize():
                await supervisor.get(request.session).resize(request.cols, request.rows)
                self._ok_if_asked(request.req_id)
            case SendSignal():
                session = supervisor.get(request.session)
                if session.exited.is_set():
                    raise RequestError("session_exited", "the program has already exited")
                session.send_signal(SIGNALS[request.signal])
                self._ok(request.req_id)
            case Kill():
                await supervisor.get(request.session).terminate()
                self._ok(request.req_id)
            case Close():
                await supervisor.close(request.session)
                self._ok(request.req_id)
            case RequestSnapshot():
                snapshot = await supervisor.get(request.session).snapshot()
                self._reply(
                    SnapshotMessage(req_id=request.req_id, reason="requested", snapshot=snapshot)
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
            case _:
                assert_never(request)

    def _detach(self) -> None:
        if self._session is not None:
            self._session.detach(self)
            self._session = None

    def _reply(self, message: Sessions | Spawned | SnapshotMessage | Stats | Ok) -> None:
        self.outbox.put_text(message.model_dump_json())

    def _ok(self, req_id: str | int | None) -> None:
        self._reply(Ok(req_id=req_id))

    def _ok_if_asked(self, req_id: str | int | None) -> None:
        if req_id is not None:
            self._ok(req_id)


def _req_id_of(raw: Any) -> str | int | None:
    if isinstance(raw, dict):
        value = raw.get("req_id")
        if isinstance(value, str | int) and not isinstance(value, bool):
            return value
    return None


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "message"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def _page_request(config: ServerConfig, page: WebPage, request: Request) -> Response:
    origin = request.headers.get("Origin")
    if origin is not None and not _origin_allowed(config, origin, request.headers.get("Host")):
        return page.refuse_origin()
    offered = _offered_token(request)
    token_ok = None if offered is None else token_matches(config, offered)
    path = urlsplit(request.path).path
    return page.respond(request.method, path, request.headers, token_ok=token_ok)


async def run_server(
    config: ServerConfig,
    *,
    task_status: anyio.abc.TaskStatus[Server] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; every session's programs are stopped on the way out."""
    async with anyio.create_task_group() as tg:
        supervisor = Supervisor(config, tg)

        page = WebPage()

        def process_request(connection: ServerConnection, request: Request) -> Response | None:
            if not _is_upgrade(request) or request.method != "GET":
                return _page_request(config, page, request)
            refusal = check_request(config, request)
            if refusal is None:
                return None
            status, body = refusal
            log.info("refused connection: %s", body.strip())
            return connection.respond(status, body)

        async def handler(websocket: ServerConnection) -> None:
            await Connection(websocket, supervisor).run()

        async with serve(
            handler,
            config.host,
            config.port,
            process_request=process_request,
            select_subprotocol=_select_subprotocol,
            max_size=HARD_MESSAGE_LIMIT,
            compression=None,
            server_header=f"ptyvisor/{__version__}",
        ) as server:
            port = server.sockets[0].getsockname()[1] if server.sockets else config.port
            config.port = port
            host = config.host if ":" not in config.host else f"[{config.host}]"
            config.url = config.url or f"ws://{host}:{port}/"
            control = ControlServer(supervisor.requests, supervisor.find, config.settings)
            path = await tg.start(control.serve, control_path(config.state_dir))
            config.control_path = str(path) if path is not None else ""
            task_status.started(server)
            # Cancellation ends here; each session's task then stops and reaps its
            # program (HUP, then KILL after a grace period) before the group exits.
            await anyio.sleep_forever()
