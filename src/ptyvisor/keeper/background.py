"""``serve`` in the background: ``serve --detach``, and a client command that finds no
server and starts one, as tmux does.

The background serve runs in a session of its own (so no terminal can signal it),
reads ``/dev/null`` and appends its output to ``<state-dir>/serve.log``. The lines
serve prints once it serves (its address, and the page URL with the token) go to the
command that started it through a pipe (``--announce-fd``), for its terminal only:
the token is never written to the log. Starting returns once serve serves, or with
the reason it did not.

Stdlib only: ``serve`` runs it before anything else is imported.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptyvisor.keeper.logs import LOG_FILE, open_log
from ptyvisor.keeper.options import is_loopback

START_SECONDS = 60.0
"""How long a background serve may take to serve (it adopts nothing: it is new)."""
TAIL_BYTES = 2000
"""How much of the log a failure to start shows."""
PROBE_SECONDS = 2.0


@dataclass(frozen=True)
class Started:
    pid: int
    announced: list[str]
    """What serve printed once it served (its address; the page with the token)."""
    log: Path


def start(
    args: Sequence[str],
    state_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    seconds: float = START_SECONDS,
) -> Started | str:
    """Start ``ptyvisor serve ARGS`` in the background on ``state_dir``; what it
    announced once it serves, or why it did not (the end of its log)."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    log = state_dir / LOG_FILE
    log_fd = open_log(state_dir)
    start_of_run = os.lseek(log_fd, 0, os.SEEK_END)
    read_end, write_end = os.pipe()
    null_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    argv = [sys.executable, "-m", "ptyvisor", "serve", *args, "--announce-fd", str(write_end)]
    try:
        os.set_inheritable(write_end, True)
        pid = os.posix_spawn(
            sys.executable,
            argv,
            dict(os.environ if env is None else env),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, null_fd, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd, 2),
            ],
            setsid=True,
        )
    finally:
        for fd in (write_end, null_fd, log_fd):
            os.close(fd)
    try:
        announced, ended = _read_all(read_end, seconds)
    finally:
        os.close(read_end)
    if announced:
        return Started(pid, announced, log)
    if not ended:  # neither serving nor failing: stopped, so nothing is left half-started
        os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
    with log.open("rb") as written:
        written.seek(max(start_of_run, log.stat().st_size - TAIL_BYTES))
        tail = written.read().decode(errors="replace").strip()
    return tail or f"serve did not start within {seconds:g} s (log: {log})"


def _read_all(fd: int, seconds: float) -> tuple[list[str], bool]:
    """Lines from ``fd`` until its writer closes it (serve announced, or died), and
    whether it did within ``seconds``."""
    data = b""
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            return data.decode(errors="replace").splitlines(), True
        data += chunk
    return [], False


def announce(fd: int | None, lines: list[str]) -> None:
    """serve's lines once it serves: to the command that started it in the
    background (``fd``, then closed), else to standard output."""
    text = "\n".join(lines) + "\n"
    if fd is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        os.write(fd, text.encode())
    except OSError:
        pass  # whoever started us gave up waiting: nothing to tell
    finally:
        os.close(fd)


def serve_if_missing(
    host: str, port: int, state_dir: Path, *, token: str | None = None
) -> Started | str | None:
    """Start a background serve on ``host:port`` and ``state_dir`` when nothing
    listens there, the address is this machine's (loopback) and no serve holds the
    state directory: what `start` says, or None when none was started. ``token``:
    one the server must take (the client brings it)."""
    from ptyvisor.keeper.keeper import lock_holder  # the keeper imports this module

    if not is_loopback(host) or _listening(host, port) or lock_holder(state_dir) is not None:
        return None
    env = dict(os.environ)
    if token:
        env["PTYVISOR_TOKEN"] = token
    return start(
        ["--host", host, "--port", str(port), "--state-dir", str(state_dir)], state_dir, env=env
    )


def _listening(host: str, port: int) -> bool:
    """Whether something accepts connections there (anything but a refusal counts:
    the client's own connection then says what is wrong)."""
    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS):
            return True
    except ConnectionRefusedError:
        return False
    except OSError:
        return True
