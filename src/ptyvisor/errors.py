"""Every exception ptyvisor raises, under one root, split by whose fault it is.

```text
    PtyvisorError
    ├── PeerError             what another party sent is wrong: refused as a value at its
    │   │                     boundary (a typed error, a counter), never past it
    │   ├── BadJSON               JSON a peer sent that cannot be carried (jsontext)
    │   ├── BadLinkMessage        not a message of the keeper's link (wire.link)
    │   │   └── Truncated             its descriptors were lost: no room for them
    │   ├── BadControlMessage     not a message of the control socket (wire.control)
    │   ├── BadAnswer             an answer that does not fit its interaction
    │   ├── BadNativeId           a conversation id not shaped like its agent's
    │   ├── BadReference          a session reference naming none, or several
    │   ├── BadIdentity           stored identity JSON that cannot be read back
    │   └── UnreadableRecord      a records row that cannot be read back
    ├── Refused               the request is fine; the state of things says no
    │   ├── UnknownSession        no such session
    │   ├── NotResumable          it cannot be started again (the message says why)
    │   ├── NoRecords             the server has no records, or cannot read them now
    │   ├── Gone                  no hook waits for an answer to that interaction
    │   ├── SpawnError            the program cannot be started (the reason says why)
    │   ├── PromptNotTaken        a prompt the agent did not confirm taking (says why)
    │   └── WorktreeKept          a session's worktree has changes: kept, not removed
    ├── LocalError            this machine or this process failed us
    │   ├── KeeperGone            the keeper is gone: nothing can be started or reaped
    │   ├── RingError             a session's shared-memory ring cannot be used
    │   ├── RecordsUnavailable    the records cannot be read now (locked, broken)
    │   └── UnsafeDirectory       a directory others can write to (also an OSError)
    └── ClientError           what a client of the server (the Python API, the CLI) meets
        ├── ServerError           the server answered with an ``error`` (its ``code``)
        ├── Disconnected          the connection to the server is gone
        ├── SessionVanished       the session went away while it was waited for
        ├── SessionGone           the session an attached terminal showed is gone
        ├── WaitTimeout           a wait's condition did not hold in time (also a
        │                         TimeoutError)
        ├── HostUnreachable       ssh:// could not reach ptyvisor there (also a
        │                         ConnectionError): what ssh or dial-stdio said
        └── BadContext            no context of that name, or a name or URL that
                                  cannot be one (also a ValueError)
```

A script catches `ClientError` (or one of its kinds) from here alone. The server turns
`Refused` and `PeerError` into wire error codes at one place (server.connection); a
`LocalError` is logged and costs at most the connection or session it happened in.

Stdlib only, and nothing imported: hooks and the keeper use it.
"""

from __future__ import annotations

__all__ = [
    "BadAnswer",
    "BadContext",
    "BadControlMessage",
    "BadIdentity",
    "BadJSON",
    "BadLinkMessage",
    "BadNativeId",
    "BadReference",
    "ClientError",
    "Disconnected",
    "Gone",
    "HostUnreachable",
    "KeeperGone",
    "LocalError",
    "NoRecords",
    "NotResumable",
    "PeerError",
    "PromptNotTaken",
    "PtyvisorError",
    "RecordsUnavailable",
    "Refused",
    "RingError",
    "ServerError",
    "SessionGone",
    "SessionVanished",
    "SpawnError",
    "Truncated",
    "UnknownSession",
    "UnreadableRecord",
    "UnsafeDirectory",
    "WaitTimeout",
    "WorktreeKept",
]


class PtyvisorError(Exception):
    """The root: everything ptyvisor raises on purpose."""


class PeerError(PtyvisorError, ValueError):
    """Another party (a client, a program's frame, a hook, the keeper, a stored row)
    sent something that is not acceptable; refused at the boundary where it arrived."""


class Refused(PtyvisorError):
    """A well-formed request the present state refuses."""


class LocalError(PtyvisorError):
    """This process or this machine failed (not the peer's doing)."""


class ClientError(PtyvisorError):
    """What a client of the server (the Python API, the CLI) may catch."""


# ---------------------------------------------------------------------- peers


class BadJSON(PeerError):
    """Not acceptable JSON. ``syntax``: not JSON at all (or nested too deeply), as
    opposed to JSON whose text cannot be carried (a lone surrogate)."""

    def __init__(self, reason: str, *, syntax: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.syntax = syntax


class BadLinkMessage(PeerError):
    """Not a message of the keeper's link: unknown ``op``, a field missing or of the
    wrong type, the wrong number of descriptors. ``message``: what it was, when that
    much could be read (so that a request waiting for it can be answered)."""

    def __init__(self, reason: str, message: object = None) -> None:
        super().__init__(reason)
        self.message = message


class Truncated(BadLinkMessage):
    """A link message whose descriptors did not all arrive: the receiver had no room
    for them (``MSG_CTRUNC``, out of descriptors); the ones that came are closed."""

    def __init__(self, message: object = None) -> None:
        super().__init__("the server ran out of file descriptors", message)


class BadControlMessage(PeerError):
    """Not the message expected on the control socket."""


class BadAnswer(PeerError):
    """The answer does not fit the interaction; the message names the problem."""


class BadNativeId(PeerError):
    """A conversation id that is not shaped like the agent's own (see untrusted.py):
    refused rather than put into the agent's argument vector."""


class BadReference(PeerError):
    """A session reference that names no session, or several; ``code`` is the wire
    error it is (``unknown_session``, ``bad_request``), the message lists candidates."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class BadIdentity(PeerError):
    """Stored identity JSON that cannot be read back (a corrupt or foreign record)."""


class UnreadableRecord(PeerError):
    """A records row that the server's own writes could not have made."""


# ---------------------------------------------------------------------- refusals


class UnknownSession(Refused, KeyError):
    """No session has that id (it never existed or was closed)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown session"


class NotResumable(Refused):
    """The session cannot be started again; the message says why."""


class NoRecords(Refused):
    """The server runs without its session records, or cannot read them now."""


class Gone(Refused):
    """No request with that interaction id is waiting.

    ``terminal_only``: it is the session's pending interaction, but no hook ever waited
    for a remote answer to it (a Codex question, Codex with remote answers off), so
    only the terminal can answer it — unlike one answered, withdrawn or timed out.
    """

    def __init__(self, interaction_id: str, *, terminal_only: bool = False) -> None:
        super().__init__(interaction_id)
        self.terminal_only = terminal_only


class SpawnError(Refused):
    """The program cannot be started; the message says why (for the client)."""


class PromptNotTaken(Refused):
    """The agent did not confirm taking a prompt in time: not ready, its turn did not
    start, or it ended (``exited``); the message says which."""

    def __init__(self, message: str, *, exited: bool = False) -> None:
        super().__init__(message)
        self.exited = exited


class WorktreeKept(Refused):
    """A session was closed but its worktree kept: it has changes (the message says
    where, and how to remove it)."""


# ---------------------------------------------------------------------- local


class KeeperGone(LocalError):
    """The keeper is gone: without it nothing can be started or reaped."""


class RingError(LocalError):
    """A ring that cannot be used (not one of ours, or damaged)."""


class RecordsUnavailable(LocalError):
    """The records cannot be read now (locked by another process past the busy
    timeout, a broken file): what asked goes on without them."""


class UnsafeDirectory(LocalError, OSError):
    """A directory others can write to (see privatefiles.directory_problem)."""


# ---------------------------------------------------------------------- clients


class ServerError(ClientError):
    """The server answered a request with an ``error`` message: its ``code`` (see
    protocol.ErrorCode) and ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Disconnected(ClientError):
    """The connection to the server is gone."""


class SessionVanished(ClientError):
    """The session went away (closed) while it was being waited for."""


class SessionGone(ClientError):
    """The session a terminal was attached to is gone (closed, or forgotten across a
    restart); ``args[0]`` is its id."""


class WaitTimeout(ClientError, TimeoutError):
    """`Session.wait_for` did not see its condition in time, or it can no longer hold."""


class HostUnreachable(ClientError, ConnectionError):
    """An ``ssh://`` server could not be reached: what ``ssh`` or the far end's
    ``ptyvisor dial-stdio`` said (client/ssh.py)."""


class BadContext(ClientError, ValueError):
    """No context of that name, or a name or URL that cannot be one (client/contexts.py)."""
