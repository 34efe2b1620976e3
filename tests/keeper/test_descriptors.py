"""File descriptors (keeper/descriptors.py) with real sockets and this process's own
limit: who holds a port, the private control socket, a spare descriptor given up to
turn a waiting peer away, logging an exhaustion once per episode, and a spawn
refused before it takes the last descriptors. The whole server running out is in
tests/server/test_serving.py."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import resource
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ptyvisor.keeper import descriptors
from ptyvisor.keeper.descriptors import (
    ASYNCIO_ACCEPT_MESSAGE,
    SPAWN_HEADROOM,
    Exhaustion,
    Reserve,
    bind_private_unix,
    in_use,
    listen_failure,
    port_holder,
    raise_nofile_limit,
    shed_on_exhaustion,
    spawn_shortage,
)


@pytest.fixture
def listening() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener


def test_the_process_holding_a_port_is_named(listening: socket.socket) -> None:
    port = listening.getsockname()[1]
    me = Path("/proc/self/comm").read_text().strip()
    assert port_holder(port) == (os.getpid(), me)
    refused = OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
    line = listen_failure("127.0.0.1", port, refused)
    assert line == (
        f"ptyvisor serve: cannot listen on 127.0.0.1:{port}: "
        f"{os.strerror(errno.EADDRINUSE)} (pid {os.getpid()}, {me})"
    )


def test_a_port_nobody_listens_on_has_no_holder(listening: socket.socket) -> None:
    with socket.create_connection(listening.getsockname(), timeout=15) as client:
        # Its port is in the table too, connected: nobody listens on it.
        assert port_holder(client.getsockname()[1]) is None
    other = OSError(errno.EACCES, "Permission denied")
    assert listen_failure("0.0.0.0", 80, other).endswith(": Permission denied")


def test_the_control_socket_is_private_and_replaces_a_stale_one(tmp_path: Path) -> None:
    path = tmp_path / "state" / "run" / "control.sock"
    path.parent.mkdir(parents=True, mode=0o755)
    path.write_text("stale")
    listener = bind_private_unix(path)
    assert listener is not None
    try:
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
        with socket.socket(socket.AF_UNIX) as peer:
            peer.connect(str(path))
    finally:
        listener.close()
    assert bind_private_unix(tmp_path / ("x" * 120) / "control.sock") is None


def test_a_spare_descriptor_turns_a_waiting_peer_away(listening: socket.socket) -> None:
    reserve = Reserve()
    try:
        with socket.create_connection(listening.getsockname(), timeout=15) as peer:
            reserve.shed(listening.fileno())
            assert peer.recv(1) == b"", "accepted and closed at once"
        os.fstat(listening.fileno())  # the listener stays the caller's, open
        listening.setblocking(False)
        with pytest.raises(BlockingIOError):
            listening.accept()  # nobody else was waiting
        reserve.shed(listening.fileno())  # nothing waiting: no error either
    finally:
        reserve.close()


def test_an_exhaustion_is_logged_once_per_episode(caplog: pytest.LogCaptureFixture) -> None:
    exhaustion = Exhaustion("control socket")
    with caplog.at_level(logging.WARNING, logger=descriptors.__name__):
        for _ in range(3):
            exhaustion.hit()
        exhaustion.recovered()
        exhaustion.recovered()
        exhaustion.hit()
    lines = [record.getMessage() for record in caplog.records]
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    out = f"control socket: out of file descriptors (limit {limit}); shedding new connections"
    again = "control socket: accepting again after shedding 3 connections"
    assert lines == [out, again, out]
    assert exhaustion.active and exhaustion.shed == 1


@pytest.fixture
def soft_limit() -> Iterator[None]:
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


@pytest.mark.usefixtures("soft_limit")
def test_a_spawn_is_refused_before_it_takes_the_last_descriptors() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    used = in_use()
    resource.setrlimit(resource.RLIMIT_NOFILE, (used + SPAWN_HEADROOM + 8, hard))
    assert spawn_shortage() is None
    resource.setrlimit(resource.RLIMIT_NOFILE, (used + SPAWN_HEADROOM - 8, hard))
    shortage = spawn_shortage()
    assert shortage is not None and shortage.startswith("out of file descriptors: ")
    assert f"of {used + SPAWN_HEADROOM - 8} are in use" in shortage
    before, after = raise_nofile_limit()
    assert before == used + SPAWN_HEADROOM - 8
    assert after == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert hard in (after, resource.RLIM_INFINITY)
    assert spawn_shortage() is None


@pytest.mark.anyio
async def test_asyncios_accept_failure_sheds_and_anything_else_goes_on(
    listening: socket.socket,
) -> None:
    loop = asyncio.get_running_loop()
    passed: list[dict[str, Any]] = []

    def previous(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        passed.append(context)

    loop.set_exception_handler(previous)
    undo = shed_on_exhaustion(loop, what="port")
    try:
        with socket.create_connection(listening.getsockname(), timeout=15) as peer:
            handler = loop.get_exception_handler()
            assert handler is not None
            handler(loop, {"message": ASYNCIO_ACCEPT_MESSAGE, "socket": listening})
            assert peer.recv(1) == b""
            handler(loop, {"message": "something else"})
        assert passed == [{"message": "something else"}]
    finally:
        undo()
    assert loop.get_exception_handler() is previous
    loop.set_exception_handler(None)
