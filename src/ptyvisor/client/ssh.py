"""Servers on other machines, through the user's own OpenSSH, as ``docker -H ssh://``.

A client given ``ssh://[user@]host[:port]`` runs the user's ``ssh`` to that host with
the remote command ``ptyvisor dial-stdio``, one end of a socket pair as its standard
input and output, and speaks WebSocket over the other end: the kernel carries the
bytes, and ``ssh`` carries them to the remote ``dial-stdio``, which bridges them to
the server on that machine (starting one there when none answers, unless told not
to). So the user's ``~/.ssh/config``, keys, agent, ProxyJump and ControlMaster all
apply, and a password prompt still reaches the terminal (``ssh`` asks on it).

Before bridging, ``dial-stdio`` writes one line of JSON (`Greeting`): the remote
server's token, read there, or why it cannot reach one. The token travels only inside
the SSH channel and is never in a command line; the local token never leaves this
machine.

The command ``ssh`` runs is ``$PTYVISOR_SSH`` (default ``ssh``; for example
``ssh -F ~/other_config``), and the remote program is ``$PTYVISOR_REMOTE_COMMAND``
(default ``ptyvisor``: the remote shell's PATH of a non-interactive login finds it,
or give its path). Host and user are checked before they reach ``ssh``'s argument
list, so neither can be taken for an option.

Stdlib only: the remote side starts on every command, and must start fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO
from urllib.parse import urlsplit

from ptyvisor.errors import HostUnreachable

VERSION = 1
POLL_SECONDS = 0.1
"""How often a wait for the greeting looks whether its caller has given up."""
GREETING_LIMIT = 64 * 1024
CHUNK = 256 * 1024
SSH_ENV = "PTYVISOR_SSH"
REMOTE_ENV = "PTYVISOR_REMOTE_COMMAND"
NO_AUTOSTART = "--no-autostart"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_HOST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\]")


@dataclass(frozen=True, slots=True)
class Target:
    """Where ``ssh://[user@]host[:port]`` points."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"ssh://{user}{self.host}{port}"


def is_ssh(url: str) -> bool:
    return url.startswith("ssh://")


def parse_target(url: str) -> Target:
    """The target of an ``ssh://`` URL; raises ValueError for anything else, a host or
    user that could read as an option, and a path, query or password."""
    parts = urlsplit(url)
    if parts.scheme != "ssh":
        raise ValueError(f"not an ssh:// URL: {url!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.password:
        raise ValueError("an ssh:// URL is ssh://[user@]host[:port], nothing more")
    netloc = parts.netloc.rpartition("@")[2]
    host = netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc
    if not _HOST.fullmatch(host):
        raise ValueError(f"not a host name: {host!r}")
    user = parts.username
    if user is not None and not _NAME.fullmatch(user):
        raise ValueError(f"not a user name: {user!r}")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError("the port is a number from 1 to 65535")
    return Target(host=host.strip("[]") if host.startswith("[") else host, user=user, port=port)


def ssh_argv(target: Target, *, autostart: bool = True) -> list[str]:
    """The ``ssh`` command that reaches ``dial-stdio`` on ``target``."""
    remote = os.environ.get(REMOTE_ENV, "").strip() or "ptyvisor"
    command = f"{remote} dial-stdio" + ("" if autostart else f" {NO_AUTOSTART}")
    argv = shlex.split(os.environ.get(SSH_ENV, "").strip() or "ssh")
    argv += ["-T", "-e", "none"]
    if target.port:
        argv += ["-p", str(target.port)]
    if target.user:
        argv += ["-l", target.user]
    return [*argv, "--", target.host, command]


# ---------------------------------------------------------------------- this machine


class Channel:
    """A running ``ssh`` and our end of its standard input and output."""

    def __init__(
        self,
        target: Target,
        sock: socket.socket,
        process: subprocess.Popen[bytes],
        said: IO[bytes],
    ) -> None:
        self.target = target
        self.sock = sock
        self.process = process
        self.said = said
        """What ``ssh`` writes to its standard error."""
        self.token: str | None = None
        self.started: str | None = None
        """What the far end started (a server), for the user to hear of."""

    def last_lines(self) -> str:
        """What ``ssh`` (or the remote shell) said last, once it has ended."""
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return ""
        self.said.seek(0)
        lines = [line.strip() for line in self.said.read().decode(errors="replace").splitlines()]
        return " / ".join(line for line in lines if line)[-500:]

    def close(self, grace: float = 5.0) -> None:
        """Close our end (``ssh`` then ends the remote side) and reap ``ssh``, killed
        if it is still there after ``grace`` seconds."""
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.said.close()


def open_channel(
    url: str,
    *,
    autostart: bool = True,
    timeout: float = 60.0,
    cancelled: threading.Event | None = None,
) -> Channel:
    """Start ``ssh`` to the URL's host and read the remote greeting (blocking: run it
    in a thread; setting ``cancelled`` ends the wait within a fraction of a second).
    Raises `HostUnreachable` with what went wrong."""
    try:
        target = parse_target(url)
    except ValueError as bad:
        raise HostUnreachable(str(bad)) from None
    ours, theirs = socket.socketpair()
    # A file, not a pipe: nobody reads what ssh says while the channel works, and a
    # full pipe would stop it; what it said is read when it fails.
    said = tempfile.TemporaryFile()  # noqa: SIM115 - the channel owns it, and closes it
    try:
        process = subprocess.Popen(
            ssh_argv(target, autostart=autostart),
            stdin=theirs.fileno(),
            stdout=theirs.fileno(),
            stderr=said,
        )
    except OSError as error:
        ours.close()
        said.close()
        raise HostUnreachable(f"cannot run ssh: {error}") from None
    finally:
        theirs.close()
    channel = Channel(target, ours, process, said)
    try:
        greeting = _read_greeting(ours, timeout, cancelled or threading.Event())
    except HostUnreachable as error:
        if cancelled is not None and cancelled.is_set():
            channel.close(grace=0)  # the caller has gone: nobody will read why
            raise
        last = channel.last_lines()
        channel.close()
        raise HostUnreachable(f"{target}: {last or error}") from None
    except BaseException:
        channel.close()
        raise
    refusal = greeting.get("error")
    if refusal is not None:
        channel.close()
        raise HostUnreachable(f"{target}: {str(refusal)[:500]}")
    token, started = greeting.get("token"), greeting.get("started")
    channel.token = token if isinstance(token, str) else None
    channel.started = started[:500] if isinstance(started, str) else None
    return channel


def _read_greeting(
    sock: socket.socket, timeout: float, cancelled: threading.Event
) -> dict[str, object]:
    sock.settimeout(POLL_SECONDS)
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        if cancelled.is_set():
            raise HostUnreachable("given up waiting for ptyvisor dial-stdio")
        try:
            # One byte at a time: what follows the line is the server's, for websockets.
            byte = sock.recv(1)
        except TimeoutError:
            if time.monotonic() > deadline:
                raise HostUnreachable(
                    f"no answer from ptyvisor dial-stdio within {timeout:g} s"
                ) from None
            continue
        if not byte:
            raise HostUnreachable("ssh ended before ptyvisor dial-stdio answered")
        line += byte
        if len(line) > GREETING_LIMIT:
            raise HostUnreachable("ptyvisor dial-stdio's greeting is too long")
    sock.settimeout(None)
    try:
        greeting = json.loads(line)
    except ValueError:
        raise HostUnreachable(f"not ptyvisor dial-stdio: {line[:200]!r}") from None
    if not isinstance(greeting, dict) or greeting.get("dial_stdio") != VERSION:
        raise HostUnreachable("the remote ptyvisor speaks another dial-stdio version")
    return greeting


# ---------------------------------------------------------------------- the far side


def dial_stdio(args: list[str]) -> int:
    """``ptyvisor dial-stdio [--no-autostart]``: greet, then bridge standard input and
    output to this machine's server (see the module's notes)."""
    from ptyvisor.config import DEFAULT_HOST, DEFAULT_PORT, default_state_dir, read_token
    from ptyvisor.keeper import background

    if any(arg not in (NO_AUTOSTART,) for arg in args):
        return _greet(error=f"dial-stdio takes only {NO_AUTOSTART}", code=2)
    url = os.environ.get("PTYVISOR_URL") or f"ws://{DEFAULT_HOST}:{DEFAULT_PORT}/"
    note = None
    parts = urlsplit(url)
    host, port = parts.hostname or DEFAULT_HOST, parts.port or DEFAULT_PORT
    state_dir = default_state_dir()
    try:
        server = socket.create_connection((host, port), timeout=10)
    except OSError as unreachable:
        if NO_AUTOSTART in args:
            return _greet(error=f"no server at {url} ({unreachable})")
        started = background.serve_if_missing(host, port, state_dir)
        if isinstance(started, str):
            return _greet(error=f"no server at {url}, and starting one failed: {started}")
        if started is not None:
            note = f"started a server on {url} (pid {started.pid}, log {started.log})"
        try:
            server = socket.create_connection((host, port), timeout=10)
        except OSError as still:
            return _greet(error=f"no server at {url} ({still})")
    server.settimeout(None)
    if _greet(token=read_token(state_dir), started=note) != 0:
        return 1
    _bridge(server)
    return 0


def _greet(
    *, token: str | None = None, started: str | None = None, error: str | None = None, code: int = 1
) -> int:
    said = {"error": error} if error else {"token": token, "started": started}
    line = {"dial_stdio": VERSION, **said}
    try:
        os.write(1, json.dumps(line).encode() + b"\n")
    except OSError:
        return 1
    if error:
        print(f"ptyvisor dial-stdio: {error}", file=sys.stderr)
        return code
    return 0


def _bridge(server: socket.socket) -> None:
    """Copy standard input to the server and the server to standard output until the
    server ends; the end of standard input ends our sending side only."""

    def upstream() -> None:
        try:
            while chunk := os.read(0, CHUNK):
                server.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    try:
        while received := server.recv_into(buffer):
            written = 0
            while written < received:
                written += os.write(1, view[written:received])
    except OSError:
        pass
    finally:
        server.close()
