"""The WebSocket wire protocol: one pydantic model per message type.

Text messages are JSON objects discriminated by ``type``; binary messages are raw
terminal bytes of the session the connection is attached to (output from the
server, input from the client). A connection attaches at most one session at a
time, so binary messages need no header. The server's binary stream is contiguous:
a client's position is the ``seq`` of the last ``attached``/``snapshot`` message plus
the bytes received since, which is what it passes as ``since`` when it reconnects.

``ptyvisor schema`` prints the JSON Schema of both unions for other languages.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import Base64Bytes, BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from ptyvisor.agents.activity import Activity, ActivityPhase
from ptyvisor.agents.activity import AgentName as AgentLabel
from ptyvisor.agents.interaction import Interaction
from ptyvisor.agents.launch import AgentName
from ptyvisor.terminal.keys import MAX_KEY_CHARS, MAX_KEYS_CHARS
from ptyvisor.wire.frames import SESSION_ID_PATTERN
from ptyvisor.wire.jsontext import from_raw

PROTOCOL_VERSION = 1
MAX_TEXT_MESSAGE = 1024 * 1024
"""Largest text or binary message a client may send; bigger ones close nothing but get an error."""

SessionId = Annotated[str, Field(pattern=f"^(?:{SESSION_ID_PATTERN.pattern})$")]
MAX_SAFE_INTEGER = 2**53 - 1
"""Largest integer every client can hold exactly (a JavaScript number)."""
RequestId = (
    Annotated[str, Field(max_length=128)]
    | Annotated[int, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
    | None
)
REQUEST_ID = TypeAdapter[RequestId](RequestId)
Cols = Annotated[int, Field(ge=1, le=1000)]
Rows = Annotated[int, Field(ge=1, le=500)]
Ended = Literal["exited", "killed", "server", "lost"]
SignalName = Literal["HUP", "INT", "QUIT", "TERM", "KILL", "USR1", "USR2", "CONT", "STOP", "WINCH"]


SessionName = Annotated[str, Field(min_length=1, max_length=128)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Request(_Model):
    req_id: RequestId = Field(default=None, description="Echoed in the reply or error")


# --------------------------------------------------------------------------- state


class TermSize(_Model):
    cols: Cols
    rows: Rows


class ProcessState(_Model):
    """The process axis: ``starting`` → ``running`` → ``exited``."""

    state: Literal["starting", "running", "exited"]
    pid: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    exited_at: int | None = Field(default=None, description="Unix ms")
    ended: Ended | None = Field(
        default=None,
        description="How it came to end: exited (by itself), killed (a client asked: kill "
        "or close), server (stopped with the server), lost (it ended while no server ran, "
        "a reboot say: exit_code and signal are unknown)",
    )


class RawNames(_Model):
    """The exact bytes (base64) of names that are not valid UTF-8: a directory or
    argument named in another encoding. The summary's own fields show them with
    U+FFFD; these give them back exactly (a list holds null for an exact item)."""

    argv: list[str | None] | None = None
    command: list[str | None] | None = None
    cwd: str | None = None


class SessionSummary(_Model):
    """What a dashboard shows for one session."""

    id: SessionId
    name: str
    argv: list[str] = Field(description="What runs, including an agent's extension flags")
    command: list[str] = Field(
        default_factory=list,
        description="What was asked for, for display: the argv of a plain command; for an "
        "agent, its program and the user's own arguments (no extension flags)",
    )
    cwd: str
    agent: str | None = None
    process: ProcessState
    activity: Activity
    pending_interaction: Interaction | None = None
    answerable: bool = Field(
        default=False,
        description="Whether a client can answer the pending interaction (see answer): an "
        "agent hook is waiting for the answer. False means it can only be answered in the "
        "terminal (a Codex question, Codex with remote answers off, a timed-out wait)",
    )
    queued_message: str | None = Field(
        default=None, description="The message queued for the agent's next Stop (see send)"
    )
    takes_messages: bool = Field(
        default=True,
        description="Whether send can queue a message for this session: False for an agent "
        "whose extension cannot hand one over at a turn's end (OpenCode, Kilo, Pi, oh-my-pi, "
        "Cline), which refuses it with not_supported",
    )
    raw: RawNames | None = Field(
        default=None,
        description="Exact bytes of argv, command and cwd when any is not valid UTF-8",
    )
    past: bool = Field(
        default=False,
        description="A session from the records (list with all): no longer served, no "
        "program runs; it can be resumed (see resume)",
    )
    worktree: str | None = Field(
        default=None, description="The git worktree it was started in (spawn's worktree)"
    )
    resumed_from: str | None = Field(
        default=None, description="The session this one resumed (see resume)"
    )
    recording: str | None = Field(
        default=None,
        description="The asciicast v2 file the session is recorded to (spawn record, serve "
        "--record); older parts beside it as <id>.1.cast …",
    )
    clients: int
    created_at: int = Field(description="Unix ms")
    size: TermSize


class TerminalModesModel(_Model):
    alternate_screen: bool
    application_cursor_keys: bool
    application_keypad: bool
    bracketed_paste: bool
    mouse_tracking: Literal["off", "x10", "normal", "button", "any"]
    mouse_encoding: Literal["default", "utf8", "sgr", "urxvt", "sgr_pixels"]
    focus_events: bool
    auto_wrap: bool
    cursor_visible: bool


class Screen(_Model):
    """The headless terminal's screen, as terminal output that redraws it on a fresh terminal."""

    ansi: str
    cursor_row: int
    cursor_col: int
    title: str
    modes: TerminalModesModel


class Snapshot(_Model):
    session: SessionSummary
    seq: int = Field(description="Output seq of the screen; live bytes follow from here")
    size: TermSize
    screen: Screen


class SessionStats(_Model):
    output_bytes: int
    replay_start: int
    render_lag: int
    render_skipped: int
    frames_applied: int = Field(description="Authentic frames that took effect")
    frames_ignored: int = Field(
        default=0,
        description="Authentic frames older than what was applied: they changed nothing",
    )
    frames_rejected: dict[str, int]
    client_queues: list[int] = Field(description="Bytes queued for each attached client")


# --------------------------------------------------------------------------- client → server


class ListSessions(_Request):
    type: Literal["list"]
    all: bool = Field(
        default=False,
        description="Also the past sessions the records keep (marked past), newest first",
    )


class WatchSessions(_Request):
    """Subscribe to the session-list stream: a ``sessions`` message on every change."""

    type: Literal["watch_sessions"]


class UnwatchSessions(_Request):
    type: Literal["unwatch_sessions"]


WrapperWord = Annotated[str, Field(max_length=4096)]


class Spawn(_Request):
    """Start a program; with ``agent``, ``argv`` holds the agent's own arguments and
    ptyvisor starts the agent with its extension installed for this session."""

    type: Literal["spawn"]
    argv: Annotated[list[str], Field(max_length=256)] = []
    argv_bytes: Annotated[list[Base64Bytes], Field(max_length=256)] | None = Field(
        default=None,
        description="Instead of argv: each argument's exact bytes (base64), for arguments "
        "that are not valid UTF-8",
    )
    agent: AgentName | None = None
    cwd: str | None = None
    cwd_bytes: Base64Bytes | None = Field(
        default=None, description="Instead of cwd: its exact bytes (base64)"
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Added to the program's environment (docs: Environment of a program)",
    )
    via: Annotated[list[WrapperWord], Field(min_length=1, max_length=32)] | None = Field(
        default=None,
        description="With `agent`: start it through this wrapper (`ssh -t host`, "
        "`docker exec -it box`), which must run `ptyvisor` on its far side; the agent "
        "reports from there through the terminal (docs: Agents through a "
        "wrapper)",
    )

    worktree: Annotated[str, Field(max_length=64)] | None = Field(
        default=None,
        description="Start it in a new git worktree of the repository holding `cwd`, on "
        "a new branch `ptyvisor/<name>`; this is the name (empty: the session's id). "
        "Resume starts in it again; close's `remove_worktree` removes it",
    )

    @model_validator(mode="after")
    def _command_fits_exec(self) -> Spawn:
        if self.via is not None and self.agent is None:
            raise ValueError("via needs an agent: a plain command takes the wrapper in argv")
        if self.via is not None and any("\0" in word for word in self.via):
            raise ValueError("via holds a NUL character")
        if self.argv_bytes is not None and self.argv:
            raise ValueError("give argv or argv_bytes, not both")
        if self.cwd_bytes is not None and self.cwd is not None:
            raise ValueError("give cwd or cwd_bytes, not both")
        argv = self.argv or [from_raw(arg) for arg in self.argv_bytes or ()]
        if not argv and self.agent is None:
            raise ValueError("argv must name a command unless an agent is given")
        if any("\0" in arg for arg in argv):
            raise ValueError("an argument holds a NUL character")
        if (self.cwd is not None and "\0" in self.cwd) or b"\0" in (self.cwd_bytes or b""):
            raise ValueError("cwd holds a NUL character")
        for key, value in self.env.items():
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"env: {key!r} is not a variable name (empty, '=' or NUL)")
            if "\0" in value:
                raise ValueError(f"env: the value of {key} holds a NUL character")
        return self

    @property
    def command_argv(self) -> list[str]:
        """argv, from whichever field gave it (bytes as ``os.fsdecode`` names them)."""
        return self.argv or [from_raw(arg) for arg in self.argv_bytes or ()]

    @property
    def working_directory(self) -> str | None:
        return from_raw(self.cwd_bytes) if self.cwd_bytes is not None else self.cwd

    name: SessionName | None = None
    cols: Cols = 80
    rows: Rows = 24
    record: bool = Field(
        default=False,
        description="Record the session as asciicast v2 (also when serve --record is off)",
    )


class Attach(_Request):
    """Attach; with ``since`` the client gets exactly the bytes it missed if still held."""

    type: Literal["attach"]
    session: SessionId
    since: Annotated[int, Field(ge=0)] | None = None
    answers_queries: bool = Field(
        default=False,
        description="True for a terminal emulator that answers DA/DSR itself; "
        "while one is attached the server stays silent",
    )
    scrollback: bool = Field(
        default=True,
        description="Whether a snapshot sent instead of a replay includes the scrollback "
        "(false to redraw a terminal that already shows it)",
    )
    view_only: bool = Field(
        default=False,
        description="Watch only: input and resize from this client get view_only errors, "
        "and it never changes the program's size",
    )
    cols: Cols | None = Field(
        default=None,
        description="The size this client would like (with rows). The program takes it "
        "now only if no other client holds the size; this client's next input takes it "
        "back (the size follows the client that last typed or resized)",
    )
    rows: Rows | None = None

    @model_validator(mode="after")
    def _size_is_whole(self) -> Attach:
        if (self.cols is None) != (self.rows is None):
            raise ValueError("cols and rows come together")
        return self


class Detach(_Request):
    type: Literal["detach"]


class Input(_Request):
    type: Literal["input"]
    session: SessionId
    data: str


class Resize(_Request):
    """This client's window is now ``cols`` x ``rows``: the program takes that size
    (the size follows the client that last typed or resized, as tmux's ``latest``).
    With ``claim: false`` (a pane whose layout moved, not a window the user resized)
    it is only the size this client would like: taken only if it holds the size."""

    type: Literal["resize"]
    session: SessionId
    cols: Cols
    rows: Rows
    claim: bool = True


class SendSignal(_Request):
    type: Literal["signal"]
    session: SessionId
    signal: SignalName


class Kill(_Request):
    """Terminate the session's process group (HUP, then KILL after a grace period)."""

    type: Literal["kill"]
    session: SessionId


class Close(_Request):
    """Kill if still running, then forget the session."""

    type: Literal["close"]
    session: SessionId
    remove_worktree: bool = Field(
        default=False,
        description="Also remove the worktree it was started in (spawn's `worktree`); one "
        "with modified or untracked files is kept, and the reply is the error "
        "`worktree_kept` saying where (the session is closed either way)",
    )


class RequestSnapshot(_Request):
    type: Literal["snapshot"]
    session: SessionId
    scrollback: bool = Field(
        default=True, description="Also draw the scrollback above the screen (as attach)"
    )


class GetStats(_Request):
    type: Literal["stats"]
    session: SessionId


class Answer(_Request):
    """Answer a pending interaction whose agent hook is waiting on the control socket.

    An approval needs ``behavior`` (``suggestion``: index of a permission suggestion
    to apply with an allow; ``message``: the reason given with a deny, at most 4000
    characters). A question is answered with ``answers``: per question id, a list of
    option labels or a free text (at most 4000 characters), or declined with
    ``behavior: "deny"``. Errors: ``gone`` when nothing with that id is waiting,
    ``not_answerable`` when it is the session's pending interaction but no hook waits
    for a remote answer (it can only be answered in the terminal), ``bad_request``
    when the answer does not fit the interaction.
    """

    type: Literal["answer"]
    session: SessionId
    interaction: Annotated[str, Field(min_length=1, max_length=256)]
    behavior: Literal["allow", "deny"] | None = None
    message: str | None = None
    suggestion: int | None = None
    answers: dict[str, list[str] | str] | None = None


class SendMessage(_Request):
    """Queue one message for a session whose agent is working on a turn: its next Stop
    hook takes it and the agent continues with it as the next instruction. A newer
    message replaces the queued one. Errors: ``bad_request`` (blank, or longer than
    4000 characters), ``not_running`` (the agent is not working on a turn),
    ``not_supported`` (its extension cannot hand a message over: see
    `SessionSummary.takes_messages`)."""

    type: Literal["send"]
    session: SessionId
    message: str


class Resume(_Request):
    """Start a session again: an agent on its own conversation (its CLI's resume flag
    with the native_session_id it reported), in the same working directory, with the
    same name and size, linked by resumed_from. A plain command has no conversation:
    it is started again with the same argv only with ``rerun``. Errors:
    ``unknown_session``, ``not_resumable`` (still running, or nothing to resume without
    ``rerun``), ``spawn_failed``."""

    type: Literal["resume"]
    session: SessionId
    rerun: bool = False


class Unsend(_Request):
    """Delete the session's queued message, if any."""

    type: Literal["unsend"]
    session: SessionId


class SendKeys(_Request):
    """Keys by name and text, as tmux's ``send-keys`` takes them (``keynames``):
    ``["ls", "Enter"]``, ``["C-c"]``, ``["Up"]``. Keys are encoded for the program's
    current modes (application cursor keys); text with a line break, or all text with
    ``paste``, goes as a bracketed paste when the program enabled it; ``literal``
    sends every argument as text. Errors: ``view_only``, ``session_exited``."""

    type: Literal["send_keys"]
    session: SessionId
    keys: Annotated[
        list[Annotated[str, Field(max_length=MAX_KEY_CHARS)]], Field(min_length=1, max_length=1000)
    ]
    literal: bool = False
    paste: bool = False

    @model_validator(mode="after")
    def _bounded(self) -> SendKeys:
        if sum(map(len, self.keys)) > MAX_KEYS_CHARS:
            raise ValueError(f"keys hold more than {MAX_KEYS_CHARS} characters in all")
        return self


class Prompt(_Request):
    """Type ``text`` as an agent's next prompt and confirm it was taken: wait until the
    agent is ready for input (``ready_wait``), type it (a bracketed paste where the
    program asked for that) and Enter, then wait for the agent's own report of taking
    it, matched by digest (``confirm_wait``); a prompt left in the input box gets
    another Enter, the text is never typed into the box twice. Replies
    ``prompt_accepted``; errors: ``prompt_not_taken`` (the message says why),
    ``session_exited``, ``view_only``, ``bad_request`` (not an agent)."""

    type: Literal["prompt"]
    session: SessionId
    text: Annotated[str, Field(min_length=1, max_length=MAX_KEYS_CHARS)]
    ready_wait: Annotated[float, Field(ge=0, le=3600)] = 120.0
    confirm_wait: Annotated[float, Field(gt=0, le=600)] = 20.0

    @model_validator(mode="after")
    def _has_words(self) -> Prompt:
        if not self.text.split():
            raise ValueError("text is only whitespace")
        return self


class Rename(_Request):
    """Give the session another name (shown everywhere, kept across restarts and in
    the records; a name is also a session reference on the command line)."""

    type: Literal["rename"]
    session: SessionId
    name: SessionName


class Capture(_Request):
    """The screen as text rows (trailing blanks trimmed), or with SGR colours
    (``ansi``); with the last ``scrollback`` lines above it (-1: all of them)."""

    type: Literal["capture"]
    session: SessionId
    scrollback: Annotated[int, Field(ge=-1)] = 0
    ansi: bool = False


class Export(_Request):
    """What the session's replay log still holds (``--replay-bytes``, the last 2 MiB of
    output by default), as an asciicast v2 file with the activity changes as markers.
    Errors: ``unknown_session`` (a past session has no log left)."""

    type: Literal["export"]
    session: SessionId


class GetTimeline(_Request):
    """The session's activity transitions, live or past, from the server's records
    (the last ``TIMELINE_LIMIT`` of them). Errors: ``unknown_session``, ``no_records``
    (the server could not open its records)."""

    type: Literal["timeline"]
    session: SessionId


class NotifyTest(_Request):
    """Send a test notification to every target the server notifies (``serve --notify``,
    the notify file); the reply is ``notify_tested``."""

    type: Literal["notify_test"]


ClientMessage = Annotated[
    ListSessions
    | WatchSessions
    | UnwatchSessions
    | Spawn
    | Attach
    | Detach
    | Input
    | Resize
    | SendSignal
    | Kill
    | Close
    | RequestSnapshot
    | GetStats
    | Answer
    | SendMessage
    | Unsend
    | Resume
    | GetTimeline
    | SendKeys
    | Prompt
    | Capture
    | Rename
    | Export
    | NotifyTest,
    Field(discriminator="type"),
]
CLIENT_MESSAGE = TypeAdapter[ClientMessage](ClientMessage)
CLIENT_MESSAGE_TYPES: frozenset[str] = frozenset(
    get_args(model.model_fields["type"].annotation)[0]
    for model in get_args(get_args(ClientMessage)[0])
)
"""Every ``type`` a client may send, to tell an unknown type from a malformed message."""


# --------------------------------------------------------------------------- server → client


class Hello(_Model):
    type: Literal["hello"] = "hello"
    protocol: int = PROTOCOL_VERSION
    server_version: str
    agents: list[AgentLabel] = Field(
        default_factory=list,
        description="Agent names that spawn's `agent` accepts. Names, not a closed set: a "
        "newer server offers agents an older client does not know, and still greets it",
    )
    started_at: int = Field(
        default=0,
        description="Unix ms when this server process started: it changes when the server "
        "restarts (its sessions and their programs do not)",
    )
    scrollback: int = Field(
        default=0,
        ge=0,
        description="Lines of scrollback each session's terminal keeps here, so as many as a "
        "snapshot (a cold attach) brings: a frontend that keeps as many shows the same "
        "history after a reload as before it (0: not said, an older server)",
    )


class Sessions(_Model):
    """Reply to ``list``, and every push of the session-list stream."""

    type: Literal["sessions"] = "sessions"
    req_id: RequestId = None
    sessions: list[SessionSummary]


class PromptAccepted(_Model):
    """The agent reported taking the prompt (see prompt), at ``at`` (Unix ms)."""

    type: Literal["prompt_accepted"] = "prompt_accepted"
    req_id: RequestId = None
    session: SessionId
    at: int


class Spawned(_Model):
    type: Literal["spawned"] = "spawned"
    req_id: RequestId = None
    session: SessionSummary


class Attached(_Model):
    """Binary output from ``seq`` on follows. ``replay`` says how the client catches up:
    ``exact`` — the next binary bytes are exactly [since, now); ``snapshot`` — draw
    ``snapshot.screen.ansi`` on a reset terminal first. ``truncated`` is true when a
    ``since`` was asked for but those bytes are gone."""

    type: Literal["attached"] = "attached"
    req_id: RequestId = None
    session: SessionSummary
    seq: int
    live_seq: int = Field(
        description="Where live output begins: bytes before it are replay. Terminal "
        "queries in replayed bytes were answered when they were live (by the server or "
        "another client), so a client that answers queries must not answer them again "
        "(see replay.py)"
    )
    replay: Literal["exact", "snapshot"]
    truncated: bool
    snapshot: Snapshot | None = None


class SnapshotMessage(_Model):
    """A snapshot asked for (``requested``) or forced on a client that fell too far
    behind (``lagging``): for ``lagging`` the client resets its terminal, draws the
    screen, and the binary stream continues from ``snapshot.seq``."""

    type: Literal["snapshot"] = "snapshot"
    req_id: RequestId = None
    reason: Literal["requested", "lagging"]
    snapshot: Snapshot


ActivityField = Literal[
    "phase",
    "since",
    "reason",
    "agent",
    "native_session_id",
    "source",
    "pending_interaction",
    "answerable",
]


class ActivityChanged(_Model):
    """The activity axis changed: sent only on a real change, which ``changed`` names."""

    type: Literal["activity"] = "activity"
    session: SessionId
    activity: Activity
    pending_interaction: Interaction | None = None
    answerable: bool = Field(
        default=False, description="Whether a client can answer the pending interaction"
    )
    changed: list[ActivityField] = Field(
        default_factory=list,
        description="What differs from the previous activity event for this session (all "
        "of it for the first): a repeated phase says what else changed",
    )


class ProcessChanged(_Model):
    type: Literal["process"] = "process"
    session: SessionId
    process: ProcessState


class Resized(_Model):
    type: Literal["resized"] = "resized"
    session: SessionId
    size: TermSize


class SessionClosed(_Model):
    type: Literal["closed"] = "closed"
    session: SessionId


class Stats(_Model):
    type: Literal["stats"] = "stats"
    req_id: RequestId = None
    session: SessionId
    stats: SessionStats


class Transition(_Model):
    """The activity became ``phase`` at ``at`` (ms since the epoch) and stayed so
    until the next transition's ``at`` (the last one: until now, or the exit)."""

    at: int
    phase: ActivityPhase
    reason: str | None = None


class Timeline(_Model):
    type: Literal["timeline"] = "timeline"
    req_id: RequestId = None
    session: SessionId
    transitions: list[Transition]
    ended_at: int | None = Field(
        default=None, description="When the program exited (ms), null while it runs"
    )


class Exported(_Model):
    type: Literal["exported"] = "exported"
    req_id: RequestId = None
    session: SessionId
    asciicast: str = Field(description="The asciicast v2 file's text (NDJSON)")


EXPORT_SLICE = 64 * 1024
"""Characters of a cast encoded per call (see `exported_json`)."""


def exported_json(req_id: str | int | None, session: str, asciicast: str) -> str:
    """The `Exported` message's JSON, the cast escaped a slice at a time: pydantic (or
    ``json.dumps``) encodes a 12 MB text in one call of some 45 ms that holds the
    interpreter, so a worker thread doing it would stall the event loop that long.
    Escaping is per character, so the slices' escapes joined are the whole's."""
    head = Exported(req_id=req_id, session=session, asciicast="").model_dump_json()
    assert head.endswith('"asciicast":""}')
    body = "".join(
        json.dumps(asciicast[start : start + EXPORT_SLICE], ensure_ascii=False)[1:-1]
        for start in range(0, len(asciicast), EXPORT_SLICE)
    )
    return f'{head[:-3]}"{body}"}}'


class Captured(_Model):
    """A session's screen as text, as of ``seq`` (the output it has shown)."""

    type: Literal["captured"] = "captured"
    req_id: RequestId = None
    session: SessionId
    size: TermSize
    rows: list[str]
    scrollback: list[str]
    cursor_row: int
    cursor_col: int
    title: str
    modes: TerminalModesModel


class Ok(_Model):
    type: Literal["ok"] = "ok"
    req_id: RequestId = None


ErrorCode = Literal[
    "bad_json",
    "bad_message",
    "unknown_type",
    "too_large",
    "unknown_session",
    "not_attached",
    "session_exited",
    "spawn_failed",
    "gone",
    "not_answerable",
    "bad_request",
    "not_running",
    "not_supported",
    "not_resumable",
    "no_records",
    "view_only",
    "worktree_kept",
    "prompt_not_taken",
    "internal",
]


class Error(_Model):
    type: Literal["error"] = "error"
    req_id: RequestId = None
    code: ErrorCode
    message: str


class NotifyResult(_Model):
    target: str = Field(description="The target's URL, its scheme only (URLs hold secrets)")
    delivered: bool


class NotifyTested(_Model):
    type: Literal["notify_tested"] = "notify_tested"
    req_id: RequestId = None
    results: list[NotifyResult] = Field(description="One per target; none: no targets")


ServerMessage = Annotated[
    Hello
    | Sessions
    | Spawned
    | Attached
    | SnapshotMessage
    | ActivityChanged
    | ProcessChanged
    | Resized
    | SessionClosed
    | Stats
    | Timeline
    | Captured
    | Exported
    | NotifyTested
    | PromptAccepted
    | Ok
    | Error,
    Field(discriminator="type"),
]
SERVER_MESSAGE = TypeAdapter[ServerMessage](ServerMessage)


def wire_schema() -> dict[str, Any]:
    """JSON Schema of every wire model, keyed by direction."""
    return {
        "protocol": PROTOCOL_VERSION,
        "client_to_server": CLIENT_MESSAGE.json_schema(),
        "server_to_client": SERVER_MESSAGE.json_schema(),
    }
