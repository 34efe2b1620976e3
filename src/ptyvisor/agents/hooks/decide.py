"""The hook side of the control socket: ask ptyvisor for a client's decision and hold.

Stdlib only (it runs in every approval hook). The hook sends the interaction it
has just framed — normalised and masked, never the agent's raw payload — with the
session id and nonce, then blocks until ptyvisor writes one decision line. It fails
open: no ``PTYVISOR_CONTROL``, a socket that is missing or does not accept within
``CONNECT_TIMEOUT``, a refusal (closed without a decision) or a malformed reply all
give None, and the agent shows its own prompt.

A main-turn Stop hook likewise takes the session's queued message
(`continue_with_queued_message`).
"""

from __future__ import annotations

import os
import sys
import time
from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.errors import BadControlMessage
from ptyvisor.wire import cjson
from ptyvisor.wire.control import (
    MAX_LINE,
    Decision,
    Delivered,
    QueuedMessage,
    Request,
    TakeMessage,
    read,
)

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    import socket  # imported where a socket is opened: 3 ms most hook runs never need
    from typing import Any

ENV_CONTROL = "PTYVISOR_CONTROL"
CONNECT_TIMEOUT = 0.5
TAKE_TIMEOUT = 2.0
"""How long a Stop hook waits for the queued message (ptyvisor answers at once)."""


def request_decision(
    interaction: Mapping[str, object],
    *,
    agent_id: str | None = None,
    env: Mapping[str, str] = os.environ,
) -> Decision | None:
    """Send ``interaction`` (asked by subagent ``agent_id``, if any) to the control
    socket and wait (indefinitely) for the decision."""
    path = env.get(ENV_CONTROL, "")
    session, nonce = env.get("PTYVISOR_SESSION", ""), env.get("PTYVISOR_NONCE", "")
    if not (path and session and nonce):
        return None
    line = Request(session, nonce, dict(interaction), agent_id).line()
    if len(line) > MAX_LINE:
        return None
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(path)
            sock.sendall(line)
            sock.settimeout(None)  # hold: the user may be away for a long time
            reply = _read_line(sock)
    except OSError:
        return None
    return _parse(reply) if reply is not None else None


class TakenMessage:
    """A queued message taken from ptyvisor; `delivered` once the agent has it, else
    (the connection just closes) ptyvisor puts it back."""

    def __init__(self, sock: socket.socket, text: str) -> None:
        self._sock = sock
        self.text = text

    def delivered(self) -> None:
        try:
            self._sock.sendall(Delivered().line())
        except OSError:
            pass
        finally:
            self._sock.close()


def take_message(env: Mapping[str, str] = os.environ) -> TakenMessage | None:
    """The session's queued message (see ``ptyvisor send``), or None. Fails open fast."""
    path = env.get(ENV_CONTROL, "")
    session, nonce = env.get("PTYVISOR_SESSION", ""), env.get("PTYVISOR_NONCE", "")
    if not (path and session and nonce):
        return None
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(path)
        sock.sendall(TakeMessage(session, nonce).line())
        sock.settimeout(TAKE_TIMEOUT)
        reply = _read_line(sock)
        text = read(cjson.loads(reply), QueuedMessage).text if reply is not None else None
    except (OSError, ValueError, RecursionError):  # BadControlMessage is a ValueError
        text = None
    if not isinstance(text, str) or not text:
        sock.close()
        return None
    return TakenMessage(sock, text)


def continue_with_queued_message(event: Mapping[str, Any], agent: str) -> None:
    """The agent continues with the session's queued message as its next instruction.

    Claude Code and Codex read the same Stop-hook output, ``{"decision": "block",
    "reason": text}``: the stop is refused and ``reason`` becomes the next prompt
    (Claude: shared/anchors.md; Codex 0.171: its ``stop.command.output`` schema, and
    a block without a non-empty reason is an error). Not for a subagent's stop, and
    not when ``stop_hook_active`` (the agent already continues because of a Stop
    hook: no loops) — the message then stays queued. Printed before the take is
    acknowledged, so a hook that dies first leaves it queued; the ``working`` frame
    after it undoes the ``waiting`` the Stop frame just reported.
    """
    if event.get("agent_id") or event.get("stop_hook_active"):
        return
    taken = take_message()
    if taken is None:
        return
    sys.stdout.write(cjson.dumps({"decision": "block", "reason": taken.text}, ensure_ascii=False))
    sys.stdout.flush()
    taken.delivered()
    from ptyvisor.agents.emit import write_frame
    from ptyvisor.agents.hooks.normalise import activity, fit

    write_frame(activity(agent, "working", time.time_ns() // 1_000_000, event), encode=fit)


def _read_line(sock: socket.socket) -> bytes | None:
    received = bytearray()
    while b"\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            return None  # closed without a decision: refused or withdrawn
        received += chunk
        if len(received) > MAX_LINE + 1:
            return None
    return bytes(received.split(b"\n", 1)[0])


def _parse(line: bytes) -> Decision | None:
    try:
        decision: Decision = read(cjson.loads(line), Decision)
    except (ValueError, BadControlMessage, RecursionError):  # nested past the limit
        return None
    return decision
