"""The control socket: agent hooks that hold a decision wait here for a client's answer.

A Unix socket ``<state_dir>/control/ptyvisor.sock`` in a 0700 directory; its path
reaches every child as ``PTYVISOR_CONTROL``. Line-delimited JSON, each line at most
1 MiB. A hook sends one line::

    {"op": "request", "session": id, "nonce": nonce, "interaction": {...},
     "agent_id": id?}

(the same normalised, masked interaction its frame carries; ``agent_id`` names the
subagent that asked, as its frame does) and holds the connection open. An unknown
session, a wrong nonce or a malformed line is refused without detail: the connection
is closed. The request then waits, in memory only (never persisted or logged), bound
to its connection, until

- a client answers it: the server writes one line
  ``{"op": "decision", "behavior", "message", "suggestion", "answers"}`` and forgets it;
- the hook's connection closes (the user answered in the terminal and the agent
  killed the hook): withdrawn;
- the session's process exits or the session is closed: withdrawn, connection closed;
- a newer request for the same interaction id arrives: the older one is withdrawn;
- the session applies a frame that ends it (`withdraw_for`, as activity.frame_ends
  says): an
  ``interaction_cleared`` naming its id (the tool call finished: PostToolUse), the
  session's end (``stopped``); for the main thread's requests, a prompt submitted (an
  ``interaction_cleared`` without an id) or the main turn's end (``waiting``,
  ``failed``: Stop, StopFailure); for a subagent's, a ``subagent_stopped`` naming it
  (its own stop: other subagents' and the main thread's requests stay, and the main
  turn's end does not touch it — Claude Code runs subagents in the background, so
  they outlive it). Only requests created at or before the frame's ``at`` are
  withdrawn, so a late event never withdraws a newer request.

Whether a request is held for a session's pending interaction is what makes it
``answerable`` to clients; every change is reported through ``on_change``.

Codex (``interaction.agent == "codex"``) hides its own prompt while its hook waits
and gives the hook ~30 s: its requests are refused at once unless the persisted
setting ``codex_remote_answers`` is on, and then held at most
``codex_answer_wait_seconds``, then withdrawn (Codex shows its own prompt). Qwen
Code likewise shows its prompt only after the hook, so the same holds for it with
``qwen_code_remote_answers`` and ``qwen_code_answer_wait_seconds``
(``Settings.answer_hold``).

Only one decision per request: it leaves the registry the moment it is answered, so
a second answer finds nothing (``gone``).

A Stop hook takes the session's queued message instead (see ``Session.queue_message``)::

    {"op": "take_message", "session": id, "nonce": nonce}

and gets ``{"op": "message", "text": str | null}``. Having handed a message to the
agent it writes ``{"op": "delivered"}``; if the connection closes first (or within
``DELIVERY_TIMEOUT_SECONDS`` nothing comes), the message is put back unless a newer
one, a deletion, a new prompt or the session's end superseded it meanwhile.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import math
import os
import socket
import struct
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import anyio
import anyio.abc
from pydantic import ValidationError

from ptyvisor.agents.activity import Which
from ptyvisor.agents.interaction import MAX_TEXT, Interaction
from ptyvisor.config import Settings
from ptyvisor.errors import BadAnswer, BadControlMessage, BadJSON, Gone
from ptyvisor.keeper.descriptors import accept_forever
from ptyvisor.wire import control as wire
from ptyvisor.wire import jsontext
from ptyvisor.wire.control import MAX_LINE, Decision

log = logging.getLogger(__name__)

MAX_BUFFERED = 32 * 1024 * 1024
"""Bytes all control connections together may buffer; past it, a connection is refused."""
MAX_CONNECTIONS = 1024
"""Control connections served at once (a held request keeps one open); more are closed."""
READ_BYTES = 64 * 1024
BACKLOG = 128
REQUEST_TIMEOUT_SECONDS = 10.0
"""How long a fresh connection has to send its request line."""
DELIVERY_TIMEOUT_SECONDS = 5.0
"""How long an answer waits for the decision to be written to the hook."""
ENDED_MEMORY = 1024
"""How many ended requests are remembered, to tell "over" from "never held"."""

Behavior = Literal["allow", "deny"]
Answers = Mapping[str, list[str] | str]


class ControlSession(Protocol):
    """A session, as the control socket sees it."""

    exited: anyio.Event

    def nonce_matches(self, nonce: str) -> bool: ...

    def take_message(self) -> tuple[str, int] | None: ...

    def put_back_message(self, text: str, generation: int) -> None: ...

    def holds_process(self, pid: int) -> bool: ...


@dataclass(eq=False)
class PendingRequest:
    """One held hook connection, waiting for a decision."""

    session: str
    interaction: Interaction
    agent_id: str | None = None
    """The subagent that asked (None: the main thread); its own stop withdraws it."""
    decision: Decision | None = None
    decided: anyio.Event = field(default_factory=anyio.Event)
    delivered: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)
    """Set when the request is over: decision written (or not), or withdrawn."""


def check_answer(
    interaction: Interaction,
    *,
    behavior: Behavior | None,
    message: str | None,
    suggestion: int | None,
    answers: Answers | None,
) -> Decision:
    """The decision a client's answer stands for; raises BadAnswer if it does not fit."""
    if message is not None and len(message) > MAX_TEXT:
        raise BadAnswer(f"message is longer than {MAX_TEXT} characters")
    if message is not None and behavior != "deny":
        raise BadAnswer("a message goes only with behavior 'deny'")
    if suggestion is not None:
        if behavior != "allow":
            raise BadAnswer("a suggestion goes only with behavior 'allow'")
        count = len(interaction.suggestions)
        if not 0 <= suggestion < count:
            raise BadAnswer(
                f"suggestion {suggestion} is out of range: this interaction has {count}"
            )
    if interaction.kind == "approval":
        if behavior is None:
            raise BadAnswer("an approval needs behavior 'allow' or 'deny'")
        if answers is not None:
            raise BadAnswer("an approval has no questions to answer")
        return Decision(behavior, message, suggestion)
    if behavior == "deny":
        if answers is not None:
            raise BadAnswer("a denied question carries no answers")
        return Decision("deny", message)
    if not answers:
        raise BadAnswer("answers are needed to answer a question (or behavior 'deny')")
    return Decision("allow", answers=_check_answers(interaction, answers))


def _check_answers(interaction: Interaction, answers: Answers) -> dict[str, list[str] | str]:
    questions = {question.id: question for question in interaction.questions}
    for question_id in answers:
        if question_id not in questions:
            raise BadAnswer(f"no question {question_id!r} in this interaction")
    checked: dict[str, list[str] | str] = {}
    for question in interaction.questions:
        answer = answers.get(question.id)
        if answer is None:
            raise BadAnswer(f"question {question.id!r} is not answered")
        if isinstance(answer, str):
            if not interaction.accepts_free_form:
                raise BadAnswer(f"question {question.id!r} does not accept free text")
            if not answer.strip():
                raise BadAnswer(f"the text for question {question.id!r} is blank")
            if len(answer) > MAX_TEXT:
                raise BadAnswer(
                    f"the text for question {question.id!r} is longer than {MAX_TEXT} characters"
                )
            checked[question.id] = answer
            continue
        labels = [option.label for option in question.options]
        if not answer:
            raise BadAnswer(f"no option chosen for question {question.id!r}")
        if len(answer) > 1 and not question.multi_select:
            raise BadAnswer(f"question {question.id!r} takes a single option")
        if len(set(answer)) != len(answer):
            raise BadAnswer(f"an option is chosen twice for question {question.id!r}")
        for label in answer:
            if label not in labels:
                raise BadAnswer(f"{label!r} is not an option of question {question.id!r}")
        checked[question.id] = list(answer)
    return checked


class PendingRequests:
    """Every waiting request, by (session, interaction id). In memory only.

    ``on_change(session)`` is called whenever the set held for that session changes,
    so that clients learn whether its pending interaction can be answered.
    """

    def __init__(self, on_change: Callable[[str], None] | None = None) -> None:
        self._waiting: dict[tuple[str, str], PendingRequest] = {}
        self._ended: OrderedDict[tuple[str, str], int] = OrderedDict()
        """(session, interaction id) -> created_at of the last request that ended."""
        self._on_change = on_change

    def add(self, request: PendingRequest) -> None:
        """Register; a request already waiting under the same id is withdrawn."""
        key = (request.session, request.interaction.id)
        older = self._waiting.get(key)
        if older is not None:
            self._forget(key, older)
            older.done.set()
        self._waiting[key] = request
        self._changed(request.session)

    def remove(self, request: PendingRequest) -> None:
        """Out of the registry (answered, or its hook left); nothing more is done to it."""
        key = (request.session, request.interaction.id)
        if self._waiting.get(key) is request:
            self._forget(key, request)
            self._changed(request.session)

    def _forget(self, key: tuple[str, str], request: PendingRequest) -> None:
        del self._waiting[key]
        self._ended[key] = request.interaction.created_at
        self._ended.move_to_end(key)
        while len(self._ended) > ENDED_MEMORY:
            self._ended.popitem(last=False)

    def holds(self, session: str, interaction_id: str) -> bool:
        """Whether a hook waits for an answer to ``interaction_id``."""
        return (session, interaction_id) in self._waiting

    def _changed(self, session: str) -> None:
        if self._on_change is not None:
            self._on_change(session)

    def get(
        self, session: str, interaction_id: str, *, pending: Interaction | None = None
    ) -> PendingRequest:
        """The waiting request; raises Gone. ``pending`` (the session's pending
        interaction) tells a request no hook ever held (``terminal_only``) from one
        that is over."""
        key = (session, interaction_id)
        request = self._waiting.get(key)
        if request is None:
            terminal_only = (
                pending is not None
                and pending.id == interaction_id
                and self._ended.get(key) != pending.created_at
            )
            raise Gone(interaction_id, terminal_only=terminal_only)
        return request

    def __len__(self) -> int:
        return len(self._waiting)

    def withdraw_for(self, session: str, before: int, which: Which) -> bool:
        """Withdraw what a frame of ``session`` ends (activity.frame_ends says which);
        returns whether anything was."""
        match which:
            case "all":
                return self.withdraw(session, before=before)
            case "main":
                return self.withdraw(session, before=before, which=_main_thread)
            case ("interaction", ident):
                return self.withdraw(
                    session, before=before, which=lambda r: r.interaction.id == ident
                )
            case ("subagent", agent_id):
                return self.withdraw(session, before=before, which=lambda r: r.agent_id == agent_id)
        return False

    def withdraw(
        self,
        session: str,
        *,
        before: int,
        which: Callable[[PendingRequest], bool] = lambda request: True,
    ) -> bool:
        """Withdraw ``session``'s requests created at or before ``before`` (only those
        ``which`` picks); their hook connections close. Returns whether any were."""
        withdrawn = False
        for key, request in list(self._waiting.items()):
            if key[0] != session or request.interaction.created_at > before:
                continue
            if not which(request):
                continue
            self._forget(key, request)
            request.done.set()
            withdrawn = True
        if withdrawn:
            self._changed(session)
        return withdrawn

    async def answer(
        self,
        session: str,
        interaction_id: str,
        *,
        behavior: Behavior | None,
        message: str | None,
        suggestion: int | None,
        answers: Answers | None,
        pending: Interaction | None = None,
    ) -> None:
        """Deliver a client's answer; raises Gone or BadAnswer.

        A bad answer leaves the request waiting; a fitting one takes it out of the
        registry at once (so a second answer is ``Gone``) and returns once the
        decision line is written to the hook — ``Gone`` if the hook went away first.
        ``pending``: the session's pending interaction (see `get`).
        """
        request = self.get(session, interaction_id, pending=pending)
        decision = check_answer(
            request.interaction,
            behavior=behavior,
            message=message,
            suggestion=suggestion,
            answers=answers,
        )
        self.remove(request)
        request.decision = decision
        request.decided.set()
        with anyio.move_on_after(DELIVERY_TIMEOUT_SECONDS):
            await request.done.wait()
        if not request.delivered:
            raise Gone(interaction_id)


def _main_thread(request: PendingRequest) -> bool:
    return request.agent_id is None


def _any(request: PendingRequest) -> bool:
    del request
    return True


class _Budget:
    """Bytes buffered by every control connection together, capped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, count: int) -> bool:
        if self.used + count > self.limit:
            return False
        self.used += count
        return True

    def give(self, count: int) -> None:
        self.used -= count


class _LineReader:
    """Newline-terminated lines from one connection; what it buffers counts against
    the server-wide `_Budget` until the connection ends (`release`)."""

    def __init__(self, stream: anyio.abc.SocketStream, budget: _Budget) -> None:
        self._stream = stream
        self._budget = budget
        self._buffer = bytearray()
        self._taken = 0

    async def line(self, limit: int) -> bytes | None:
        """The next line (newline excluded); None at the end of the stream, for a
        line over ``limit``, or once the budget is spent."""
        while True:
            index = self._buffer.find(b"\n")
            if index >= 0:
                line = bytes(self._buffer[:index])
                del self._buffer[: index + 1]
                return line if len(line) <= limit else None
            if len(self._buffer) > limit:
                return None
            try:
                chunk = await self._stream.receive(READ_BYTES)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return None
            if not self._budget.take(len(chunk)):
                log.warning("control socket: connections buffer too much; refusing one")
                return None
            self._taken += len(chunk)
            self._buffer += chunk

    async def until_closed(self) -> None:
        """Discard anything more the peer sends until it closes the connection."""
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            while await self._stream.receive(READ_BYTES):
                pass

    def release(self) -> None:
        self._budget.give(self._taken)
        self._taken = 0
        self._buffer.clear()


def peer_credentials(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process that connected (``SO_PEERCRED``)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return pid, uid


class ControlServer:
    """Serves the control socket for the sessions ``lookup`` finds.

    Every connection is untrusted input: a bad line, a stranger, too many
    connections or too much buffered data end that connection, never the server,
    and a bug in handling one is logged and ends that one only. Only processes of
    the server's own user may connect (``SO_PEERCRED``), and a request must come
    from inside the session it names (its process session, where that can be
    checked). Neither stops a hostile process of the same user, which can read the
    nonce from ``/proc/<pid>/environ``; see docs/security.md.
    """

    def __init__(
        self,
        requests: PendingRequests,
        lookup: Callable[[str], ControlSession | None],
        settings: Settings | None = None,
        *,
        max_connections: int = MAX_CONNECTIONS,
        max_buffered: int = MAX_BUFFERED,
    ) -> None:
        self.requests = requests
        self._lookup = lookup
        self.settings = settings or Settings()
        self._max_connections = max_connections
        self._budget = _Budget(max_buffered)
        self.connections = 0
        self._failures_logged = False

    async def serve(self, listener: socket.socket) -> None:
        """Accept on ``listener`` (bound by the caller: see descriptors.bind_private_unix)
        until cancelled."""
        listener.setblocking(False)
        async with anyio.create_task_group() as tg:

            def handle(connection: socket.socket) -> None:
                tg.start_soon(self._handle, connection)

            await accept_forever(listener, handle, what="control socket")

    async def _handle(self, connection: socket.socket) -> None:
        if self.connections >= self._max_connections:
            connection.close()
            return
        self.connections += 1
        try:
            try:
                pid, uid = peer_credentials(connection)
            except OSError:
                connection.close()
                return
            if uid != os.getuid():
                connection.close()
                return
            stream = await anyio.abc.UNIXSocketStream.from_socket(connection)
            reader = _LineReader(stream, self._budget)
            async with stream:
                with contextlib.suppress(
                    anyio.BrokenResourceError, anyio.ClosedResourceError, OSError
                ):
                    await self._converse(stream, reader, pid)
        except Exception:
            # A bug: this connection ends (the hook fails open); the server goes on.
            if not self._failures_logged:
                self._failures_logged = True
                log.exception("control socket: handling a connection failed")
        finally:
            self.connections -= 1

    async def _converse(
        self, stream: anyio.abc.SocketStream, reader: _LineReader, peer_pid: int
    ) -> None:
        try:
            line: bytes | None = None
            with anyio.move_on_after(REQUEST_TIMEOUT_SECONDS):
                line = await reader.line(MAX_LINE)
            authenticated = self._authenticate(line, peer_pid)
            if authenticated is None:
                return  # refused without detail
            session, request = authenticated
            if request is None:
                await self._hand_over_message(stream, reader, session)
                return
            allowed, hold = self.settings.answer_hold(request.interaction.agent)
            if not allowed:
                return  # refused: the agent shows its own prompt at once
            self.requests.add(request)
            try:
                with anyio.move_on_after(hold if hold is not None else math.inf) as waited:
                    await self._hold(stream, reader, session, request)
                if waited.cancelled_caught:
                    log.debug("%s request withdrawn after %s s", request.interaction.agent, hold)
            finally:
                self.requests.remove(request)
                request.done.set()
        finally:
            reader.release()

    async def _hold(
        self,
        stream: anyio.abc.SocketStream,
        reader: _LineReader,
        session: ControlSession,
        request: PendingRequest,
    ) -> None:
        async with anyio.create_task_group() as tg:

            async def until_hook_leaves() -> None:
                await reader.until_closed()  # nothing more is expected from the hook
                tg.cancel_scope.cancel()

            async def until_ended(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(until_hook_leaves)
            tg.start_soon(until_ended, session.exited)
            tg.start_soon(until_ended, request.done)
            await request.decided.wait()
            if request.decision is not None:
                await stream.send(request.decision.line())
                request.delivered = True
            tg.cancel_scope.cancel()

    async def _hand_over_message(
        self,
        stream: anyio.abc.SocketStream,
        reader: _LineReader,
        session: ControlSession,
    ) -> None:
        """A Stop hook takes the queued message; put back unless it acknowledges."""
        taken = session.take_message()
        delivered = False
        try:
            await stream.send(wire.QueuedMessage(taken[0] if taken else None).line())
            if taken is None:
                return
            with anyio.move_on_after(DELIVERY_TIMEOUT_SECONDS):
                ack = await reader.line(1024)
                with contextlib.suppress(BadJSON, BadControlMessage):
                    delivered = ack is not None and bool(
                        wire.read(jsontext.loads(ack), wire.Delivered)
                    )
        finally:
            if taken is not None and not delivered:
                session.put_back_message(*taken)

    def _authenticate(
        self, line: bytes | None, peer_pid: int = 0
    ) -> tuple[ControlSession, PendingRequest | None] | None:
        """The session and, for a `wire.Request`, the request; None to refuse.
        `wire.TakeMessage` has no request."""
        if line is None:
            return None
        try:
            message = wire.read(jsontext.loads(line), wire.Request, wire.TakeMessage)
        except (BadJSON, BadControlMessage):
            return None
        session = self._lookup(message.session)
        if session is None or not session.nonce_matches(message.nonce) or session.exited.is_set():
            return None
        if peer_pid > 0 and not session.holds_process(peer_pid):
            return None
        if isinstance(message, wire.TakeMessage):
            return session, None
        try:
            interaction = Interaction.model_validate(message.interaction)
        except ValidationError:
            return None
        request = PendingRequest(
            session=message.session, interaction=interaction, agent_id=message.agent_id
        )
        return session, request


def _prepare_directory(path: Path) -> None:
    """A 0700 directory for the socket, and no stale socket from an earlier server."""
    path.parent.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.parent.mkdir(exist_ok=True, mode=0o700)
    path.parent.chmod(0o700)
    _remove(path)


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def nonce_matches(expected: str, offered: str) -> bool:
    """Constant-time nonce comparison; any text is an answer, never an error."""
    return hmac.compare_digest(expected.encode(), offered.encode("utf-8", "surrogatepass"))
