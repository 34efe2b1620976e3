"""``ptyvisor emit``: the hook-side writer of activity frames.

Agent hooks run this on every event, so it must be fast (stdlib only, no
argparse, no pydantic) and must never break the agent: outside a ptyvisor
session, or when no terminal can be opened, it does nothing and exits 0.
Only a wrong command line (a bug in the hook configuration) is an error.

The frame is written with a single ``write`` to the session's PTY slave
(``$PTYVISOR_TTY``, else the controlling terminal ``/dev/tty``) so that it
arrives in one piece between the TUI's own writes; ptyvisor strips it from
the output stream and authenticates it with ``$PTYVISOR_NONCE``.

``$PTYVISOR_TTY`` is written only while it is still the session's PTY
(``$PTYVISOR_TTY_ID``, its inode's change time): a hook outside the program's
process session (Codex starts each in one of its own) is not stopped with the
session, and may run on after it, when the kernel has given the same
``/dev/pts/N`` to the next session. The residual risk: a program that changes
the terminal's mode or owner (``mesg n`` on it) changes that time too, and hooks
outside its process session lose the path (one inside it still has ``/dev/tty``).
"""

from __future__ import annotations

import os
import sys
import time

from ptyvisor.wire.frame_encoding import encode_frame, is_nonce, is_session_id

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["MAX_REASON_CHARS", "PHASES", "main", "write_frame"]

PHASES = ("starting", "working", "needs_input", "waiting", "failed", "stopped")
MAX_REASON_CHARS = 4000

ENV_SESSION = "PTYVISOR_SESSION"
ENV_NONCE = "PTYVISOR_NONCE"
ENV_TTY = "PTYVISOR_TTY"
ENV_TTY_ID = "PTYVISOR_TTY_ID"
_FALLBACK_TTY = "/dev/tty"

_USAGE = (
    "usage: ptyvisor emit activity <phase> [--reason TEXT] [--agent NAME]"
    " [--native-session-id ID]\n"
    f"  phases: {', '.join(PHASES)}\n"
)
# Option name -> payload key.
_OPTIONS = {"--reason": "reason", "--agent": "agent", "--native-session-id": "native_session_id"}


class _UsageError(Exception):
    """Command-line mistake: reported on stderr with exit status 2."""


class _HelpRequested(Exception):
    """``-h``/``--help``: print usage to stdout and exit 0."""


def _open_tty(path: str) -> int | None:
    """Open ``path`` for blocking writes if it is a terminal, else None.

    The open itself is non-blocking so a FIFO or modem device can never hang
    the hook; the descriptor is switched back to blocking before writing so a
    momentarily full PTY makes us wait instead of losing (or tearing) the frame.
    O_NOCTTY: a hook must never acquire the terminal as its controlling tty.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not os.isatty(fd):
            os.close(fd)
            return None
        os.set_blocking(fd, True)
    except OSError:
        os.close(fd)
        return None
    return fd


def _still_the_sessions(fd: int, path: str, env: Mapping[str, str]) -> bool:
    """Whether ``fd``, opened at ``path``, is the session's PTY (see the module's
    docstring); only ``$PTYVISOR_TTY`` is checked, and only if its id is known."""
    expected = env.get(ENV_TTY_ID)
    if path != env.get(ENV_TTY) or not expected:
        return True
    try:
        return str(os.fstat(fd).st_ctime_ns) == expected
    except OSError:
        return False


def write_frame(
    payload: Mapping[str, object],
    env: Mapping[str, str] = os.environ,
    encode: Callable[[str, str, Mapping[str, object]], bytes] = encode_frame,
    only_if: Callable[[], bool] | None = None,
) -> bool:
    """Write one activity frame for the session described by ``env``.

    Returns False, without raising, when not in a ptyvisor session, when the
    payload cannot be framed, or when no terminal can be written. ``encode`` lets
    hooks shorten a payload that would not fit instead of losing it.

    ``only_if`` is asked after the terminal is opened and before it is written. A
    process that outlives its hook passes "my program still runs": a running
    program holds its PTY, so a terminal opened while it runs is its own, whereas
    an ended program's ``/dev/pts/N`` may already be the next session's.
    """
    session_id = env.get(ENV_SESSION, "")
    nonce = env.get(ENV_NONCE, "")
    if not is_session_id(session_id) or not is_nonce(nonce):
        return False
    try:
        frame = encode(session_id, nonce, payload)
    except ValueError:
        return False

    paths = [p for p in (env.get(ENV_TTY), _FALLBACK_TTY) if p]
    for path in paths:
        fd = _open_tty(path)
        if fd is None:
            continue
        try:
            if not _still_the_sessions(fd, path, env):
                continue  # another session's by now: perhaps /dev/tty is ours
            if only_if is not None and not only_if():
                return False
            view = memoryview(frame)
            # One write delivers the whole frame on a blocking PTY; the loop only
            # matters if a signal interrupts it part-way.
            while view:
                written = os.write(fd, view)
                view = view[written:]
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
    return False


def _clean(value: str) -> str:
    """Replace undecodable argv bytes (surrogate escapes) so the text can be JSON-encoded."""
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate argv decoding cannot produce
        raw = value.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace")


def _parse(argv: list[str]) -> dict[str, object]:
    """Hand-rolled parser (argparse alone would double the start-up time)."""
    if not argv or argv[0] != "activity":
        raise _UsageError("expected the 'activity' subcommand")
    phase: str | None = None
    options: dict[str, str] = {}
    args = iter(argv[1:])
    positional_only = False
    for arg in args:
        if positional_only:
            pass
        elif arg == "--":
            positional_only = True
            continue
        elif arg in ("-h", "--help"):
            raise _HelpRequested
        elif arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name not in _OPTIONS:
                raise _UsageError(f"unknown option {name}")
            if not eq:
                nxt = next(args, None)
                if nxt is None:
                    raise _UsageError(f"option {name} needs a value")
                value = nxt
            options[_OPTIONS[name]] = _clean(value)
            continue
        if phase is not None:
            raise _UsageError(f"unexpected argument {arg!r}")
        phase = arg
    if phase is None:
        raise _UsageError("missing <phase>")
    if phase not in PHASES:
        raise _UsageError(f"unknown phase {phase!r}")

    payload: dict[str, object] = {
        "type": "activity",
        "phase": phase,
        "at": time.time_ns() // 1_000_000,
    }
    if "agent" in options:
        payload["agent"] = options["agent"]
    if "reason" in options:
        payload["reason"] = options["reason"][:MAX_REASON_CHARS]
    if "native_session_id" in options:
        payload["native_session_id"] = options["native_session_id"]
    return payload


def main(argv: list[str]) -> int:
    """Entry point for ``ptyvisor emit``; ``argv`` excludes the word ``emit``."""
    try:
        if argv and argv[0] in ("-h", "--help"):
            raise _HelpRequested
        payload = _parse(argv)
    except _HelpRequested:
        sys.stdout.write(_USAGE)
        return 0
    except _UsageError as exc:
        sys.stderr.write(f"ptyvisor emit: {exc}\n{_USAGE}")
        return 2
    write_frame(payload)
    return 0
