"""A TCP proxy between the browser and the server that a test can break on purpose:
drop every connection (a network drop), refuse new ones (a server that is away),
or hold back what the server sends (a tab that has not heard the news yet)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

BUFFER = 65536


class TcpProxy:
    def __init__(
        self, upstream_port: int, host: str = "127.0.0.1", *, receive_buffer: int | None = None
    ) -> None:
        """``receive_buffer``: a small fixed kernel buffer towards the server, so that
        holding back soon backs up into the server instead of into the kernel."""
        self._upstream = (host, upstream_port)
        self._receive_buffer = receive_buffer
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._refusing = False
        self._closed = False
        self.attempts = 0
        """Connections accepted so far, refused ones included."""
        self._flowing = threading.Event()
        self._flowing.set()
        self._threads: list[threading.Thread] = []
        self._start(self._accept_loop)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def drop(self) -> None:
        """Cut every open connection, both ways, at once."""
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def refuse(self, refusing: bool) -> None:
        """While refusing, new connections are closed as soon as they are accepted."""
        self._refusing = refusing

    def hold(self) -> None:
        """Stop passing on what the server sends (what the browser sends still flows)."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self._closed = True
        self.release()
        self.drop()
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()

    def _start(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.attempts += 1
            if self._refusing or self._closed:
                _shut(client)
                continue
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                if self._receive_buffer is not None:
                    upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer)
                upstream.settimeout(5)
                upstream.connect(self._upstream)
            except OSError:
                _shut(upstream)
                _shut(client)
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            self._start(self._pump, client, upstream, False)
            self._start(self._pump, upstream, client, True)

    def _pump(self, source: socket.socket, sink: socket.socket, downstream: bool) -> None:
        try:
            while True:
                data = source.recv(BUFFER)
                if not data:
                    break
                if downstream:
                    self._flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._sockets.discard(source)
                self._sockets.discard(sink)
            _shut(source)
            _shut(sink)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
