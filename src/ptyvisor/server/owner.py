"""Who starts the programs and reaps them: this process, or the keeper.

Whoever forks a program is its parent: only it can reap it, and its death hangs up
the program's terminal if nobody else holds it. So the owner is the one thing a
server restart must not take down.

- `LocalOwner`: this process forks and reaps (one pidfd per program). Its programs
  end with it. What ``run_server`` uses when nothing else is given (the tests' in-
  process servers, ``serve --no-keeper``).
- `KeeperOwner` (keeperlink.py): the keeper, a small separate process that
  ``ptyvisor serve`` starts first, forks and reaps; the server gets duplicates of
  each program's descriptors and its exit statuses over a Unix socket, and the
  programs outlive the server.
"""

from __future__ import annotations

import os
from typing import Protocol

import anyio
import anyio.abc

from ptyvisor.keeper import spawn
from ptyvisor.keeper.ring import Ring
from ptyvisor.server.child import KILL_GRACE_SECONDS, Child
from ptyvisor.wire.link import ProgramSpec

STOPPING_SECONDS = 2 * KILL_GRACE_SECONDS + 1
"""How long a reaper goes on once the server stops: HUP's grace, KILL's, and a margin."""


class Owner(Protocol):
    stops_programs_on_exit: bool
    """Whether the programs end when this server does (no keeper to outlive it)."""

    async def start(self, spec: ProgramSpec) -> tuple[Child, Ring | None]:
        """Start a program; raises SpawnError. The ring, when the owner keeps one,
        is where the server copies the program's output (see ring.py)."""
        ...

    def forget(self, session_id: str) -> None:
        """The session is closed and its program reaped: release what is kept for it."""
        ...

    def resized(self, session_id: str, cols: int, rows: int) -> None:
        """The terminal's size changed (what a server started later adopts it with)."""
        ...

    def identity_changed(self, session_id: str, identity: dict[str, object]) -> None:
        """The session's identity changed (renamed): what a later server adopts."""
        ...


class LocalOwner:
    """Forks in this process and reaps each program through a pidfd."""

    stops_programs_on_exit = True

    def __init__(self, task_group: anyio.abc.TaskGroup) -> None:
        self._tg = task_group

    async def start(self, spec: ProgramSpec) -> tuple[Child, Ring | None]:
        started = spawn.start(spec.argv, cwd=spec.cwd, env=spec.env, cols=spec.cols, rows=spec.rows)
        child = Child(started.pid, started.fd, started.tty)
        self._tg.start_soon(_reap, child, name=f"reap {started.pid}")
        return child, None  # nothing outlives this process: no ring to keep

    def forget(self, session_id: str) -> None:
        del session_id

    def resized(self, session_id: str, cols: int, rows: int) -> None:
        del session_id, cols, rows

    def identity_changed(self, session_id: str, identity: dict[str, object]) -> None:
        del session_id, identity


async def _reap(child: Child) -> None:
    """Wait for the program to exit, then reap it. Cancelled (the server is stopping),
    it goes on for as long as stopping a program can take: each session is stopping
    its program meanwhile (`Session.run`) and waits to see it reaped, which took the
    whole grace period of HUP and of KILL when this task had gone first."""
    try:
        await _reaped(child)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(STOPPING_SECONDS):
            await _reaped(child)
        raise


async def _reaped(child: Child) -> None:
    """Wait for the exit (pidfd; polling on kernels without), then reap."""
    try:
        pidfd = os.pidfd_open(child.pid)
    except OSError:
        pidfd = -1
    if pidfd >= 0:
        try:
            await anyio.wait_readable(pidfd)
        finally:
            os.close(pidfd)
    while True:
        try:
            pid, status = os.waitpid(child.pid, os.WNOHANG)  # noqa: ASYNC222 - WNOHANG
        except ChildProcessError:  # reaped elsewhere: the status is lost
            pid, status = child.pid, 0xFF00  # reported as exit status 255
        if pid:
            child.exit.reaped(status)
            return
        await anyio.sleep(0.05)
