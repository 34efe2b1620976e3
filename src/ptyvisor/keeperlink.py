"""The server's side of the keeper (keeper.py): the programs are the keeper's.

`KeeperLink.connect` reads, at start, the config and every program the keeper already
runs (with the state the previous server handed over at a planned restart). Then
`KeeperOwner` starts programs through the keeper, and `KeeperLink.run` follows the
keeper: exits it reaped, and ``stop`` or ``restart``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ptyvisor import handoff
from ptyvisor.child import Child
from ptyvisor.config import ServerConfig
from ptyvisor.owner import ProgramSpec
from ptyvisor.ring import Ring, RingError
from ptyvisor.spawn import SpawnError

log = logging.getLogger(__name__)


class KeeperGone(Exception):
    """The keeper is gone: without it nothing can be started or reaped."""


@dataclass
class Adopted:
    """A program the keeper ran before this server started."""

    session: str
    child: Child
    ring: Ring | None
    identity: dict[str, Any]
    cols: int
    rows: int


class KeeperLink:
    def __init__(
        self,
        sock: socket.socket,
        tcp: socket.socket,
        control: socket.socket | None,
        config: ServerConfig,
        verbose: bool,
    ) -> None:
        self._sock = sock
        self.tcp = tcp
        self.control = control
        self.config = config
        self.verbose = verbose
        self.adopted: list[Adopted] = []
        self.handed_over: dict[str, dict[str, Any]] = {}
        """Per session: what the previous server handed over at a planned restart."""
        self._children: dict[str, Child] = {}
        self._started_rings: dict[str, Ring | None] = {}
        self._waiting: dict[int, MemoryObjectSendStream[tuple[handoff.Message, list[int]]]] = {}
        self._ids = 0
        self._send_lock: anyio.Lock | None = None
        self._logged: set[str] = set()
        """Kinds of dropped message logged already (once each)."""

    @classmethod
    def connect(cls, link_fd: int, tcp_fd: int, control_fd: int) -> KeeperLink:
        """Read the config and the adopted programs (blocking: before serving)."""
        sock = socket.socket(fileno=link_fd)
        tcp = socket.socket(fileno=tcp_fd)
        control = socket.socket(fileno=control_fd) if control_fd >= 0 else None
        message, _ = _expect(sock, "config")
        if message.get("version") != handoff.VERSION:
            raise KeeperGone(f"the keeper speaks link version {message.get('version')}")
        settings = dict(message["config"])
        url, control_path = settings.pop("url"), settings.pop("control_path")
        verbose = bool(settings.pop("verbose", False))
        config = ServerConfig.from_json(settings)
        config.url, config.control_path = url, control_path
        link = cls(sock, tcp, control, config, verbose)
        while True:
            message, fds = _expect(sock, "adopt", "adopted")
            if message["op"] == "adopted":
                for state in message.get("state") or ():
                    link.handed_over[state["session"]] = state
                break
            link.adopted.append(link._adopt(message, fds))
        sock.setblocking(False)
        return link

    def _adopt(self, message: handoff.Message, fds: Sequence[int]) -> Adopted:
        master, ring_fd = fds
        os.set_blocking(master, False)
        child = Child(int(message["pid"]), master, str(message["tty"]))
        if message.get("status") is not None:
            child.exit.reaped(int(message["status"]))
        self._children[str(message["session"])] = child
        return Adopted(
            session=str(message["session"]),
            child=child,
            ring=_map_ring(ring_fd),
            identity=message["identity"],
            cols=int(message["cols"]),
            rows=int(message["rows"]),
        )

    # ------------------------------------------------------------------ sending

    async def send(self, message: handoff.Message, fds: Sequence[int] = ()) -> None:
        if self._send_lock is None:
            self._send_lock = anyio.Lock()
        packet, attached, blob = handoff.encode(message, fds)
        try:
            async with self._send_lock:
                while True:
                    try:
                        socket.send_fds(self._sock, [packet], attached)
                        return
                    except BlockingIOError:
                        await anyio.wait_writable(self._sock)
                    except OSError as error:
                        raise KeeperGone(str(error)) from None
        finally:
            if blob is not None:
                os.close(blob)

    def send_now(self, message: handoff.Message) -> None:
        """A small message, sent at once (the keeper reads promptly); a failure is
        logged: the keeper's view of a size or a forgotten session is not vital."""
        packet, fds, blob = handoff.encode(message)
        try:
            socket.send_fds(self._sock, [packet], fds)
        except OSError as error:
            log.warning("cannot tell the keeper (%s): %s", message.get("op"), error)
        finally:
            if blob is not None:
                os.close(blob)

    async def request(self, message: handoff.Message) -> tuple[handoff.Message, list[int]]:
        """Send ``message`` with a fresh ``id``; its answer (and descriptors)."""
        self._ids += 1
        request = self._ids
        send, receive = anyio.create_memory_object_stream[tuple[handoff.Message, list[int]]](1)
        self._waiting[request] = send
        try:
            await self.send({**message, "id": request})
            with receive:
                try:
                    return await receive.receive()
                except anyio.EndOfStream:
                    raise KeeperGone("the keeper went away") from None
        finally:
            self._waiting.pop(request, None)
            send.close()

    # ------------------------------------------------------------------ receiving

    async def run(
        self,
        *,
        on_stop: Callable[[], None],
        on_restart: Callable[[], Awaitable[None]],
    ) -> None:
        """Follow the keeper until it is gone (then raise KeeperGone). A message that
        cannot be handled (malformed, or its descriptors lost for want of room) costs
        that message, logged once per kind: the request waiting for it, if any, gets a
        failure; never this loop, which every later spawn and the stop depend on."""
        while True:
            await anyio.wait_readable(self._sock)
            while True:
                try:
                    received = handoff.receive(self._sock)
                except BlockingIOError:
                    break
                except handoff.Truncated as truncated:
                    self._lost(truncated.message, "the server ran out of file descriptors")
                    continue
                except ValueError as malformed:
                    self._unhandled("a malformed message", malformed)
                    continue
                except OSError:
                    received = None
                if received is None:
                    for waiter in self._waiting.values():
                        waiter.close()
                    raise KeeperGone("the keeper closed the link")
                message, fds = received
                try:
                    await self._handle(message, fds, on_stop=on_stop, on_restart=on_restart)
                except (KeyError, TypeError, ValueError) as malformed:
                    for fd in fds:
                        with contextlib.suppress(OSError):
                            os.close(fd)
                    self._lost(message, f"the keeper's answer was malformed: {malformed}")

    async def _handle(
        self,
        message: handoff.Message,
        fds: list[int],
        *,
        on_stop: Callable[[], None],
        on_restart: Callable[[], Awaitable[None]],
    ) -> None:
        op = message.get("op")
        if op == "exited":
            child = self._children.get(str(message["session"]))
            if child is not None:
                child.exit.reaped(int(message["status"]))
        elif op in ("spawned", "spawn_failed"):
            if op == "spawned":
                # Known at once: its exit may be the very next message.
                self._started(message, fds)
                fds = []
            pending = self._waiting.get(int(message["id"]))
            if pending is not None:
                pending.send_nowait((message, fds))
                return
        elif op == "ping":
            # Answered from the event loop: a stopped or stuck loop does not answer,
            # and the keeper replaces this process (keeper.UNANSWERED_SECONDS).
            self.send_now({"op": "pong", "n": message.get("n")})
        elif op == "stop":
            on_stop()
        elif op == "restart":
            await on_restart()
        for fd in fds:
            os.close(fd)

    def _lost(self, message: handoff.Message, why: str) -> None:
        """``message`` could not be taken: a spawn it answered fails (its program,
        which no server can read, is stopped by the keeper); anything else is logged."""
        self._unhandled(f"a {message.get('op', 'malformed')!r} message", why)
        if message.get("op") == "spawned" and isinstance(message.get("session"), str):
            self.send_now({"op": "forget", "session": message["session"]})
        request = message.get("id")
        pending = self._waiting.get(request) if isinstance(request, int) else None
        if pending is not None:
            pending.send_nowait(({"op": "spawn_failed", "reason": why}, []))

    def _unhandled(self, what: str, why: object) -> None:
        key = what.split(" ", 2)[1] if " " in what else what
        if key not in self._logged:
            self._logged.add(key)
            log.warning("the keeper's link: %s was dropped (%s)", what, why)

    def _started(self, message: handoff.Message, fds: Sequence[int]) -> None:
        if len(fds) != 2:
            raise ValueError(f"a spawned program comes with 2 descriptors, not {len(fds)}")
        master, ring_fd = fds
        os.set_blocking(master, False)
        child = Child(int(message["pid"]), master, str(message["tty"]))
        self._children[str(message["session"])] = child
        self._started_rings[str(message["session"])] = _map_ring(ring_fd)

    def take_started(self, session: str) -> tuple[Child, Ring | None]:
        """The program just started for ``session`` (see `_started`)."""
        return self._children[session], self._started_rings.pop(session, None)

    def owner(self) -> KeeperOwner:
        return KeeperOwner(self)

    def unregister(self, session: str) -> None:
        self._children.pop(session, None)


class KeeperOwner:
    """An Owner whose programs the keeper forks, reaps and keeps past this server."""

    stops_programs_on_exit = False

    def __init__(self, link: KeeperLink) -> None:
        self._link = link

    async def start(self, spec: ProgramSpec) -> tuple[Child, Ring | None]:
        message = {
            "op": "spawn",
            "spec": {
                "session_id": spec.session_id,
                "argv": spec.argv,
                "env": spec.env,
                "cwd": spec.cwd,
                "cols": spec.cols,
                "rows": spec.rows,
                "ring_capacity": spec.ring_capacity,
                "identity": spec.identity,
            },
        }
        reply, fds = await self._link.request(message)
        if reply["op"] == "spawn_failed":
            for fd in fds:
                os.close(fd)
            raise SpawnError(str(reply.get("reason", "cannot start the program")))
        return self._link.take_started(spec.session_id)

    def forget(self, session_id: str) -> None:
        self._link.unregister(session_id)
        self._link.send_now({"op": "forget", "session": session_id})

    def resized(self, session_id: str, cols: int, rows: int) -> None:
        self._link.send_now({"op": "size", "session": session_id, "cols": cols, "rows": rows})

    def identity_changed(self, session_id: str, identity: dict[str, object]) -> None:
        self._link.send_now({"op": "identity", "session": session_id, "identity": identity})


def _map_ring(fd: int) -> Ring | None:
    try:
        return Ring(fd)
    except (RingError, OSError, ValueError) as error:
        log.warning("a session's ring cannot be used (%s): replay starts afresh", error)
        return None
    finally:
        os.close(fd)  # the mapping stays


def _expect(sock: socket.socket, *ops: str) -> tuple[handoff.Message, list[int]]:
    received = handoff.receive(sock)
    if received is None:
        raise KeeperGone("the keeper closed the link while starting")
    message, fds = received
    if message.get("op") not in ops:
        raise KeeperGone(f"unexpected {message.get('op')!r} from the keeper")
    return message, fds
