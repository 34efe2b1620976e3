"""The server process's life: open the records, take or make the sockets, serve the
port (httpfront.py, connection.py) and the control socket, and stop.

Two ways to run, one `Backing` each, so the serving itself has no "with a keeper or
not" to ask: `Alone` (``serve --no-keeper``, the tests' in-process servers) binds its
own sockets and owns its programs, which end with it; `UnderKeeper` (keeper.py) serves
on the keeper's sockets, adopts the programs the keeper runs, and stops or hands over
when the keeper says so — leaving the programs running for the next server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sqlite3
from collections.abc import Sequence
from typing import Any, Protocol

import anyio
import anyio.abc
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.frames import CloseCode
from websockets.typing import Subprotocol

from ptyvisor import __version__
from ptyvisor.config import ServerConfig, control_path
from ptyvisor.keeper import descriptors
from ptyvisor.server.connection import CLOSE_TIMEOUT_SECONDS
from ptyvisor.server.control import ControlServer
from ptyvisor.server.httpfront import HttpFront
from ptyvisor.server.keeperlink import KeeperLink
from ptyvisor.server.owner import LocalOwner, Owner
from ptyvisor.server.records import Records
from ptyvisor.server.session import now_ms
from ptyvisor.server.supervisor import Supervisor
from ptyvisor.wire import link as wire
from ptyvisor.wire.protocol import MAX_TEXT_MESSAGE

log = logging.getLogger(__name__)

HARD_MESSAGE_LIMIT = 2 * MAX_TEXT_MESSAGE
"""Beyond this websockets closes the connection (1009); below it, ``too_large`` errors."""
INCOMING_QUEUE = 4
"""Messages websockets buffers before it stops reading the socket (TCP backpressure)."""
SUBPROTOCOL = "ptyvisor"


def _select_subprotocol(
    connection: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    """Accept ``ptyvisor`` when offered (browsers must echo one); never echo the token."""
    del connection
    return Subprotocol(SUBPROTOCOL) if SUBPROTOCOL in offered else None


class Backing(Protocol):
    """Where the programs and the sockets come from."""

    def owner(self, task_group: anyio.abc.TaskGroup) -> Owner: ...

    async def take_over(self, supervisor: Supervisor) -> None:
        """Sessions to serve from the start (the keeper's programs)."""

    def listen(self, config: ServerConfig) -> tuple[dict[str, Any], socket.socket | None]:
        """``serve``'s address arguments, and the control socket's listener."""
        ...

    def listening(self, config: ServerConfig, server: Server) -> None:
        """The port is open: what the config then learns (its URL)."""

    async def serve_until_done(self, server: Server, supervisor: Supervisor) -> None:
        """Serve until this server is to go (cancelled, or the keeper says so)."""

    def close(self, config: ServerConfig) -> None:
        """Release what `listen` made."""


class Alone:
    """This process binds its sockets and owns its programs: they end with it."""

    def __init__(self) -> None:
        self._control: socket.socket | None = None

    def owner(self, task_group: anyio.abc.TaskGroup) -> Owner:
        return LocalOwner(task_group)

    async def take_over(self, supervisor: Supervisor) -> None:
        pass

    def listen(self, config: ServerConfig) -> tuple[dict[str, Any], socket.socket | None]:
        self._control = descriptors.bind_private_unix(control_path(config.state_dir))
        return {"host": config.host, "port": config.port}, self._control

    def listening(self, config: ServerConfig, server: Server) -> None:
        port = server.sockets[0].getsockname()[1] if server.sockets else config.port
        path = "" if self._control is None else str(control_path(config.state_dir))
        config.bound(port, path)

    async def serve_until_done(self, server: Server, supervisor: Supervisor) -> None:
        # Cancellation ends here; each session's task then stops and reaps its
        # program (HUP, then KILL after a grace period).
        await anyio.sleep_forever()

    def close(self, config: ServerConfig) -> None:
        if self._control is not None:
            self._control.close()
            with contextlib.suppress(OSError):
                os.unlink(control_path(config.state_dir))


class UnderKeeper:
    """The keeper's sockets and programs (see keeper.py and keeperlink.py)."""

    def __init__(self, keeper: KeeperLink) -> None:
        self._keeper = keeper

    def owner(self, task_group: anyio.abc.TaskGroup) -> Owner:
        return self._keeper.owner()

    async def take_over(self, supervisor: Supervisor) -> None:
        keeper = self._keeper
        for adopted in keeper.adopted:
            try:
                await supervisor.adopt(adopted, keeper.handed_over.get(adopted.session))
            except Exception:
                # One program this server cannot take over (a bug, bad state from the
                # keeper) must not crash every server started after it.
                log.exception("session %s cannot be adopted; stopping it", adopted.session)
                adopted.child.close_fd()
                supervisor.owner.forget(adopted.session)

    def listen(self, config: ServerConfig) -> tuple[dict[str, Any], socket.socket | None]:
        return {"sock": self._keeper.tcp}, self._keeper.control

    def listening(self, config: ServerConfig, server: Server) -> None:
        pass  # the keeper made the URL

    async def serve_until_done(self, server: Server, supervisor: Supervisor) -> None:
        """Serve until the keeper says ``stop`` (for good: it stops the programs itself)
        or ``restart`` (hand over what only this server knows, then go); clients are
        closed with 1012 (service restart) then, and reconnect to the next server."""
        keeper = self._keeper
        done = anyio.Event()
        stopping = False

        async def restart() -> None:
            # Stop accepting (new connections wait in the keeper's listening socket for
            # the next server) and close every client with 1012: "come back in a moment".
            server.close(code=CloseCode.SERVICE_RESTART, reason="server restarting")
            with anyio.move_on_after(CLOSE_TIMEOUT_SECONDS):
                await server.wait_closed()
            sessions = [await session.handover() for session in supervisor.sessions()]
            await keeper.send(wire.Handover(sessions))
            done.set()

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

    def close(self, config: ServerConfig) -> None:
        pass  # the sockets are the keeper's


async def run_server(
    config: ServerConfig,
    *,
    keeper: KeeperLink | None = None,
    task_status: anyio.abc.TaskStatus[Server] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled (alone) or until the keeper says so (see the module's
    notes); ``task_status`` gets the websockets server once it listens."""
    descriptors.raise_nofile_limit()
    undo_shedding = descriptors.shed_on_exhaustion(
        asyncio.get_running_loop(), what="WebSocket listener"
    )
    backing: Backing = Alone() if keeper is None else UnderKeeper(keeper)
    records = await _open_records(config)
    try:
        await _serve(config, backing, records, task_status)
    finally:
        if records is not None:
            await records.aclose()
        undo_shedding()


async def _serve(
    config: ServerConfig,
    backing: Backing,
    records: Records | None,
    task_status: anyio.abc.TaskStatus[Server],
) -> None:
    async with anyio.create_task_group() as tg:
        supervisor = Supervisor(config, tg, backing.owner(tg), records)
        if records is not None:
            tg.start_soon(records.run)
        if supervisor.notifier is not None:
            await tg.start(supervisor.notifier.run, supervisor.summaries)
        where, control_listener = backing.listen(config)
        try:
            await backing.take_over(supervisor)
            if records is not None:
                # Sessions recorded as running that no program backs any more ended
                # while no server ran (a reboot, a kill -9 of everything).
                records.lost((s.id for s in supervisor.sessions()), at=now_ms())
            front = HttpFront(config, supervisor)
            async with serve(
                front.serve,
                **where,
                process_request=front.process_request,
                select_subprotocol=_select_subprotocol,
                max_size=HARD_MESSAGE_LIMIT,
                max_queue=INCOMING_QUEUE,
                ssl=config.tls_context(),
                compression=None,
                server_header=f"ptyvisor/{__version__}",
            ) as server:
                backing.listening(config, server)
                if control_listener is not None:
                    control = ControlServer(supervisor.requests, supervisor.find, config.settings)
                    tg.start_soon(control.serve, control_listener)
                task_status.started(server)
                await backing.serve_until_done(server, supervisor)
                tg.cancel_scope.cancel()
        finally:
            backing.close(config)


async def _open_records(config: ServerConfig) -> Records | None:
    try:
        return await Records.open(config.state_dir)
    except (OSError, sqlite3.Error) as error:
        log.warning("no session records (%s): past sessions cannot be listed or resumed", error)
        return None
