"""A running program as a session sees it: its PTY master, its signals, its exit.

Who started the program and reaps it is the *owner*'s business (owner.py): this
process itself, or the keeper, which outlives server restarts. The owner reports
the exit status here (`Exit`); a session never calls ``waitpid`` itself.

The program leads its own session and process group (pgid == sid == pid). Job-control
shells move their jobs into other process groups of that same session, so
terminating "the program" means every process whose session id is its pid (found by
`proctable`): HUP (as a closing terminal would), then KILL after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals
from collections.abc import Sequence

import anyio

from ptyvisor.keeper.proctable import ProcessTable
from ptyvisor.keeper.spawn import set_size

KILL_GRACE_SECONDS = 2.0


class Exit:
    """How the program ended, once its owner has reaped it."""

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.exit_code: int | None = None
        self.signal: int | None = None

    @property
    def known(self) -> bool:
        return self.event.is_set()

    def reaped(self, status: int) -> None:
        """Record a ``waitpid`` status (once)."""
        if self.known:
            return
        if os.WIFSIGNALED(status):
            self.signal = os.WTERMSIG(status)
        else:
            self.exit_code = os.waitstatus_to_exitcode(status)
        self.event.set()


class Child:
    """One program: pid, PTY master (non-blocking) and slave path, and its `Exit`."""

    def __init__(self, pid: int, fd: int, tty: str, exit: Exit | None = None) -> None:
        self.pid = pid
        self.fd = fd
        self.tty = tty
        self.exit = exit or Exit()
        self._closed = False

    @property
    def reaped(self) -> bool:
        return self.exit.known

    @property
    def exit_code(self) -> int | None:
        return self.exit.exit_code

    @property
    def signal(self) -> int | None:
        return self.exit.signal

    def poll(self) -> bool:
        """Whether the program has exited (and was reaped by its owner)."""
        return self.exit.known

    def resize(self, cols: int, rows: int) -> None:
        if not self.reaped and not self._closed:
            with contextlib.suppress(OSError):
                set_size(self.fd, cols, rows)

    def write_some(self, data: bytes | bytearray | memoryview) -> int:
        """Write what the PTY takes now; 0 when its input queue is full or it is gone."""
        try:
            return os.write(self.fd, data)
        except (BlockingIOError, OSError):
            return 0

    def send_signal(self, signum: int) -> None:
        """Signal the child's process group (what a terminal's ^C or ^Z reaches)."""
        if not self.reaped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)

    def signal_members(self, members: Sequence[int], signum: int) -> None:
        """Signal ``members`` (the live processes of the child's session, from
        `proctable`) and the child's own process group."""
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        self.send_signal(signum)

    def alive_among(self, members: Sequence[int]) -> bool:
        """Whether anything is left of the session: ``members``, less a reaped child."""
        return any(pid != self.pid or not self.reaped for pid in members)

    async def terminate(self, processes: ProcessTable, grace: float = KILL_GRACE_SECONDS) -> None:
        """Stop every process of the program's session; return once they are gone and
        the child is reaped (or a last KILL was not enough).

        HUP first, as a closing terminal would (with CONT, so stopped jobs see it),
        then KILL whatever is left after ``grace``. Polls: the ``/proc`` scans are
        shared and off the event loop (`ProcessTable`), and the other processes of
        the session give no event when they go."""
        for signum, wait in ((signals.SIGHUP, grace), (signals.SIGKILL, KILL_GRACE_SECONDS)):
            members = await self._members(processes)
            if not self.alive_among(members) and self.poll():
                return
            self.signal_members(members, signum)
            if signum == signals.SIGHUP:
                self.signal_members(members, signals.SIGCONT)
            # KILL cannot be ignored, but it is delivered asynchronously: wait until
            # the child is reaped and the rest of its session is gone too.
            with anyio.move_on_after(wait):
                while not (self.poll() and not self.alive_among(await self._members(processes))):  # noqa: ASYNC110
                    await anyio.sleep(0.02)

    async def _members(self, processes: ProcessTable) -> list[int]:
        """The live processes of the program's session; a failed scan counts as the
        child alone (its process group is signalled as well)."""
        members = await processes.members(self.pid)
        return [self.pid] if members is None else members

    def close_fd(self) -> None:
        """Close this process's copy of the master."""
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError):
                os.close(self.fd)


SIGNALS: dict[str, int] = {
    name: int(getattr(signals, f"SIG{name}"))
    for name in ("HUP", "INT", "QUIT", "TERM", "KILL", "USR1", "USR2", "CONT", "STOP", "WINCH")
}
