"""One WebSocket client: read and validate its messages, hand them to the dispatcher,
send what its outbox holds, and turn a refusal into a typed error.

Everything a client sends is untrusted, and nothing it sends ends more than its own
connection: bad JSON, an unknown type or a message that does not validate gets an
``error`` and the connection carries on; a refusal raised by a handler becomes its wire
error at one place (`Connection._carry_out`, with dispatch.wire_error); only a bug
closes the connection, with 1011, logged once.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
from pydantic import ValidationError
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from ptyvisor import __version__
from ptyvisor.agents.launch import AGENTS
from ptyvisor.errors import BadJSON, PtyvisorError
from ptyvisor.server.dispatch import Dispatcher, wire_error
from ptyvisor.server.outbox import Outbox, Tracked
from ptyvisor.server.session import Session
from ptyvisor.server.supervisor import Supervisor
from ptyvisor.wire import jsontext
from ptyvisor.wire.protocol import (
    CLIENT_MESSAGE,
    CLIENT_MESSAGE_TYPES,
    MAX_TEXT_MESSAGE,
    REQUEST_ID,
    Answer,
    ClientMessage,
    Close,
    Error,
    ErrorCode,
    Hello,
    Kill,
    Prompt,
    Sessions,
)

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_SECONDS = 5.0
STARTED_AT = time.time_ns() // 1_000_000
"""When this server process started (``hello.started_at``)."""
NOT_READING = "not reading: too many messages queued for this client"
SLOW_REQUESTS = (Kill, Close, Answer, Prompt)
"""Requests that wait (for a program to stop, a hook to take its answer, an agent to
take a prompt)."""
SLOW_REQUESTS_AT_ONCE = 256
"""Slow requests one connection may have under way; more wait (and stop reading)."""


class Connection:
    """One client: a receiver that dispatches requests and a sender draining the outbox."""

    def __init__(self, websocket: ServerConnection, supervisor: Supervisor) -> None:
        self._ws = websocket
        self._supervisor = supervisor
        self.outbox = Outbox(
            supervisor.config.client_buffer, text_limit=supervisor.config.reply_buffer
        )
        self.answers_queries = False
        self.session: Session | None = None
        """The session this client is attached to."""
        self._dispatch = Dispatcher(supervisor, self)
        self._tasks: anyio.abc.TaskGroup | None = None
        self._slow = anyio.Semaphore(SLOW_REQUESTS_AT_ONCE)

    async def run(self) -> None:
        """Serve the client until it leaves. A bug in handling it (anything but a
        closed connection) is logged once and ends this connection only (1011)."""
        hello = Hello(
            server_version=__version__,
            agents=list(AGENTS),
            started_at=STARTED_AT,
            scrollback=self._supervisor.config.scrollback,
        )
        self.outbox.put_text(hello.model_dump_json())
        try:
            async with anyio.create_task_group() as tg:
                self._tasks = tg
                tg.start_soon(self._send_loop)
                tg.start_soon(self._close_when_overflowing)
                await self._receive_loop()
                tg.cancel_scope.cancel()
        except Exception:
            log.exception("connection from %s failed; closing it", peer(self._ws))
            with anyio.move_on_after(CLOSE_TIMEOUT_SECONDS, shield=True):
                await self._ws.close(CloseCode.INTERNAL_ERROR, "internal error")
        finally:
            self.outbox.close()
            self._supervisor.unwatch(self.outbox)
            self.detach()

    def detach(self) -> None:
        """Leave the attached session, if any."""
        if self.session is not None:
            self.session.clients.detach(self)
            self.session = None

    # ------------------------------------------------------------------ sending

    async def _close_when_overflowing(self) -> None:
        """A client that reads nothing while events pile up is closed, with a reason
        (its sender is stuck in a send meanwhile, so this cannot wait for it)."""
        await self.outbox.overflow.wait()
        log.warning("client %s is not reading its messages; closing it", peer(self._ws))
        await self._ws.close(CloseCode.POLICY_VIOLATION, NOT_READING)

    async def _send_loop(self) -> None:
        outbox = self.outbox
        try:
            while True:
                await outbox.wait()
                if outbox.closed:
                    return
                if outbox.lagging:
                    if self.session is not None:
                        await self.session.clients.resync(self)
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

    def _error(self, code: ErrorCode, message: str, req_id: str | int | None = None) -> None:
        self.outbox.put_text(Error(req_id=req_id, code=code, message=message).model_dump_json())

    # ------------------------------------------------------------------ receiving

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

    def _binary_input(self, data: bytes) -> None:
        if len(data) > MAX_TEXT_MESSAGE:
            self._error("too_large", f"input message over {MAX_TEXT_MESSAGE} bytes")
        elif self.session is None:
            self._error("not_attached", "binary input needs an attached session")
        elif self.session.clients.is_viewer(self):
            self._error("view_only", "attached to watch only: input is not sent")
        else:
            self.session.clients.typed_by(self)
            if not self.session.write_input(data):
                self._error("session_exited", "the program has exited or is not reading input")

    async def _text_message(self, text: str) -> None:
        if len(text) > MAX_TEXT_MESSAGE:
            self._error("too_large", f"message over {MAX_TEXT_MESSAGE} bytes")
            return
        try:
            raw = jsontext.loads(text)
        except BadJSON as error:
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
        """Carry out one request: its reply, or the wire error its refusal is. Any
        other exception is a bug, and ends this connection (see `run`)."""
        try:
            reply = await self._dispatch(request)
        except PtyvisorError as refused:
            error = wire_error(refused)
            if error is None:
                raise
            self._error(*error, req_id)
            return
        if reply is not None:
            self.outbox.put_text(reply.model_dump_json())


def peer(websocket: ServerConnection) -> str:
    """The client's address, for a log line."""
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
