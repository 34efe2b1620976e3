"""Starting a program clean under a new PTY: stdlib only, so that the keeper (the
small process that owns every program, see keeper.py) can use it too.

Everything that can be wrong with a request (an empty or NUL-holding argument, a bad
environment name, a missing directory or program) is found before ``fork`` and
reported as a `SpawnError`. After ``fork`` the child only sets itself up and
``exec``s: whatever fails there, it reports the error through a close-on-exec pipe
and ``_exit``s, so it can never carry on as a copy of its parent. The setup makes
the program start as from a clean login: its own session with the PTY as
controlling terminal, every signal disposition default and the signal mask empty
(Python ignores SIGPIPE and SIGXFSZ, and ``exec`` keeps ignored signals), the
``RLIMIT_NOFILE`` this process started with (servers raise their own, see
descriptors.py), and no descriptor but the terminal. ptyprocess is not used for
this: its child runs Python after ``fork`` with none of these guarantees.

Run it from a single-threaded process (the keeper), or accept that the child runs
a few lines of Python after ``fork`` in a threaded one (the in-process server).
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

from ptyvisor.errors import SpawnError

ORIGINAL_NOFILE = resource.getrlimit(resource.RLIMIT_NOFILE)
"""The descriptor limit this process started with (before any raise): what programs get."""


@dataclass(frozen=True)
class Started:
    """A running program: its pid (session and process group leader), the PTY master
    (non-blocking, close-on-exec) and the slave's path."""

    pid: int
    fd: int
    tty: str


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
SERVICE_MANAGER_VARIABLES = frozenset(
    {
        "NOTIFY_SOCKET",
        "WATCHDOG_PID",
        "WATCHDOG_USEC",
        "LISTEN_PID",
        "LISTEN_FDS",
        "LISTEN_FDNAMES",
        "INVOCATION_ID",
        "JOURNAL_STREAM",
        "MANAGERPID",
        "SYSTEMD_EXEC_PID",
    }
)
"""Variables systemd gives serve's own service (its notification socket, its log
stream): they describe serve, not a program, which would otherwise report to
serve's unit as if it were serve."""


def program_environment(
    server_env: Mapping[str, str], requested: Mapping[str, str]
) -> dict[str, str]:
    """A program's environment: the server's, less what describes the server's own
    terminal or its service and the server's ``PTYVISOR_*``, with ``TERM=xterm-256color`` and
    ``COLORTERM=truecolor``, then what the spawn request adds (which may override
    both). The session's own ``PTYVISOR_*`` variables are added by the session."""
    env = {
        key: value
        for key, value in server_env.items()
        if key not in SERVER_TERMINAL_VARIABLES | SERVICE_MANAGER_VARIABLES
        and not key.startswith("PTYVISOR_")
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
            nofile=ORIGINAL_NOFILE,
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


def set_size(fd: int, cols: int, rows: int) -> None:
    """The terminal's size (TIOCSWINSZ); the program gets SIGWINCH if it changed."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def start(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str], cols: int, rows: int
) -> Started:
    """Start ``argv`` under a new PTY; raises SpawnError with a reason and leaves
    nothing behind. ``env`` gets ``PTYVISOR_TTY``, the slave's path, and
    ``PTYVISOR_TTY_ID``, which PTY that path names now, added here (see `emit`)."""
    prepared = _prepare(argv, env, cwd)
    try:
        master, slave = os.openpty()
    except OSError as error:
        raise SpawnError(f"cannot open a terminal: {error.strerror}") from None
    try:
        tty = os.ttyname(slave)
        set_size(slave, cols, rows)
        prepared.env[b"PTYVISOR_TTY"] = os.fsencode(tty)
        # devpts makes a new inode for every PTY: its change time, to the nanosecond,
        # tells this PTY from the next one given the same /dev/pts/N.
        prepared.env[b"PTYVISOR_TTY_ID"] = str(os.fstat(slave).st_ctime_ns).encode()
        pid = _fork_exec(prepared, slave)
    except OSError as error:  # no descriptor for the pipe, no process left to fork
        os.close(master)
        raise SpawnError(
            f"cannot start {os.fsdecode(prepared.argv[0])}: {error.strerror}"
        ) from None
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    return Started(pid, master, tty)


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
