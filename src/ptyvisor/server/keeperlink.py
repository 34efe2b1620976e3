"""The server's side of the keeper (keeper.py): the programs are the keeper's.

`KeeperLink.connect` reads, at start, the config and every program the keeper already
runs (with the state the previous server handed over at a planned restart). Then
`KeeperOwner` starts programs through the keeper, and `KeeperLink.run` follows the
keeper: exits it reaped, and ``stop`` or ``restart``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ptyvisor.config import ServerConfig
from ptyvisor.errors import BadLinkMessage, KeeperGone, RingError, SpawnError
from ptyvisor.keeper.ring import Ring
from ptyvisor.server.child import Child
from ptyvisor.wire import link as wire
from ptyvisor.wire.link import ProgramSpec

log = logging.getLogger(__name__)


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
        self.handed_over: dict[str, wire.SessionHandover] = {}
        """Per session: what the previous server handed over at a planned restart."""
        self._children: dict[str, Child] = {}
        self._started_rings: dict[str, Ring | None] = {}
        self._waiting: dict[int, MemoryObjectSendStream[wire.Spawned | wire.SpawnFailed]] = {}
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
        first, _ = _expect(sock, wire.Config)
        assert isinstance(first, wire.Config)
        if first.version != wire.VERSION:
            raise KeeperGone(f"the keeper speaks link version {first.version}")
        settings = dict(first.config)
        url, control_path = str(settings.pop("url")), str(settings.pop("control_path"))
        verbose = bool(settings.pop("verbose", False))
        config = ServerConfig.from_json(settings)
        config.bound(config.port, control_path, url)
        link = cls(sock, tcp, control, config, verbose)
        while True:
            message, fds = _expect(sock, wire.Adopt, wire.Adopted)
            if isinstance(message, wire.Adopted):
                link.handed_over = {state.session: state for state in message.state or ()}
                break
            assert isinstance(message, wire.Adopt)
            link.adopted.append(link._adopt(message, fds))
        sock.setblocking(False)
        return link

    def _adopt(self, message: wire.Adopt, fds: Sequence[int]) -> Adopted:
        master, ring_fd = fds
        os.set_blocking(master, False)
        child = Child(message.pid, master, message.tty)
        if message.status is not None:
            child.exit.reaped(message.status)
        self._children[message.session] = child
        return Adopted(
            session=message.session,
            child=child,
            ring=_map_ring(ring_fd),
            identity=message.identity,
            cols=message.cols,
            rows=message.rows,
        )

    # ------------------------------------------------------------------ sending

    async def send(self, message: wire.ToKeeper) -> None:
        if self._send_lock is None:
            self._send_lock = anyio.Lock()
        packet, attached, blob = wire.encode(message)
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

    def send_now(self, message: wire.ToKeeper) -> None:
        """A small message, sent at once (the keeper reads promptly); a failure is
        logged: the keeper's view of a size or a forgotten session is not vital."""
        packet, fds, blob = wire.encode(message)
        try:
            socket.send_fds(self._sock, [packet], fds)
        except OSError as error:
            log.warning("cannot tell the keeper (%s): %s", message.op, error)
        finally:
            if blob is not None:
                os.close(blob)

    async def spawn(self, spec: wire.ProgramSpec) -> wire.Spawned | wire.SpawnFailed:
        """Ask the keeper to start ``spec``; its answer."""
        self._ids += 1
        request = self._ids
        send, receive = anyio.create_memory_object_stream[wire.Spawned | wire.SpawnFailed](1)
        self._waiting[request] = send
        try:
            await self.send(wire.Spawn(id=request, spec=spec))
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
        cannot be taken (not one of the link's, or its descriptors lost for want of
        room) costs that message, logged once per kind: the spawn waiting for it, if
        any, fails; never this loop, which every later spawn and the stop depend on."""
        while True:
            await anyio.wait_readable(self._sock)
            while True:
                try:
                    received = wire.receive(self._sock)
                except BlockingIOError:
                    break
                except BadLinkMessage as bad:  # Truncated too
                    lost = (
                        bad.message
                        if isinstance(bad.message, wire.Spawned | wire.SpawnFailed)
                        else None
                    )
                    self._lost(lost, str(bad))
                    continue
                except OSError:
                    received = None
                if received is None:
                    for waiter in self._waiting.values():
                        waiter.close()
                    raise KeeperGone("the keeper closed the link")
                message, fds = received
                match message:
                    case wire.Exited(session=session, status=status):
                        child = self._children.get(session)
                        if child is not None:
                            child.exit.reaped(status)
                    case wire.Spawned():
                        self._started(message, fds)  # known at once: its exit may be next
                        self._answer(message)
                    case wire.SpawnFailed():
                        self._answer(message)
                    case wire.Ping(n=n):
                        # Answered from the event loop: a stopped or stuck loop does not
                        # answer, and the keeper replaces this process.
                        self.send_now(wire.Pong(n))
                    case wire.Stop():
                        on_stop()
                    case wire.Restart():
                        await on_restart()
                    case _:
                        self._unhandled(message.op, "only the server sends it")

    def _answer(self, message: wire.Spawned | wire.SpawnFailed) -> None:
        pending = self._waiting.get(message.id)
        if pending is not None:
            pending.send_nowait(message)

    def _lost(self, message: wire.Message | None, why: str) -> None:
        """``message`` could not be taken: a spawn it answered fails (its program,
        which no server can read, is stopped by the keeper); anything else is logged."""
        self._unhandled("malformed" if message is None else message.op, why)
        if isinstance(message, wire.Spawned):
            self.send_now(wire.Forget(message.session))
        if isinstance(message, wire.Spawned | wire.SpawnFailed):
            self._answer(wire.SpawnFailed(id=message.id, reason=why))

    def _unhandled(self, kind: str, why: object) -> None:
        if kind not in self._logged:
            self._logged.add(kind)
            log.warning("the keeper's link: a %s message was dropped (%s)", kind, why)

    def _started(self, message: wire.Spawned, fds: Sequence[int]) -> None:
        master, ring_fd = fds
        os.set_blocking(master, False)
        self._children[message.session] = Child(message.pid, master, message.tty)
        self._started_rings[message.session] = _map_ring(ring_fd)

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
        reply = await self._link.spawn(spec)
        if isinstance(reply, wire.SpawnFailed):
            raise SpawnError(reply.reason or "cannot start the program")
        return self._link.take_started(spec.session_id)

    def forget(self, session_id: str) -> None:
        self._link.unregister(session_id)
        self._link.send_now(wire.Forget(session_id))

    def resized(self, session_id: str, cols: int, rows: int) -> None:
        self._link.send_now(wire.Size(session_id, cols, rows))

    def identity_changed(self, session_id: str, identity: dict[str, object]) -> None:
        self._link.send_now(wire.IdentityChanged(session_id, dict(identity)))


def _map_ring(fd: int) -> Ring | None:
    try:
        return Ring(fd)
    except (RingError, OSError, ValueError) as error:
        log.warning("a session's ring cannot be used (%s): replay starts afresh", error)
        return None
    finally:
        os.close(fd)  # the mapping stays


def _expect(sock: socket.socket, *kinds: type[wire.Message]) -> tuple[wire.Message, list[int]]:
    try:
        received = wire.receive(sock)
    except ValueError as bad:  # BadLinkMessage, Truncated
        raise KeeperGone(f"the keeper's link while starting: {bad}") from None
    if received is None:
        raise KeeperGone("the keeper closed the link while starting")
    message, fds = received
    if not isinstance(message, kinds):
        raise KeeperGone(f"unexpected {message.op!r} from the keeper")
    return message, fds
