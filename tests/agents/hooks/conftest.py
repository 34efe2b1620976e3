"""The hooks' tests' fake ptyvisor: a control socket served by a thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ptyvisor.agents.hooks import decide

Reply = Callable[[socket.socket, bytes], None]
"""What the fake ptyvisor does with a connection, given the line it read."""


@dataclass
class ControlSocket:
    """A control socket served by a thread: each connection's first line is kept and
    answered by ``reply``."""

    path: Path
    reply: Reply
    received: list[bytes] = field(default_factory=list)
    after: list[bytes] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        return {
            decide.ENV_CONTROL: str(self.path),
            "PTYVISOR_SESSION": "s1",
            "PTYVISOR_NONCE": "n" * 32,
        }

    def serve(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                line, _, rest = data.partition(b"\n")
                self.received.append(line)
                self.reply(conn, line)
                conn.settimeout(5)
                try:
                    while chunk := conn.recv(65536):
                        rest += chunk
                except OSError:
                    pass
                self.after.append(rest)


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[Callable[[Reply], ControlSocket]]:
    listeners: list[tuple[socket.socket, threading.Thread]] = []

    def start(reply: Reply) -> ControlSocket:
        control_socket = ControlSocket(tmp_path / f"control{len(listeners)}.sock", reply)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(control_socket.path))
        listener.listen()
        thread = threading.Thread(target=control_socket.serve, args=(listener,), daemon=True)
        thread.start()
        listeners.append((listener, thread))
        return control_socket

    yield start
    for listener, thread in listeners:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(10)


def answer(line: bytes, *, then_close: bool = False) -> Reply:
    """Send ``line``; ``then_close``: and no more (the hook sees the end at once)."""

    def reply(conn: socket.socket, _request: bytes) -> None:
        conn.sendall(line)
        if then_close:
            conn.shutdown(socket.SHUT_WR)

    return reply
