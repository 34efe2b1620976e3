"""The program under a PTY: spawn, resize, signal, terminate its whole session, reap.

ptyprocess forks with ``setsid``, so the child leads its own session and process
group (pgid == sid == pid). Job-control shells move their jobs into other process
groups of that same session, so terminating "the group" means every process whose
session id is the child's: HUP (as a closing terminal would), then KILL after a grace
period.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal as signals
from collections.abc import Mapping, Sequence
from pathlib import Path

import ptyprocess


class SpawnError(Exception):
    """The program could not be started; the message says why, for the user."""


def _set_tty_env(env: dict[str, str]) -> None:
    """Runs in the child between fork and exec: publish the slave's path to hooks.

    Agent hooks run without a controlling terminal, so they cannot open /dev/tty;
    they write their frames to this path instead. ``env`` is the very dict ptyprocess
    passes to exec, so updating it here (in the child's copy) is enough.
    """
    env["PTYVISOR_TTY"] = os.ttyname(0)


class Child:
    """One spawned program. Owns the PTY master fd."""

    def __init__(self, process: ptyprocess.PtyProcess) -> None:
        self._process = process
        self.pid: int = process.pid
        self.fd: int = process.fd
        self.exit_code: int | None = None
        self.signal: int | None = None
        self.reaped = False
        os.set_blocking(self.fd, False)

    @classmethod
    def spawn(
        cls, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], cols: int, rows: int
    ) -> Child:
        """Start ``argv``; raises SpawnError with a reason and leaves nothing behind."""
        if not argv or not argv[0]:
            raise SpawnError("empty command")
        workdir = Path(cwd)
        if not workdir.is_dir():
            raise SpawnError(f"working directory does not exist: {cwd}")
        child_env = dict(env)
        # Look the program up on the child's PATH (spawn requests may extend it);
        # ptyprocess would only search the server's.
        program = shutil.which(argv[0], path=child_env.get("PATH", os.defpath))
        if program is None:
            raise SpawnError(f"command not found: {argv[0]}")
        try:
            process = ptyprocess.PtyProcess.spawn(
                [program, *argv[1:]],
                cwd=str(workdir),
                env=child_env,
                dimensions=(rows, cols),
                preexec_fn=lambda: _set_tty_env(child_env),
            )
        except FileNotFoundError:
            raise SpawnError(f"command not found: {argv[0]}") from None
        except OSError as error:
            raise SpawnError(f"cannot start {argv[0]}: {error.strerror or error}") from None
        except Exception as error:  # ptyprocess reports exec failures as plain exceptions
            raise SpawnError(f"cannot start {argv[0]}: {error}") from None
        process.delayafterclose = 0
        process.delayafterterminate = 0
        return cls(process)

    def resize(self, cols: int, rows: int) -> None:
        if not self.reaped:
            with contextlib.suppress(OSError):
                self._process.setwinsize(rows, cols)

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

    def signal_session(self, signum: int) -> None:
        """Signal every process in the child's session, whatever its process group."""
        for pid in _session_members(self.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        self.send_signal(signum)

    def session_alive(self) -> bool:
        """Whether any process other than a reaped child is left in its session."""
        return any(pid != self.pid or not self.reaped for pid in _session_members(self.pid))

    def poll(self) -> bool:
        """Reap the child if it has exited; returns whether it has."""
        if self.reaped:
            return True
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            self.reaped = True
            return True
        if pid == 0:
            return False
        self.reaped = True
        if os.WIFSIGNALED(status):
            self.signal = os.WTERMSIG(status)
        else:
            self.exit_code = os.waitstatus_to_exitcode(status)
        # Tell ptyprocess too, so its finaliser does not wait on a reaped pid.
        self._process.terminated = True
        self._process.exitstatus = self.exit_code
        self._process.signalstatus = self.signal
        return True

    def close_fd(self) -> None:
        """Close the master; the kernel hangs up the slave side."""
        with contextlib.suppress(OSError):
            self._process.fileobj.close()
        self._process.closed = True


def _session_members(sid: int) -> list[int]:
    """Live pids whose session id is ``sid`` (Linux /proc; empty elsewhere)."""
    members: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return members
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command: state ppid pgrp session ...
        fields = stat.rpartition(")")[2].split()
        # Zombies are already dead (their parent, often init, reaps them).
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] != "Z":
            members.append(int(entry.name))
    return members


SIGNALS: dict[str, int] = {
    name: int(getattr(signals, f"SIG{name}"))
    for name in ("HUP", "INT", "QUIT", "TERM", "KILL", "USR1", "USR2", "CONT", "STOP", "WINCH")
}
