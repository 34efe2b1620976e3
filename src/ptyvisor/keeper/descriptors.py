"""File descriptors: the one resource every peer spends and the server cannot do without.

Each WebSocket client, control-socket connection and session (its PTY master) holds
descriptors, and ``accept`` fails with ``EMFILE`` once they run out. So:

- At start the server raises its soft ``RLIMIT_NOFILE`` to the hard limit
  (`raise_nofile_limit`); the programs it starts get the original limit back
  (``spawn.ORIGINAL_NOFILE``), as a login shell would give them.
- An accept loop that runs out of descriptors neither dies nor spins: it sheds the
  waiting connection (a spare descriptor, `Reserve`, is given up for a moment to
  accept and close it, so the peer learns at once instead of hanging in the
  backlog), backs off, keeps accepting, and logs the condition once per episode.
  `accept_forever` is that loop for the control socket; `shed_on_exhaustion` does
  the same for the WebSocket listener, whose accepting asyncio owns.
- A spawn takes two descriptors for good (the PTY master and the ring) and more
  while it starts. One that would leave fewer than `SPAWN_HEADROOM` free is refused
  with a reason (`spawn_shortage`), so sessions never take the last descriptors
  that clients, the records and the keeper's link need.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import resource
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
MIN_BACKOFF_SECONDS = 0.05
MAX_BACKOFF_SECONDS = 1.0
RETRY_QUIET_SECONDS = 1.5
"""asyncio retries a failed accept after a second; quiet for longer means recovered."""
ASYNCIO_ACCEPT_MESSAGE = "socket.accept() out of system resource"
"""What asyncio's accept loop reports before it pauses for a second (and retries)."""


SPAWN_HEADROOM = 32
"""Descriptors a spawn must leave free: client connections, the control socket, the
records' database and the keeper's link keep working with them."""


def in_use() -> int:
    """Descriptors this process has open now."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # the listing's own
    except OSError:
        return 0


def spawn_shortage() -> str | None:
    """Why a spawn now would take descriptors this process cannot spare, or None."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    used = in_use()
    if soft - used >= SPAWN_HEADROOM:
        return None
    return (
        f"out of file descriptors: {used} of {soft} are in use, and a session takes two; "
        "close sessions, or raise the limit (ulimit -n) and restart the server"
    )


def raise_nofile_limit() -> tuple[int, int]:
    """Raise the soft descriptor limit to the hard one; returns (before, after) soft.
    Programs still get the limit this process started with (spawn.ORIGINAL_NOFILE)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Reserve:
    """One spare descriptor, given up for a moment to accept-and-close a connection
    when there is no other."""

    def __init__(self) -> None:
        self._fd = -1
        self.refill()

    def refill(self) -> None:
        if self._fd < 0:
            with contextlib.suppress(OSError):
                self._fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def shed(self, listener_fd: int) -> None:
        """Accept one waiting connection on ``listener_fd`` and close it at once."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        listener = socket.socket(fileno=listener_fd)
        try:
            connection, _ = listener.accept()
            connection.close()
        except OSError:
            pass  # nothing waiting, or still no descriptor: the backoff retries
        finally:
            listener.detach()  # the caller owns the listening descriptor
            self.refill()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class Exhaustion:
    """Logs running out of descriptors once per episode, and the recovery."""

    def __init__(self, what: str) -> None:
        self._what = what
        self.active = False
        self.shed = 0
        self.last_hit = 0.0

    def hit(self) -> None:
        self.shed += 1
        self.last_hit = time.monotonic()
        if not self.active:
            self.active = True
            log.warning(
                "%s: out of file descriptors (limit %d); shedding new connections",
                self._what,
                resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            )

    def recovered(self) -> None:
        if self.active:
            self.active = False
            log.warning("%s: accepting again after shedding %d connections", self._what, self.shed)
            self.shed = 0


async def accept_forever(
    listener: socket.socket, handle: Callable[[socket.socket], None], *, what: str
) -> None:
    """Accept on the non-blocking ``listener`` until cancelled, handing each connection
    (non-blocking) to ``handle``; survives running out of descriptors (see above)."""
    import anyio  # here: the rest of this module is stdlib only, for the keeper

    reserve = Reserve()
    exhaustion = Exhaustion(what)
    backoff = MIN_BACKOFF_SECONDS
    try:
        while True:
            await anyio.wait_readable(listener)
            while True:
                try:
                    connection, _ = listener.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError as error:
                    if error.errno in OUT_OF_DESCRIPTORS:
                        exhaustion.hit()
                        reserve.shed(listener.fileno())
                        await anyio.sleep(backoff)
                        backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                        break
                    if error.errno in (errno.ECONNABORTED, errno.EPROTO, errno.EPERM):
                        continue  # that peer gave up; the listener is fine
                    raise
                exhaustion.recovered()
                backoff = MIN_BACKOFF_SECONDS
                reserve.refill()
                connection.setblocking(False)
                handle(connection)
    finally:
        reserve.close()


def shed_on_exhaustion(loop: asyncio.AbstractEventLoop, *, what: str) -> Callable[[], None]:
    """Make asyncio's own accept loop (the WebSocket listener) shed and log once per
    episode instead of logging a traceback every retry; returns an undo."""
    reserve = Reserve()
    exhaustion = Exhaustion(what)
    previous = loop.get_exception_handler()

    def handler(event_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        listener = context.get("socket")
        if context.get("message") == ASYNCIO_ACCEPT_MESSAGE and listener is not None:
            exhaustion.hit()
            reserve.shed(listener.fileno())
            # asyncio retries in a second: no failure for longer ends the episode.
            event_loop.call_later(RETRY_QUIET_SECONDS, _recovered_unless_exhausted, exhaustion)
            return
        if previous is not None:
            previous(event_loop, context)
        else:
            event_loop.default_exception_handler(context)

    loop.set_exception_handler(handler)

    def undo() -> None:
        loop.set_exception_handler(previous)
        reserve.close()

    return undo


def _recovered_unless_exhausted(exhaustion: Exhaustion) -> None:
    if time.monotonic() - exhaustion.last_hit >= RETRY_QUIET_SECONDS * 0.9:
        exhaustion.recovered()


MAX_UNIX_PATH = 100
"""AF_UNIX paths are limited to ~107 bytes."""


def bind_private_unix(path: Path) -> socket.socket | None:
    """A listening Unix socket at ``path``, 0600 in a 0700 directory, replacing a stale
    one; None (logged) when the path is too long for AF_UNIX."""
    if len(os.fsencode(path)) > MAX_UNIX_PATH:
        log.warning("socket path too long, not listening: %s", path)
        return None
    path.parent.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.parent.mkdir(exist_ok=True, mode=0o700)
    path.parent.chmod(0o700)
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(os.fsencode(path))
        os.chmod(path, 0o600)
        listener.listen(128)
    except BaseException:
        listener.close()
        raise
    return listener


def listen_failure(host: str, port: int, error: OSError) -> str:
    """The one line ``serve`` prints when it cannot listen: for a port in use, which
    process holds it, when this user may see that (``/proc``, stdlib only)."""
    line = f"ptyvisor serve: cannot listen on {host}:{port}: {error.strerror or error}"
    if error.errno == errno.EADDRINUSE:
        holder = port_holder(port)
        if holder is not None:
            pid, name = holder
            line += f" (pid {pid}, {name})"
    return line


def port_holder(port: int) -> tuple[int, str] | None:
    """(pid, command name) of a process listening on TCP ``port``, or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                listening = len(fields) > 9 and fields[3] == "0A"  # state LISTEN
                if listening and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    # Closed by ``with``: a return from inside the loops would leave them open.
    with os.scandir("/proc") as processes:
        for entry in processes:
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError), os.scandir(f"/proc/{entry.name}/fd") as fds:
                for fd in fds:
                    with contextlib.suppress(OSError):
                        if os.readlink(fd.path) in inodes:
                            name = Path(f"/proc/{entry.name}/comm").read_text().strip()
                            return int(entry.name), name
    return None
