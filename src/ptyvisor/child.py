"""The program under a PTY: start it clean, resize, signal, terminate its session, reap.

**Starting.** Everything that can be wrong with a request (an empty or NUL-holding
argument, a bad environment name, a missing directory or program) is found before
``fork``, and reported as a `SpawnError`. After ``fork`` the child only sets itself
up and ``exec``s: whatever fails there, it reports the error through a close-on-exec
pipe and ``_exit``s, so it can never carry on as a copy of the server. The setup
makes the program start as from a clean login: its own session with the PTY as
controlling terminal, every signal disposition default and the signal mask empty
(Python ignores SIGPIPE and SIGXFSZ, and ``exec`` keeps ignored signals), the
``RLIMIT_NOFILE`` soft limit the server itself started with (the server raises its
own, see `descriptors`), and no descriptor but the terminal. ptyprocess is not used
for this: its child runs Python after ``fork`` with none of these guarantees.

**Stopping.** The child leads its own session and process group (pgid == sid ==
pid). Job-control shells move their jobs into other process groups of that same
session, so terminating "the group" means every process whose session id is the
child's (found by `proctable`): HUP (as a closing terminal would), then KILL after
a grace period.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import resource
import shutil
import signal as signals
import struct
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ptyvisor import descriptors


class SpawnError(Exception):
    """The program could not be started; the message says why, for the user."""


DEFAULT_TERM = "xterm-256color"
"""What the page's xterm.js and ``ptyvisor attach`` emulate."""
DEFAULT_COLORTERM = "truecolor"
SERVER_TERMINAL_VARIABLES = frozenset(
    {
        "TMUX",
        "TMUX_PANE",
        "STY",
        "WINDOW",
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
        "VTE_VERSION",
        "WT_SESSION",
        "KITTY_WINDOW_ID",
        "ITERM_SESSION_ID",
        "COLUMNS",
        "LINES",
    }
)
"""Variables describing the terminal the *server* runs in (its tmux, its size): a
program under ptyvisor is in another terminal, and ``tmux`` inside a session must
not talk to the server's tmux."""


def program_environment(
    server_env: Mapping[str, str], requested: Mapping[str, str]
) -> dict[str, str]:
    """A program's environment: the server's, less what describes the server's own
    terminal and the server's ``PTYVISOR_*``, with ``TERM=xterm-256color`` and
    ``COLORTERM=truecolor``, then what the spawn request adds (which may override
    both). The session's own ``PTYVISOR_*`` variables are added by the session."""
    env = {
        key: value
        for key, value in server_env.items()
        if key not in SERVER_TERMINAL_VARIABLES and not key.startswith("PTYVISOR_")
    }
    env["TERM"] = DEFAULT_TERM
    env["COLORTERM"] = DEFAULT_COLORTERM
    env.update(requested)
    return env


def check_command(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> None:
    """Raise SpawnError if ``argv``, ``env`` or ``cwd`` cannot be passed to exec."""
    if not argv or not argv[0]:
        raise SpawnError("empty command")
    for index, arg in enumerate(argv):
        if "\0" in arg:
            raise SpawnError(f"argument {index} holds a NUL character")
    for key, value in env.items():
        if not key:
            raise SpawnError("an environment variable has an empty name")
        if "\0" in key or "=" in key:
            raise SpawnError(f"environment variable name {key!r} holds '=' or NUL")
        if "\0" in value:
            raise SpawnError(f"environment variable {key} holds a NUL character")
    if "\0" in cwd:
        raise SpawnError("the working directory holds a NUL character")


@dataclass(frozen=True)
class _Prepared:
    """Everything exec needs, as bytes, made before fork so the child only copies it."""

    program: bytes
    argv: list[bytes]
    env: dict[bytes, bytes]
    cwd: bytes
    nofile: tuple[int, int]
    max_fd: int


def _prepare(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> _Prepared:
    check_command(argv, env, cwd)
    if not os.path.isdir(cwd):
        raise SpawnError(f"working directory does not exist: {cwd}")
    # Look the program up on the child's PATH (spawn requests may extend it).
    program = shutil.which(argv[0], path=env.get("PATH", os.defpath))
    if program is None:
        raise SpawnError(f"command not found: {argv[0]}")
    try:
        return _Prepared(
            program=os.fsencode(program),
            argv=[os.fsencode(arg) for arg in argv],
            env={os.fsencode(key): os.fsencode(value) for key, value in env.items()},
            cwd=os.fsencode(cwd),
            nofile=descriptors.original_nofile_limit(),
            max_fd=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        )
    except UnicodeError as error:  # a lone surrogate that is no surrogateescape byte
        raise SpawnError(f"cannot encode the command for exec: {error}") from None


def _exec_in_child(prepared: _Prepared, slave: int, report: int) -> None:
    """The forked child: set up, exec. Never returns; never raises."""
    stage = "setup"
    try:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        os.closerange(3, report)
        os.closerange(report + 1, max(prepared.max_fd, report + 1))
        os.chdir(prepared.cwd)
        resource.setrlimit(resource.RLIMIT_NOFILE, prepared.nofile)
        for signum in range(1, signals.NSIG):
            with contextlib.suppress(OSError, ValueError):
                signals.signal(signum, signals.SIG_DFL)
        signals.pthread_sigmask(signals.SIG_SETMASK, ())
        stage = "exec"
        os.execve(prepared.program, prepared.argv, prepared.env)
    except BaseException as error:
        code = error.errno if isinstance(error, OSError) and error.errno else 0
        with contextlib.suppress(BaseException):
            os.write(report, f"{stage}:{code}:{error}".encode("utf-8", "replace")[:1000])
    finally:
        os._exit(127)


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Child:
    """One spawned program. Owns the PTY master fd."""

    def __init__(self, pid: int, fd: int, tty: str) -> None:
        self.pid = pid
        self.fd = fd
        self.tty = tty
        """The slave's path (``PTYVISOR_TTY``): hooks without a controlling terminal
        write their frames there."""
        self.exit_code: int | None = None
        self.signal: int | None = None
        self.reaped = False
        self._closed = False
        os.set_blocking(self.fd, False)

    @classmethod
    def spawn(
        cls, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], cols: int, rows: int
    ) -> Child:
        """Start ``argv``; raises SpawnError with a reason and leaves nothing behind.

        ``env`` gets ``PTYVISOR_TTY``, the slave's path, added here."""
        prepared = _prepare(argv, env, cwd)
        try:
            master, slave = os.openpty()
        except OSError as error:
            raise SpawnError(f"cannot open a terminal: {error.strerror}") from None
        try:
            tty = os.ttyname(slave)
            _set_size(slave, cols, rows)
            prepared.env[b"PTYVISOR_TTY"] = os.fsencode(tty)
            pid = _fork_exec(prepared, slave)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return cls(pid, master, tty)

    def resize(self, cols: int, rows: int) -> None:
        if not self.reaped and not self._closed:
            with contextlib.suppress(OSError):
                _set_size(self.fd, cols, rows)

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
        return True

    def close_fd(self) -> None:
        """Close the master; the kernel hangs up the slave side."""
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError):
                os.close(self.fd)


def _fork_exec(prepared: _Prepared, slave: int) -> int:
    """Fork a child that execs ``prepared`` on ``slave``; raises SpawnError (child
    reaped) if it could not."""
    read_end, write_end = os.pipe()  # both close-on-exec: EOF means exec succeeded
    try:
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _exec_in_child(prepared, slave, write_end)  # never returns
        os.close(write_end)
        write_end = -1
        report = _read_all(read_end)
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
    if not report:
        return pid
    os.waitpid(pid, 0)
    stage, _, rest = report.decode("utf-8", "replace").partition(":")
    code_text, _, message = rest.partition(":")
    code = int(code_text) if code_text.isdigit() else 0
    name = os.fsdecode(prepared.argv[0])
    if stage == "exec" and code in (errno.ENOENT, errno.ENOTDIR):
        raise SpawnError(f"command not found: {name}")
    reason = os.strerror(code) if code else message
    raise SpawnError(f"cannot start {name}: {reason}" + (" (in setup)" if stage != "exec" else ""))


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except InterruptedError:
            continue
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


SIGNALS: dict[str, int] = {
    name: int(getattr(signals, f"SIG{name}"))
    for name in ("HUP", "INT", "QUIT", "TERM", "KILL", "USR1", "USR2", "CONT", "STOP", "WINCH")
}
