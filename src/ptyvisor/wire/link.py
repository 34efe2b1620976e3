"""The link between the keeper and the server it runs: typed messages and descriptors.

A ``SOCK_SEQPACKET`` socket pair: each message is one JSON object in one packet, with
descriptors attached (``SCM_RIGHTS``: the receiver gets its own duplicates). A body
too big for one packet travels in a memfd attached as the first descriptor, marked
``"_blob": true``.

Every message is a frozen dataclass below, written and read by both sides: `parse`
checks a received object's ``op`` and every field's type and refuses anything else
with `BadLinkMessage`, which costs the receiver that message, never its loop. The
JSON is version 1's (`VERSION`) exactly as it was before the messages were typed, so
an older keeper still runs a newer server (an upgrade takes effect at a restart).

Keeper → server: `Config` (first), then one `Adopt` per running program (with its PTY
master and ring) and `Adopted` (with the previous server's handover, at a planned
restart); then `Exited`, `Spawned` (with the new program's master and ring) or
`SpawnFailed` answering a `Spawn`, `Stop` (for good), `Restart` (hand over, then
exit) and `Ping` (every second once it serves: the server's event loop answers
`Pong`, and one silent for ten seconds is replaced).

Server → keeper: `Ready` (serving), `Pong`, `Spawn`, `Size` and `IdentityChanged`
(remembered for the next server), `Forget` (closed and reaped), `Handover` (what only
this server knew, for the next one; sent before exiting at a restart).

Stdlib only: the keeper uses it.
"""

import contextlib
import dataclasses
import json
import os
import socket
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from ptyvisor.errors import BadLinkMessage, Truncated

VERSION = 1
MAX_PACKET = 64 * 1024
"""Bodies larger than this travel in a memfd."""
MAX_FDS = 8
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ProgramSpec:
    """What to start, and what the keeper keeps about it for a server started later."""

    session_id: str
    argv: list[str]
    env: dict[str, str]
    """The whole environment, ``PTYVISOR_*`` included (``PTYVISOR_TTY`` is added)."""
    cwd: str
    cols: int
    rows: int
    ring_capacity: int
    identity: dict[str, Any]
    """The session's identity as JSON (identity.Identity): the keeper keeps it for a
    server started later, which adopts the program with it."""


@dataclass(frozen=True, slots=True)
class Config:
    op: ClassVar[str] = "config"
    version: int
    config: dict[str, Any]
    """ServerConfig.to_json(), with ``url``, ``control_path`` and ``verbose``."""


@dataclass(frozen=True, slots=True)
class Adopt:
    """A program the keeper runs already; its PTY master and ring come with it."""

    op: ClassVar[str] = "adopt"
    session: str
    pid: int
    tty: str
    identity: dict[str, Any]
    cols: int
    rows: int
    status: int | None = None
    """Its ``waitpid`` status, if it exited while no server ran."""


@dataclass(frozen=True, slots=True)
class HandedScreen:
    ansi: str
    """The screen as a snapshot draws it."""
    seq: int
    """The output seq it shows."""


@dataclass(frozen=True, slots=True)
class HandedFrames:
    applied: int = 0
    ignored: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SessionHandover:
    """What only the server knew of one session, for the next at a planned restart
    (the output itself is in the ring). The keeper keeps it without reading it."""

    session: str
    tracker: dict[str, Any]
    """`ActivityTracker.export`."""
    screen: HandedScreen | None = None
    queued_message: str | None = None
    frames: HandedFrames = field(default_factory=HandedFrames)


@dataclass(frozen=True, slots=True)
class Adopted:
    """Every program has been sent; ``state``: what the previous server handed over."""

    op: ClassVar[str] = "adopted"
    state: list[SessionHandover] | None = None


@dataclass(frozen=True, slots=True)
class Exited:
    op: ClassVar[str] = "exited"
    session: str
    status: int


@dataclass(frozen=True, slots=True)
class Spawn:
    op: ClassVar[str] = "spawn"
    id: int
    spec: ProgramSpec


@dataclass(frozen=True, slots=True)
class Spawned:
    """The answer to `Spawn` ``id``; the program's PTY master and ring come with it."""

    op: ClassVar[str] = "spawned"
    id: int
    session: str
    pid: int
    tty: str


@dataclass(frozen=True, slots=True)
class SpawnFailed:
    op: ClassVar[str] = "spawn_failed"
    id: int
    reason: str


@dataclass(frozen=True, slots=True)
class Stop:
    op: ClassVar[str] = "stop"


@dataclass(frozen=True, slots=True)
class Restart:
    op: ClassVar[str] = "restart"


@dataclass(frozen=True, slots=True)
class Ping:
    op: ClassVar[str] = "ping"
    n: int


@dataclass(frozen=True, slots=True)
class Pong:
    op: ClassVar[str] = "pong"
    n: int


@dataclass(frozen=True, slots=True)
class Ready:
    op: ClassVar[str] = "ready"


@dataclass(frozen=True, slots=True)
class Size:
    op: ClassVar[str] = "size"
    session: str
    cols: int
    rows: int


@dataclass(frozen=True, slots=True)
class IdentityChanged:
    op: ClassVar[str] = "identity"
    session: str
    identity: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Forget:
    op: ClassVar[str] = "forget"
    session: str


@dataclass(frozen=True, slots=True)
class Handover:
    op: ClassVar[str] = "handover"
    sessions: list[SessionHandover] = field(default_factory=list)


ToServer = Config | Adopt | Adopted | Exited | Spawned | SpawnFailed | Stop | Restart | Ping
ToKeeper = Ready | Pong | Spawn | Size | IdentityChanged | Forget | Handover
Message = ToServer | ToKeeper
MESSAGES: dict[str, type[Message]] = {
    kind.op: kind for kind in typing.get_args(ToServer) + typing.get_args(ToKeeper)
}
WITH_DESCRIPTORS: dict[type[Message], int] = {Adopt: 2, Spawned: 2}
"""Messages that come with descriptors, and how many (master, ring)."""


def to_json(message: Message) -> Json:
    """The message as version 1's JSON object."""
    return {"op": message.op, **dataclasses.asdict(message)}


def parse(data: object) -> Message:
    """A received JSON value as the message it is; raises `BadLinkMessage`."""
    if not isinstance(data, dict):
        raise BadLinkMessage("a link message is a JSON object")
    kind = MESSAGES.get(data.get("op"))  # type: ignore[arg-type]
    if kind is None:
        raise BadLinkMessage(f"unknown op {str(data.get('op'))[:40]!r}")
    message: Message = _build(kind, data)
    return message


def parse_handover(data: object) -> SessionHandover:
    """One session's handover as JSON (kept by a keeper across an upgrade); raises
    `BadLinkMessage`."""
    if not isinstance(data, dict):
        raise BadLinkMessage("a handover is a JSON object")
    handover: SessionHandover = _build(SessionHandover, data)
    return handover


def _build(kind: type[Any], data: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(kind)
    values = {}
    for spec in dataclasses.fields(kind):
        if spec.name in data:
            values[spec.name] = _checked(
                f"{kind.__name__}.{spec.name}", hints[spec.name], data[spec.name]
            )
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise BadLinkMessage(f"{kind.__name__} needs {spec.name!r}")
    return kind(**values)


def _checked(where: str, hint: Any, value: Any) -> Any:
    """``value`` if it is of type ``hint`` (the few kinds these messages use)."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in typing.get_args(hint):
            try:
                return _checked(where, option, value)
            except BadLinkMessage:
                pass
        raise BadLinkMessage(f"{where} is of the wrong type")
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise BadLinkMessage(f"{where} is an object")
        return _build(hint, value)
    if origin is list:
        if not isinstance(value, list):
            raise BadLinkMessage(f"{where} is a list")
        (item,) = typing.get_args(hint)
        return [_checked(where, item, element) for element in value]
    if origin is dict:
        if not isinstance(value, dict):
            raise BadLinkMessage(f"{where} is an object")
        _keys, item = typing.get_args(hint)
        return {str(key): _checked(where, item, element) for key, element in value.items()}
    if hint is Any:
        return value
    if hint is type(None):
        if value is not None:
            raise BadLinkMessage(f"{where} is null")
        return None
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise BadLinkMessage(f"{where} is an integer")
    if not isinstance(value, hint):
        raise BadLinkMessage(f"{where} is of the wrong type")
    return value


# ---------------------------------------------------------------------- transport


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def encode(message: Message, fds: Sequence[int] = ()) -> tuple[bytes, list[int], int | None]:
    """The packet and descriptors for ``message``; the third item is a memfd this
    call created for a big body (the caller closes it once sent)."""
    body = json.dumps(to_json(message), separators=(",", ":")).encode()
    if len(body) <= MAX_PACKET:
        return body, list(fds), None
    blob = os.memfd_create("ptyvisor-handoff", os.MFD_CLOEXEC)
    os.write(blob, body)
    return json.dumps({"_blob": True}).encode(), [blob, *fds], blob


def send(sock: socket.socket, message: Message, fds: Sequence[int] = ()) -> None:
    """Blocking send (the keeper's side)."""
    packet, attached, blob = encode(message, fds)
    try:
        socket.send_fds(sock, [packet], attached)
    finally:
        if blob is not None:
            os.close(blob)


def receive(sock: socket.socket) -> tuple[Message, list[int]] | None:
    """One message and its descriptors (blocking, or raising BlockingIOError on a
    non-blocking socket); None when the other side is gone. Raises `Truncated` when
    its descriptors could not all be received, and `BadLinkMessage` for a packet that
    is not a message of this link (its descriptors closed)."""
    packet, fds, flags, _address = socket.recv_fds(sock, MAX_PACKET + 1024, MAX_FDS)
    if not packet:
        _close(fds)
        return None
    if flags & socket.MSG_CTRUNC:
        _close(fds)
        try:
            lost: Message | None = parse(json.loads(packet))
        except ValueError:  # not a message, or a big one whose body is lost too
            lost = None
        raise Truncated(lost)
    try:
        message = _decode(packet, fds)
    except (ValueError, OSError) as error:
        _close(fds)
        raise BadLinkMessage(str(error)) from None
    wanted = WITH_DESCRIPTORS.get(type(message), 0)
    if len(fds) != wanted:
        _close(fds)
        raise BadLinkMessage(
            f"{message.op} came with {len(fds)} descriptors, not {wanted}", message
        )
    return message, fds


def _decode(packet: bytes, fds: list[int]) -> Message:
    """Parse a packet; a memfd body is read and closed (and taken out of ``fds``)."""
    for fd in fds:
        os.set_inheritable(fd, False)  # SCM_RIGHTS hands them over inheritable
    data = json.loads(packet)
    if isinstance(data, dict) and data.get("_blob"):
        if not fds:
            raise BadLinkMessage("a big message came without its body")
        blob = fds.pop(0)
        try:
            data = json.loads(os.pread(blob, os.fstat(blob).st_size, 0))
        finally:
            os.close(blob)
    return parse(data)


def _close(fds: Sequence[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
