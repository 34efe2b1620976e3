"""An agent started through a wrapper (``ssh -t host``, ``docker exec -it box``,
``kubectl exec -it pod --``) inside a local session, still reporting in-band.

The local session runs ``<wrapper> ptyvisor via-exec <session> <token>``. Its frames only need
to reach the same terminal, which they do through the wrapper; what the far side
lacks is the session's id and nonce, and those must not travel in a command line
(``ps`` on either machine shows it). So they travel through the terminal itself:

1. The far side (`far_side`, ``ptyvisor via-exec``) turns off echo on its terminal
   and writes a *hello*: a frame whose nonce field holds ``<token>`` (one-time, from
   its command line) and whose payload is ``{"type": "via_hello"}``.
2. The local session (server/session/core.py) takes one hello carrying its token,
   within `HELLO_SECONDS` of the spawn, and types one line back: `ViaSetup` as JSON
   (session, nonce, agent, the agent's arguments, a conversation to resume).
3. The far side reads that line (echo still off, so it never shows), restores the
   terminal and starts the agent with its extension (launch.launch, on the far
   side's own ptyvisor), the session's variables in its environment.

A hello is only as good as its token: the token is random, used once, and only
within `HELLO_SECONDS`, so output that merely prints one (``cat`` of a log) gets
nothing typed into the terminal. What the agent then reports is authenticated with
the nonce like any frame. A far side without ``ptyvisor`` on its PATH ends with
status 127 before its hello, and the session says so in one line (`missing`).

Stdlib only, and no ptyvisor server code: it runs on the far machine.
"""

from __future__ import annotations

import json
import os
import select
import sys
import termios
import time
from collections.abc import Mapping, Sequence

from ptyvisor.wire.frames import NONCE_PATTERN, SESSION_ID_PATTERN, encode_frame

HELLO = "via_hello"
"""The payload type of a hello."""
HELLO_SECONDS = 60.0
"""How long after the spawn the session takes a hello: ssh's connection and login."""
SETUP_WAIT_SECONDS = 30.0
"""How long the far side waits for the setup line after its hello."""
MAX_SETUP_BYTES = 256 * 1024
COMMAND = ("ptyvisor", "via-exec")
MISSING_STATUSES = (126, 127)
"""What a shell (and ``docker exec``, ``kubectl exec``) exits with when the command
cannot be found or run."""
MAX_WRAPPER_WORDS = 32


class ViaSetup:
    """The line the session types to the far side after its hello (secret: it holds
    the nonce; never logged, never kept)."""

    __slots__ = ("agent", "args", "nonce", "resume", "session")

    def __init__(
        self, session: str, nonce: str, agent: str, args: Sequence[str], resume: str | None
    ) -> None:
        self.session, self.nonce, self.agent = session, nonce, agent
        self.args, self.resume = list(args), resume

    def line(self) -> bytes:
        data = {
            "session": self.session,
            "nonce": self.nonce,
            "agent": self.agent,
            "args": self.args,
            "resume": self.resume,
        }
        return json.dumps(data, separators=(",", ":")).encode() + b"\n"

    @classmethod
    def from_line(cls, line: bytes) -> ViaSetup:
        """Raises ValueError for anything `line` could not have written. Keys typed
        before the line arrived are skipped up to its first ``{``."""
        start = line.find(b"{")
        data = json.loads(line[start:] if start >= 0 else line)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        session, nonce, agent = data.get("session"), data.get("nonce"), data.get("agent")
        args, resume = data.get("args"), data.get("resume")
        if not isinstance(session, str) or not SESSION_ID_PATTERN.fullmatch(session):
            raise ValueError("no session id")
        if not isinstance(nonce, str) or not NONCE_PATTERN.fullmatch(nonce):
            raise ValueError("no nonce")
        if not isinstance(agent, str) or not isinstance(args, list):
            raise ValueError("no agent")
        if not all(isinstance(arg, str) for arg in args):
            raise ValueError("arguments are texts")
        if not isinstance(resume, str | None):
            raise ValueError("resume is a text")
        return cls(session, nonce, agent, args, resume)


def wrapper_text(via: Sequence[str]) -> str:
    """The wrapper as the user wrote it, for messages."""
    import shlex

    return shlex.join(via)


def missing(via: Sequence[str], exit_code: int | None) -> str:
    """Why a wrapped agent ended before the far side's hello, in one line."""
    wrapper = wrapper_text(via)
    if exit_code in MISSING_STATUSES:
        return (
            f"the far side of '{wrapper}' has no ptyvisor on its PATH: install it "
            "there (pip install ptyvisor) to run an agent through it"
        )
    return f"'{wrapper}' ended before ptyvisor started on its far side (status {exit_code})"


# ---------------------------------------------------------------------- far side


def far_side(session: str, token: str, env: Mapping[str, str] = os.environ) -> int:
    """``ptyvisor via-exec SESSION TOKEN``: the hello, the setup line, then the agent
    (this process becomes it). Returns an exit status only when that cannot happen."""
    if not SESSION_ID_PATTERN.fullmatch(session) or not NONCE_PATTERN.fullmatch(token):
        return _fail("via-exec: the session or token is not one ptyvisor gave")
    fd = sys.stdin.fileno()
    if not os.isatty(fd):
        return _fail("via-exec: needs a terminal (ssh -t, docker exec -it, kubectl exec -it)")
    saved = termios.tcgetattr(fd)
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)  # lflags: the line is never shown
    quiet[6] = list(saved[6])
    quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        hello = encode_frame(session, token, {"type": HELLO, "at": int(time.time() * 1000)})
        os.write(sys.stdout.fileno(), hello)
        line = _read_line(fd, time.monotonic() + SETUP_WAIT_SECONDS)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    if line is None:
        return _fail("via-exec: no setup came from the ptyvisor session")
    try:
        setup = ViaSetup.from_line(line)
    except ValueError as bad:
        return _fail(f"via-exec: the setup line is unreadable ({bad})")
    if setup.session != session:
        return _fail("via-exec: the setup is for another session")
    return _exec(setup, env, fd)


def _read_line(fd: int, deadline: float) -> bytes | None:
    data = b""
    while b"\n" not in data and len(data) <= MAX_SETUP_BYTES:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        data += chunk
    return data.split(b"\n", 1)[0]


def _exec(setup: ViaSetup, far: Mapping[str, str], fd: int) -> int:
    from ptyvisor.agents.launch import AGENTS, launch
    from ptyvisor.errors import BadNativeId

    # The far machine's own ptyvisor variables (a server there) are not this session's.
    env = {name: value for name, value in far.items() if not name.startswith("PTYVISOR_")}
    agent = next((name for name in AGENTS if name == setup.agent), None)
    if agent is None:
        return _fail(f"via-exec: this ptyvisor does not know the agent {setup.agent!r}")
    state = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME", "/tmp"), ".local/state")
    session_dir = os.path.join(state, "ptyvisor", "via", setup.session)
    os.makedirs(session_dir, mode=0o700, exist_ok=True)
    try:
        from pathlib import Path

        started = launch(
            agent, setup.args, session_dir=Path(session_dir), resume=setup.resume, env=env
        )
    except BadNativeId as bad:
        return _fail(f"via-exec: {bad}")
    program_env = {
        **env,
        **started.env,
        "PTYVISOR_SESSION": setup.session,
        "PTYVISOR_NONCE": setup.nonce,
        "PTYVISOR_TTY": os.ttyname(fd),
        "PTYVISOR_TTY_ID": str(os.fstat(fd).st_ctime_ns),  # see emit.py
        "PTYVISOR_AGENT": agent,
    }
    try:
        os.execvpe(started.argv[0], started.argv, program_env)
    except OSError as error:
        return _fail(f"via-exec: cannot start {started.argv[0]}: {error.strerror}")


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 1
