"""What the agent is doing, kept apart from whether its process is alive.

Activity is reported in-band by agent extensions (see `frames`) and is transient: it
lives in memory only and is rebuilt from frames after a restart. The tracker is a
small state machine fed with decoded frame payloads, with the process's exit and
with the signals any program's output carries (`terminal.TerminalSignal`:
notifications, bells, progress, shell prompt marks); it never looks at screen text.
Every activity says where it came from (``source``): ``extension`` (a frame),
``terminal`` (inferred: those signals, a keystroke, quiet output, the agent's
prompt or busy line on screen) or ``process``
(the start, the exit).

Rules (each one pinned by a test):
- A frame whose ``at`` is older than the last applied frame is ignored: hooks run
  as separate processes and can race.
- Once the process has exited, activity is final (``stopped`` for exit 0 and for a
  kill or close someone asked for, with reason ``killed``; ``failed`` otherwise), any
  pending interaction is gone, and late frames never resurrect it.
- ``agent`` and ``native_session_id`` are sticky: a report that omits them keeps the
  values learned earlier. ``reason`` belongs to the report that carried it; a
  ``failed`` one is made one short line (failures.py).
- An ``interaction`` frame makes the session ``needs_input`` with that interaction
  pending. It is cleared by ``interaction_cleared`` (its id, or no id), by a turn
  end (``waiting``, ``failed``, ``stopped``) and by the exit; a frame for an id
  cleared at or after its own time is stale and ignored, so a late frame cannot
  resurrect a question — while the same request asked again later (identical
  commands get identical digest ids) is shown again. A
  weaker ``needs_input`` report (Claude's Notification) keeps the richer pending
  interaction.
- An interaction raised inside a subagent (its frame carries the ``agent_id``) belongs
  to that subagent, not to the main turn: Claude Code 2.1.332 runs every subagent in
  the background, so the main turn may end (``waiting``, ``failed``) or a prompt be
  submitted while the subagent still asks. Those keep it pending (``waiting`` shows as
  ``needs_input`` meanwhile); the subagent's own stop (``subagent_stopped`` with the
  same id) clears it if it was created no later than that stop, its tool call's end
  clears it by id, and ``stopped`` and the exit clear everything.
- Terminal signals are inferred activity (``source: terminal``): a prompt (OSC 133
  A/B) or a command's end (D) is ``waiting`` (reason ``prompt``, or ``exited N`` for a
  non-zero status, which the prompt after it keeps), a command (C) ``working``
  (``command``), progress (OSC 9;4) ``working`` (``42%``; ``error``, ``paused``) or,
  when done (state 0), ``waiting``; a notification or a bell is ``needs_input`` with
  its text (or ``bell``) as the reason and never an interaction. That attention
  outlasts the prompt after it (``make; notify`` then the prompt still needs the
  user); a command, progress, or the user's input (`attended`: back to what was
  before, or to the prompt that came meanwhile) ends it. The extension wins:
  once any authentic frame has been applied, or from the start for a session spawned
  with an agent (its extension will report), they change nothing; nor after the exit.
"""

from __future__ import annotations

import re
import signal as signals
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ptyvisor.agents.failures import failure_reason
from ptyvisor.agents.interaction import Interaction
from ptyvisor.agents.launch import (
    BUSY_SCREEN,
    CTRL_C_KEEPS_THE_TURN,
    DIALOG_SCREEN,
    ESC_DENIES_AND_GOES_ON,
    READY_SCREEN,
    REPORTS_STARTUP,
    STARTUP_DIALOG,
    resuming_screen,
)
from ptyvisor.wire.untrusted import native_id_problem

if TYPE_CHECKING:  # the terminal (and pyte) is the server's, not every client's
    from ptyvisor.terminal import TerminalSignal


class ActivityPhase(StrEnum):
    """Phases a client can see. ``waiting`` means ready for the user ("Ready" in a UI)."""

    UNAVAILABLE = "unavailable"
    STARTING = "starting"
    WORKING = "working"
    NEEDS_INPUT = "needs_input"
    WAITING = "waiting"
    FAILED = "failed"
    STOPPED = "stopped"


ReportedPhase = Literal["starting", "working", "needs_input", "waiting", "failed", "stopped"]
"""Phases an extension may report; ``unavailable`` only means "nobody reported"."""

MAX_REASON_CHARS = 4000
ActivitySource = Literal["extension", "terminal", "process"]
"""Where an activity came from: an extension's frame; inferred from the terminal (its
signals, a keystroke, quiet output); the process (its start, its exit)."""
AgentName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]


class Activity(BaseModel):
    """The activity axis of a session's state, as sent to clients."""

    model_config = ConfigDict(frozen=True)

    phase: ActivityPhase = ActivityPhase.UNAVAILABLE
    since: int = Field(description="Unix time in milliseconds when this phase began")
    agent: str | None = None
    reason: str | None = None
    native_session_id: str | None = None
    source: ActivitySource = Field(
        default="process",
        description="Where it came from: `extension` (an agent extension's frame, "
        "authoritative), `terminal` (inferred from the program's output or a keystroke: "
        "lower confidence) or `process` (the start, the exit)",
    )


class ActivityReport(BaseModel):
    """Frame payload ``{"type": "activity", ...}`` written by an agent extension."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["activity"]
    phase: ReportedPhase
    at: int = Field(ge=0, description="Unix time in milliseconds when the event happened")
    agent: AgentName | None = None
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS)] | None = None
    native_session_id: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    """Untrusted like the rest: the session keeps it only if it is shaped like its
    agent's ids (untrusted.native_id_problem), as a resume puts it into argv."""
    prompt: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")] | None = None
    """On the frame of a turn the user's prompt started: that prompt's digest
    (digest.prompt_digest), which confirms a ``prompt`` request's text was taken."""


SubagentId = Annotated[str, Field(min_length=1, max_length=256)]


class InteractionReport(BaseModel):
    """Frame payload ``{"type": "interaction", ...}``: the agent is blocked on this."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["interaction"]
    at: int = Field(ge=0)
    interaction: Interaction
    agent_id: SubagentId | None = Field(
        default=None, description="The subagent that asked; absent for the main thread"
    )
    on_screen: bool = Field(
        default=False,
        description="The agent may go on without asking (its own policy decides after "
        "the hook): pending only once its dialog shows on screen (launch.DIALOG_SCREEN)",
    )


class InteractionCleared(BaseModel):
    """Frame payload ``{"type": "interaction_cleared", ...}``: answered or withdrawn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["interaction_cleared"]
    at: int = Field(ge=0)
    id: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    reason: Annotated[str, Field(max_length=256)] | None = None


class SubagentStopped(BaseModel):
    """Frame payload ``{"type": "subagent_stopped", ...}``: one subagent finished (Claude
    Code's SubagentStop). It ends that subagent's own requests, never the main turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["subagent_stopped"]
    at: int = Field(ge=0)
    agent_id: SubagentId


# The ``type`` field discriminates, so an unknown type is a validation failure,
# never a guess.
FramePayload = Annotated[
    ActivityReport | InteractionReport | InteractionCleared | SubagentStopped,
    Field(discriminator="type"),
]
FRAME_PAYLOAD = TypeAdapter[FramePayload](FramePayload)


TURN_ENDS = frozenset({ActivityPhase.WAITING, ActivityPhase.FAILED, ActivityPhase.STOPPED})
CLEARED_MEMORY = 256
"""How many cleared interaction ids are remembered to refuse late frames."""


class ActivityTracker:
    """Applies frame payloads and the process exit to one session's activity."""

    def __init__(self, now_ms: int, *, agent: str | None = None) -> None:
        phase = ActivityPhase.STARTING if agent else ActivityPhase.UNAVAILABLE
        self._activity = Activity(phase=phase, since=now_ms, agent=agent)
        self._pending: Interaction | None = None
        self._pending_subagent: str | None = None
        self._cleared: OrderedDict[str, int] = OrderedDict()  # id -> when it was cleared
        self._last_at = 0
        self._final = False
        self._extension = agent is not None
        """An extension reports (or will): terminal signals change nothing."""
        self._before_attention: Activity | None = None
        """What an inferred ``needs_input`` (a notification, a bell) interrupted."""
        self._startup_dialog = False
        """``needs_input`` is the agent's own dialog before its prompt (`startup_dialog`)."""

    @property
    def activity(self) -> Activity:
        return self._activity

    def export(self) -> dict[str, Any]:
        """Everything, as JSON, for the next server at a planned restart (`restore`)."""
        return {
            "activity": self._activity.model_dump(mode="json"),
            "pending": None if self._pending is None else self._pending.model_dump(mode="json"),
            "pending_subagent": self._pending_subagent,
            "cleared": list(self._cleared.items()),
            "last_at": self._last_at,
            "final": self._final,
            "extension": self._extension,
            "startup_dialog": self._startup_dialog,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take over what `export` gave (from the previous server)."""
        self._activity = Activity.model_validate(state["activity"])
        pending = state.get("pending")
        self._pending = None if pending is None else Interaction.model_validate(pending)
        self._pending_subagent = state.get("pending_subagent")
        self._cleared = OrderedDict((str(k), int(v)) for k, v in state.get("cleared", ()))
        self._last_at = int(state.get("last_at", 0))
        self._final = bool(state.get("final", False))
        self._extension = bool(state.get("extension", self._extension or self._last_at > 0))
        self._startup_dialog = bool(state.get("startup_dialog", False))

    def resume(self, activity: Activity) -> None:
        """After a crash of the server: the last activity the records know (see
        records.py), until the next frame says more. Nothing is pending: what was
        asked then was asked of the server that died (its hook has failed open)."""
        self._activity = activity

    @property
    def pending(self) -> Interaction | None:
        return self._pending

    def stale(self, payload: FramePayload) -> bool:
        """Whether `apply` would ignore ``payload``: older than the last applied frame
        (hooks race), or after the exit."""
        return self._final or payload.at < self._last_at

    def apply(self, payload: FramePayload) -> bool:
        """Apply one decoded frame payload; returns whether anything visible changed."""
        if self.stale(payload):
            return False
        self._last_at = payload.at
        self._extension = True
        self._startup_dialog = False  # the agent reports: its start-up is over
        match payload:
            case ActivityReport():
                return self._report(payload)
            case InteractionReport():
                return self._interaction(payload)
            case InteractionCleared():
                return self._cleared_by(payload)
            case SubagentStopped():
                return self._subagent_stopped(payload)

    def _report(self, report: ActivityReport) -> bool:
        phase = ActivityPhase(report.phase)
        # The session's end clears any pending interaction; the main turn's end, only the
        # main thread's.
        clears = phase is ActivityPhase.STOPPED or (
            phase in TURN_ENDS and self._pending_subagent is None
        )
        changed = clears and self._clear()
        if phase in (ActivityPhase.WORKING, ActivityPhase.WAITING) and self._pending is not None:
            # Still blocked: a hook of another kind (a subagent, a late PreToolUse)
            # does not prove the pending question was answered, and a subagent's
            # question outlives the main turn's end (subagents run in the background).
            phase = ActivityPhase.NEEDS_INPUT
        reason = report.reason
        if phase is ActivityPhase.FAILED and reason:
            reason = failure_reason(reason)  # a provider's raw body, as one short line
        return (
            self._set_phase(
                phase,
                at=report.at,
                agent=report.agent,
                reason=reason,
                native_session_id=report.native_session_id,
                source="extension",
            )
            or changed
        )

    def _interaction(self, report: InteractionReport) -> bool:
        interaction = report.interaction
        if report.at <= self._cleared.get(interaction.id, -1):
            return False
        changed = interaction != self._pending
        self._pending = interaction
        self._pending_subagent = report.agent_id
        return (
            self._set_phase(
                ActivityPhase.NEEDS_INPUT,
                at=report.at,
                agent=interaction.agent,
                reason=None,
                source="extension",
            )
            or changed
        )

    def _cleared_by(self, report: InteractionCleared) -> bool:
        pending = self._pending
        if report.id is not None and (pending is None or pending.id != report.id):
            self._remember_cleared(report.id, report.at)  # answered before its frame arrived
            return False
        if pending is None or (report.id is None and self._pending_subagent is not None):
            return False  # a new prompt is the main thread's: a subagent's question stays
        return self._resolved(report.at)

    def _subagent_stopped(self, report: SubagentStopped) -> bool:
        pending = self._pending
        if (
            pending is None
            or self._pending_subagent != report.agent_id
            or pending.created_at > report.at
        ):
            return False
        return self._resolved(report.at)

    def _resolved(self, at: int) -> bool:
        """The pending interaction is over but the turn goes on: back to ``working``."""
        self._clear(at)
        if self._activity.phase is ActivityPhase.NEEDS_INPUT:
            self._set_phase(ActivityPhase.WORKING, at=at, reason=None, source="extension")
        return True

    def started_up(self, at: int) -> bool:
        """The agent's TUI is up and its extension cannot say so (Codex reports nothing
        before the first prompt, OpenCode's plugin loads long before its TUI reads
        keys; the session sees the prompt on screen): ``starting``, or the start-up
        dialog's ``needs_input``, becomes ``waiting``, nothing else."""
        if self._final or not (self.starting or self.in_startup_dialog):
            return False
        self._startup_dialog = False
        self._last_at = max(self._last_at, at)
        return self._set_phase(ActivityPhase.WAITING, at=at, reason=None, source="terminal")

    def startup_dialog(self, title: str, at: int) -> bool:
        """The agent asks something before its prompt is live (Copilot's folder trust,
        oh-my-pi's first-run wizard): ``needs_input`` with the dialog's title (source
        ``terminal``), until its prompt shows (`started_up`). Not answered by just any
        key, as a notification is: the dialog goes when the user has chosen. From
        ``starting``, ``waiting`` before the first turn (`ActivityRules` says when),
        or an earlier screen of it (the reason follows the wizard's steps)."""
        waits = self._activity.phase in (ActivityPhase.STARTING, ActivityPhase.WAITING)
        if self._final or not (waits or self.in_startup_dialog):
            return False
        self._startup_dialog = True
        self._last_at = max(self._last_at, at)
        return self._set_phase(ActivityPhase.NEEDS_INPUT, at=at, reason=title, source="terminal")

    @property
    def starting(self) -> bool:
        return self._activity.phase is ActivityPhase.STARTING

    @property
    def in_startup_dialog(self) -> bool:
        """Whether the agent's start-up dialog is what it waits on (`startup_dialog`)."""
        return self._startup_dialog and self._activity.phase is ActivityPhase.NEEDS_INPUT

    def turn_on_screen(self, began: bool, at: int) -> bool:
        """The agent's TUI drew its busy line while ``waiting`` (``began``: a turn has
        begun, and its extension will report it late), or stopped drawing it before
        the extension confirmed that turn: ``working``, or back to ``waiting``
        (source ``terminal``; see `BusyLine`)."""
        current = self._activity
        if self._final or self._pending is not None:
            return False
        if began and current.phase is ActivityPhase.WAITING:
            phase = ActivityPhase.WORKING
        elif not began and current.phase is ActivityPhase.WORKING and current.source == "terminal":
            phase = ActivityPhase.WAITING
        else:
            return False
        self._last_at = max(self._last_at, at)
        return self._set_phase(phase, at=at, reason=None, source="terminal")

    def interrupted(self, at: int) -> bool:
        """The user pressed Esc / Ctrl-C during a turn: no agent reports that, so the
        keystroke itself ends the turn (and answers any pending prompt)."""
        if (
            self._final
            or self._startup_dialog
            or self._activity.phase
            not in (
                ActivityPhase.WORKING,
                ActivityPhase.NEEDS_INPUT,
            )
        ):
            return False
        self._last_at = max(self._last_at, at)
        self._clear()
        return self._set_phase(
            ActivityPhase.WAITING, at=at, reason="interrupted", source="terminal"
        )

    def terminal_signals(self, signals: Iterable[TerminalSignal], at: int) -> bool:
        """Inferred activity from signals in the program's output (oldest first), unless
        an extension reports (see the rules); returns whether anything visible changed."""
        if self._final or self._extension:
            return False
        changed = False
        for signal in signals:
            current = self._activity
            attention = current.phase is ActivityPhase.NEEDS_INPUT and current.source == "terminal"
            if attention and signal.kind in ("prompt", "done"):
                # The prompt after a notification: the user has yet to look, and will
                # find the shell at its prompt when they do.
                before = self._before_attention or current
                phase, reason = self._inferred(signal, before)
                self._before_attention = before.model_copy(
                    update={"phase": phase, "reason": reason, "source": "terminal"}
                )
                continue
            phase, reason = self._inferred(signal, current)
            if phase is ActivityPhase.NEEDS_INPUT and not attention:
                self._before_attention = current
            changed = self._set_phase(phase, at=at, reason=reason, source="terminal") or changed
        return changed

    def attended(self, at: int) -> bool:
        """The user typed into a session whose inferred ``needs_input`` (a notification,
        a bell) asked for them: back to what it was before."""
        current = self._activity
        if (
            self._final
            or self._startup_dialog
            or not (current.phase is ActivityPhase.NEEDS_INPUT and current.source == "terminal")
        ):
            return False
        before = self._before_attention or current.model_copy(
            update={"phase": ActivityPhase.WAITING, "reason": None}
        )
        self._before_attention = None
        return self._replace(before.model_copy(update={"since": at}))

    @staticmethod
    def _inferred(signal: TerminalSignal, current: Activity) -> tuple[ActivityPhase, str | None]:
        match signal.kind:
            case "prompt":
                if current.phase is ActivityPhase.WAITING and current.source == "terminal":
                    return ActivityPhase.WAITING, current.reason  # "exited 1" stays
                return ActivityPhase.WAITING, "prompt"
            case "done":
                status = signal.value
                return ActivityPhase.WAITING, f"exited {status}" if status else "prompt"
            case "command":
                return ActivityPhase.WORKING, "command"
            case "progress":
                if signal.state == 0:
                    return ActivityPhase.WAITING, None
                label = {2: "error", 4: "paused"}.get(signal.state)
                percent = None if signal.value is None else f"{signal.value}%"
                return ActivityPhase.WORKING, " ".join(filter(None, (label, percent))) or None
            case "notification":
                return ActivityPhase.NEEDS_INPUT, signal.text or "notification"
            case "bell":
                return ActivityPhase.NEEDS_INPUT, "bell"

    def _clear(self, at: int | None = None) -> bool:
        if self._pending is None:
            return False
        self._remember_cleared(self._pending.id, self._last_at if at is None else at)
        self._pending = None
        self._pending_subagent = None
        return True

    def _remember_cleared(self, ident: str, at: int) -> None:
        self._cleared[ident] = max(at, self._cleared.get(ident, at))
        self._cleared.move_to_end(ident)
        while len(self._cleared) > CLEARED_MEMORY:
            self._cleared.popitem(last=False)

    def _set_phase(
        self,
        phase: ActivityPhase,
        *,
        at: int,
        reason: str | None,
        source: ActivitySource,
        agent: str | None = None,
        native_session_id: str | None = None,
    ) -> bool:
        current = self._activity
        return self._replace(
            Activity(
                phase=phase,
                since=current.since if phase is current.phase else at,
                agent=agent or current.agent,
                reason=reason,
                native_session_id=native_session_id or current.native_session_id,
                source=source,
            )
        )

    def process_exited(
        self,
        *,
        exit_code: int | None,
        signal: int | None,
        now_ms: int,
        killed: bool = False,
        why: str | None = None,
    ) -> bool:
        """Make activity final: ``stopped`` on a clean exit or a kill someone asked
        for (``killed``: reason "killed"), ``failed`` otherwise (``why``, else the
        status). How it ended (exit code, signal) stays in the process state either way."""
        if self._final:
            return False
        self._final = True
        self._clear()
        clean = exit_code == 0 and signal is None
        if killed:
            phase, reason = ActivityPhase.STOPPED, "killed"
        elif clean:
            phase, reason = ActivityPhase.STOPPED, None
        elif signal is not None:
            phase, reason = ActivityPhase.FAILED, f"killed by {_signal_name(signal)}"
        else:
            phase, reason = ActivityPhase.FAILED, f"exited with status {exit_code}"
        if why is not None and phase is ActivityPhase.FAILED:
            reason = why
        current = self._activity
        if phase is current.phase and reason is None:
            # The agent said it stopped, and then it did: one `stopped`, not two.
            return False
        return self._replace(
            Activity(
                phase=phase,
                since=now_ms,
                agent=current.agent,
                reason=reason,
                native_session_id=current.native_session_id,
                source="process",
            )
        )

    def _replace(self, updated: Activity) -> bool:
        changed = updated != self._activity
        self._activity = updated
        return changed


def _signal_name(number: int) -> str:
    """ "SIGKILL" for 9; "signal 99" for a number with no name."""
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


# ---------------------------------------------------------------------- the busy line

UNCONFIRMED_SECONDS = 5.0
"""How long a guessed turn outlives its busy line while the extension says nothing:
longer than a hook takes to start on a busy machine."""
AWAY_BEFORE_TURN_MS = 500
"""How long the screens of a ``waiting`` must have shown no busy line for its showing
to count as a turn: far longer than a TUI's redraw takes even on
a busy machine, shorter than anyone reads a finished turn and types the next prompt.
(A turn sent sooner still shows, from its hook's report.)"""


class BusyLine:
    """Watches one session's screen for its agent's busy line (`agents.BUSY_SCREEN`).

    An agent's own busy line on its screen: the earliest sign that a turn has begun.

    Some extensions report a turn late. Codex 0.171 runs no hook before it has started
    its thread, 0.4-0.7 s after Enter. Qwen Code's UserPromptSubmit comes about 0.3 s
    after Enter. Both TUIs draw their busy line within about 0.1 s: Codex's
    "• Working (0s • esc to interrupt)" and Qwen's "⠋ … (0s · esc to cancel)"
    (`agents.BUSY_SCREEN`). The session shows ``working`` from that line (source
    ``terminal``), and the extension confirms it when its report comes.

    The rules keep a wrong guess short and never let one stick:
    - The line counts only while the session is ``waiting``, and only once a screen in
      that same ``waiting`` has shown it absent. So the line of the turn that just
      ended, still drawn when the Stop hook reports, never starts a turn. (The screen
      that made the session Ready at start-up counts.)
    - It must have stayed away for `AWAY_BEFORE_TURN_MS` first: on a busy machine the
      renderer may catch a TUI's redraw half done, the old turn's line erased and not
      yet drawn again, which is no turn. That holds for the first screens of the
      ``waiting`` too: Qwen Code redraws its spinner after its Stop hook reports, and
      the first screen the renderer caught may be one of those halves (CI saw a
      turn that was none). A prompt typed sooner after Ready still shows, from its
      hook's report.
    - The extension's next report confirms the turn or overrides it. Its ``working``
      replaces the inferred one; the phase and ``since`` stay, the source changes.
    - Until then, the line staying away for `UNCONFIRMED_SECONDS` ends the guess, back
      to ``waiting``. A busy line that was no turn (a local command, a dialog of the
      agent's own) cannot leave the session ``working``. Not at once: a turn the
      provider fails in a moment removes the line before a hook on a busy machine
      reports the turn, and the session would show ``working``, ``waiting``,
      ``working``, ``failed``.

    The screen is looked at only while the session is ``waiting`` or the guess is open:
    the renderer hands over the visible rows after a batch, in the worker thread that
    rendered it (`renderer.Renderer`), so the PTY read path never waits for it.
    """

    def __init__(self, pattern: str) -> None:
        self._pattern = re.compile(pattern)
        self._waiting: Activity | None = None
        """The ``waiting`` activity the screens below were seen in."""
        self._absent_since: int | None = None
        """When the screens in that ``waiting`` began to show no busy line (None while
        it shows)."""
        self.shown = False
        """Whether the line showed on the last screen looked at."""

    def watching(self, activity: Activity) -> bool:
        """Whether the screen is worth looking at now."""
        return activity.phase is ActivityPhase.WAITING or self.guessed(activity)

    @staticmethod
    def guessed(activity: Activity) -> bool:
        """Whether ``activity`` is a turn inferred from the line and not yet confirmed
        (an agent session's extension wins over every other inference, so a
        ``working`` from the terminal can only be this one)."""
        return activity.phase is ActivityPhase.WORKING and activity.source == "terminal"

    def look(self, text: str, activity: Activity, at: int) -> bool | None:
        """The visible rows joined by newlines, shown at ``at``: True when a turn has
        begun, False when a guessed turn's line has gone (see `UNCONFIRMED_SECONDS`),
        None when nothing follows from them."""
        shown = self.shown = self._pattern.search(text) is not None
        if activity.phase is ActivityPhase.WAITING:
            if activity is not self._waiting:
                self._waiting, self._absent_since = activity, None
            if not shown:
                if self._absent_since is None:
                    self._absent_since = at
                return None
            absent, self._absent_since = self._absent_since, None
            if absent is None or at - absent < AWAY_BEFORE_TURN_MS:
                return None
            return True
        if self.guessed(activity) and not shown:
            return False
        return None


# ---------------------------------------------------------------------- the rules

TOOL_RESULTS = "tool_results"
"""The reason of an id-less ``interaction_cleared`` sent as tool results go back to the
model (Qwen Code): what the main thread asked is over, but no new prompt came, so a
queued message stays."""
STARTUP_QUIET_MS = 1000
"""An agent that cannot report Ready, and whose input prompt does not show (a dialog of
its own), is called Ready after this much start-up quiet."""
INTERRUPTS = (b"\x1b", b"\x03")
"""Esc on its own, or Ctrl-C anywhere in what was typed (but for an agent that works on
after it, `launch.CTRL_C_KEEPS_THE_TURN`): no agent reports the end of a turn they
interrupt, so the keystroke itself ends it."""


@dataclass(frozen=True, slots=True)
class FrameApplied:
    """An authentic frame's payload (its ``at`` no later than now)."""

    payload: FramePayload
    seq: int | None = None
    """Where the program's output stood after the read that carried it (None: unknown,
    so any screen counts as drawn after it)."""


@dataclass(frozen=True, slots=True)
class ScreenShown:
    """The headless terminal's visible rows, while `ActivityRules.watches_screen`."""

    rows: Sequence[str]
    at: int
    seq: int | None = None
    """The output seq the rows were rendered up to (None: all of it so far)."""


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes, while `ActivityRules.wants_ticks`: ``quiet_ms`` since the program
    last wrote, ``output_seen`` whether it ever did."""

    at: int
    quiet_ms: int
    output_seen: bool


@dataclass(frozen=True, slots=True)
class KeyTyped:
    data: bytes
    at: int


@dataclass(frozen=True, slots=True)
class SignalsSeen:
    """Terminal signals the program's output carried (oldest first)."""

    signals: Sequence[TerminalSignal]
    at: int


@dataclass(frozen=True, slots=True)
class ProgramExited:
    exit_code: int | None
    signal: int | None
    killed: bool
    """A client asked for it (kill, close)."""
    at: int
    why: str | None = None
    """Why it failed, when the session knows better than an exit status (a wrapper
    whose far side has no ptyvisor, agents/via.py)."""


@dataclass(frozen=True, slots=True)
class MessageQueued:
    """A client queued a message for the agent's next Stop."""

    at: int


Event = FrameApplied | ScreenShown | Tick | KeyTyped | SignalsSeen | ProgramExited | MessageQueued


@dataclass(frozen=True, slots=True)
class Changed:
    """What clients see of the activity (or its pending interaction) changed, and
    what it changed to. The state travels with the effect: one read can carry several
    frames (a hook's Working and the next one's Ready), and each transition is
    published as it was, not as the tracker stands once the read is applied."""

    activity: Activity
    pending: Interaction | None


@dataclass(frozen=True, slots=True)
class DropQueuedMessage:
    """The queued message is over: a new prompt was submitted, or the session ended."""


Which = Literal["all", "main"] | tuple[Literal["interaction", "subagent"], str]
"""Held requests to withdraw: every one, the main thread's, one interaction's (by its
id), one subagent's (by its id)."""


@dataclass(frozen=True, slots=True)
class Withdraw:
    """Held requests created at or before ``before`` that a frame ends (control.py)."""

    before: int
    which: Which


@dataclass(frozen=True, slots=True)
class Stale:
    """The frame was older than the last one applied: it changed nothing here."""


@dataclass(frozen=True, slots=True)
class IdRefused:
    """The frame's conversation id is not its agent's kind (a resume would put it into
    argv): the activity stands, the id is dropped."""


Effect = Changed | DropQueuedMessage | Withdraw | Stale | IdRefused


def frame_ends(payload: FramePayload) -> tuple[Which | None, bool]:
    """What an applied frame ends, as a table: the held requests it withdraws, and
    whether it ends the turn a queued message waited for.

    ===================================  ====================  =====================
    frame                                withdraws             drops queued message
    ===================================  ====================  =====================
    ``interaction_cleared`` with an id   that interaction's    no
    ``interaction_cleared`` (a prompt)   the main thread's     yes (not tool results)
    ``subagent_stopped``                 that subagent's       no
    ``activity`` ``stopped``             all                   yes
    ``activity`` ``waiting``/``failed``  the main thread's     no
    anything else                        none                  no
    ===================================  ====================  =====================
    """
    match payload:
        case InteractionCleared(id=None, reason=reason):
            return "main", reason != TOOL_RESULTS
        case InteractionCleared(id=ident) if ident is not None:
            return ("interaction", ident), False
        case SubagentStopped(agent_id=agent_id):
            return ("subagent", agent_id), False
        case ActivityReport(phase="stopped"):
            return "all", True
        case ActivityReport(phase=phase) if ActivityPhase(phase) in TURN_ENDS:
            return "main", False
    return None, False


class ActivityRules:
    """Every rule of a session's activity in one place: fed events, it returns the
    effects the session carries out (publish a change, drop the queued message,
    withdraw held requests, count a frame). I/O-free: tests drive it with events.

    Beside the `ActivityTracker` (frames, signals, keys, the exit), it holds the rules
    that need the agent's launch profile (agents.py): start-up Ready held until the
    input prompt shows (`READY_SCREEN`) or the output goes quiet, the turn shown from
    the busy line (`BUSY_SCREEN`, `BusyLine`), an approval the agent may skip held
    until its dialog shows (`DIALOG_SCREEN`), conversation ids checked against the
    agent's kind, and which frames end held requests and the queued message.
    """

    def __init__(
        self,
        now_ms: int,
        *,
        agent: str | None = None,
        args: Sequence[str] = (),
        resumed: bool = False,
    ) -> None:
        """``args``: the user's own arguments to the agent; ``resumed``: ptyvisor
        started it to continue a conversation (either resumes, `RESUMING_SCREEN`)."""
        self.agent = agent
        self.tracker = ActivityTracker(now_ms, agent=agent)
        name = agent or ""
        pattern = READY_SCREEN.get(name)
        self._ready_screen = re.compile(pattern) if pattern else None
        """The agent's input prompt on screen, watched for while ``starting``."""
        resuming = resuming_screen(agent, args, resumed=resumed) if pattern else None
        self._resuming = re.compile(resuming) if resuming else None
        """What the agent draws while it loads the conversation it resumes: until a
        screen has shown it, its prompt is not its Ready."""
        dialog = STARTUP_DIALOG.get(name)
        self._startup_dialog = re.compile(dialog) if dialog else None
        self._in_dialog = False
        """The agent's start-up dialog shows (`STARTUP_DIALOG`): quiet is not Ready."""
        self._turned = False
        """A turn has begun: no start-up dialog can come any more (`_before_first_turn`)."""
        self._reports_startup = REPORTS_STARTUP.get(name, True)
        self._quiet_rule = agent is not None and (
            not self._reports_startup or self._ready_screen is not None
        )
        """Whether start-up quiet may make it Ready (see `_tick`)."""
        busy = BUSY_SCREEN.get(name)
        self._busy_line = BusyLine(busy) if busy else None
        self._busy_gone_at: int | None = None
        """When the line of a turn guessed from it went (`UNCONFIRMED_SECONDS` later,
        the guess ends unless the extension confirmed it)."""
        self._drawn = False
        """The start-up has drawn some text: from then on quiet may mean Ready."""
        self._prompt_shows = False
        """The last screen looked at during start-up showed the prompt."""
        self._screen_seq: int | None = None
        """The output seq that screen was rendered up to (None: all of it)."""
        self._startup_report: ActivityReport | None = None
        """The extension's start-up Ready, held until the prompt shows (`_holds_ready`)."""
        self._report_seq: int | None = None
        """Where the output stood at that report: the prompt must show on a screen
        rendered at least this far."""
        self._frame_seq: int | None = None
        """Where the output stood at the last frame that changed the activity: a screen
        rendered short of it shows the TUI from before that report, and says nothing
        about a turn after it (`_screen`)."""
        self._queued_at = 0
        dialog_screen = DIALOG_SCREEN.get(name)
        self._dialog_screen = re.compile(dialog_screen) if dialog_screen else None
        self._held_dialog: tuple[InteractionReport, int | None] | None = None
        """An ``on_screen`` interaction and the output seq at its frame, held until the
        agent draws its dialog (`DIALOG_SCREEN`) on a screen rendered after it."""

    @property
    def activity(self) -> Activity:
        return self.tracker.activity

    def _now_changed(self) -> Changed:
        """The activity changed just now: to what it is now."""
        return Changed(self.tracker.activity, self.tracker.pending)

    def _changed(self, changed: bool) -> list[Effect]:
        return [self._now_changed()] if changed else []

    def handle(self, event: Event) -> list[Effect]:
        """Apply ``event``; what the session must do about it."""
        effects = self._handle(event)
        phase = self.activity.phase
        if phase not in (ActivityPhase.STARTING, ActivityPhase.WAITING):
            self._turned = self._turned or not self.tracker.in_startup_dialog
        return effects

    def _handle(self, event: Event) -> list[Effect]:
        match event:
            case FrameApplied(payload=payload, seq=seq):
                return self._frame(payload, seq)
            case ScreenShown(rows=rows, at=at, seq=seq):
                return self._screen(rows, at, seq)
            case Tick():
                return self._tick(event)
            case KeyTyped(data=data, at=at):
                asked = self.activity.phase is ActivityPhase.NEEDS_INPUT
                interrupt = self.agent is not None and (
                    (data == INTERRUPTS[0] and not (asked and self.agent in ESC_DENIES_AND_GOES_ON))
                    or (INTERRUPTS[1] in data and self.agent not in CTRL_C_KEEPS_THE_TURN)
                )
                # An interrupt ends an agent's turn; any key answers a notification.
                changed = interrupt and self.tracker.interrupted(at)
                return self._changed(changed or self.tracker.attended(at))
            case SignalsSeen(signals=seen, at=at):
                return self._changed(self.tracker.terminal_signals(seen, at))
            case ProgramExited(exit_code=code, signal=signal, killed=killed, at=at, why=why):
                self._held_dialog = None
                exited = self.tracker.process_exited(
                    exit_code=code, signal=signal, now_ms=at, killed=killed, why=why
                )
                return [*self._changed(exited), DropQueuedMessage()]
            case MessageQueued(at=at):
                self._queued_at = at
                return []

    def _starting(self) -> bool:
        """Start-up is not over: ``starting``, or its dialog's ``needs_input``."""
        return self.tracker.starting or self.tracker.in_startup_dialog

    def _before_first_turn(self) -> bool:
        """Ready, but no turn yet, for an agent whose start-up dialog can follow its
        prompt: oh-my-pi draws its editor (and reports Ready), then its first-run
        wizard over it. The screen is watched for the dialog until the first turn."""
        return (
            self._startup_dialog is not None
            and not self._turned
            and self.activity.phase is ActivityPhase.WAITING
        )

    def watches_screen(self) -> bool:
        """Whether the renderer should hand over the screen (`ScreenShown`) now."""
        if self._held_dialog is not None:
            return True
        if self._starting() or self._before_first_turn():
            return self._ready_screen is not None
        return self._busy_line is not None and self._busy_line.watching(self.activity)

    def wants_ticks(self) -> bool:
        """Whether time matters now (`Tick`): a start-up that may end in quiet, or a
        guessed turn whose line has gone."""
        return (self._starting() and self._quiet_rule) or self._busy_gone_at is not None

    # ------------------------------------------------------------------ frames

    def _frame(self, payload: FramePayload, seq: int | None) -> list[Effect]:
        effects: list[Effect] = []
        native = payload.native_session_id if isinstance(payload, ActivityReport) else None
        if native is not None and native_id_problem(self.agent, native) is not None:
            effects.append(IdRefused())
            payload = payload.model_copy(update={"native_session_id": None})
        if self._holds_dialog(payload, seq) or self._holds_ready(payload, seq):
            return effects
        withdraws, ends_turn = frame_ends(payload)
        if self.tracker.stale(payload):
            effects.append(Stale())
        else:
            if self.tracker.apply(payload):
                self._frame_seq = seq
                effects.append(self._now_changed())
            if ends_turn and not self._queued_in_this_turn(payload):
                effects.append(DropQueuedMessage())
        # Held requests are withdrawn by stale frames too: a late PostToolUse still
        # means that tool call is over.
        if withdraws is not None:
            effects.append(Withdraw(payload.at, withdraws))
        return effects

    def _holds_dialog(self, payload: FramePayload, seq: int | None) -> bool:
        """Whether ``payload`` is an ``on_screen`` interaction to hold until its dialog
        shows (`_screen`). Cline 3.0's ``PreToolUse`` comes before it decides whether
        to ask (auto-approve covers every call by default): an approval shown from the
        hook would be an alarm for every call it runs by itself. Any later frame (the
        call's end, the turn's) ends the hold; for an agent whose dialog ptyvisor
        cannot see, such a frame is applied as it comes."""
        if payload.at >= (self._held_dialog[0].at if self._held_dialog else 0):
            self._held_dialog = None
        if (
            self._dialog_screen is None
            or not isinstance(payload, InteractionReport)
            or not payload.on_screen
            or self.tracker.stale(payload)
        ):
            return False
        self._held_dialog = (payload, seq)
        return True

    def _show_held_dialog(self, shown: str, at: int, seq: int | None) -> list[Effect]:
        """The held dialog applied, stamped now, if this screen (rendered after its
        frame) shows it."""
        held = self._held_dialog
        if held is None or self._dialog_screen is None or not self._covers(seq, held[1]):
            return []
        if self._dialog_screen.search(shown) is None:
            return []
        self._held_dialog = None
        report = held[0]
        return self._changed(
            self.tracker.apply(report.model_copy(update={"at": max(report.at, at)}))
        )

    def _queued_in_this_turn(self, payload: FramePayload) -> bool:
        """Whether a prompt's ``interaction_cleared`` is that of a turn shown from the
        agent's busy line that its hook has only now reported: the message was queued
        during this turn, and stays."""
        activity = self.activity
        return (
            isinstance(payload, InteractionCleared)
            and BusyLine.guessed(activity)
            and activity.since <= self._queued_at
        )

    def _holds_ready(self, payload: FramePayload, seq: int | None) -> bool:
        """Whether ``payload`` is an extension's start-up Ready to hold back until the
        agent's prompt shows (`READY_SCREEN`) on a screen drawn since (`_covers`).

        Qwen Code reports it before it reads keys. A resumed Gemini CLI reports it as it
        replaces the prompt it has drawn with "Resuming session..." while it loads the
        conversation, dropping every key meanwhile; the prompt it draws again is its
        Ready."""
        if (
            self._ready_screen is None
            or not isinstance(payload, ActivityReport)
            or payload.phase != "waiting"
            or not self._starting()
        ):
            return False
        # Kept even when applied at once: a start-up dialog after it applies it again.
        self._startup_report, self._report_seq = payload, seq
        shown = self._prompt_shows and self._covers(self._screen_seq, seq)
        return not shown or self._resuming is not None

    @staticmethod
    def _covers(screen: int | None, report: int | None) -> bool:
        """Whether a screen rendered up to ``screen`` was drawn after a report made at
        ``report`` (either unknown: it was)."""
        return screen is None or report is None or screen >= report

    # ------------------------------------------------------------------ start-up

    def _become_ready(self, at: int) -> list[Effect]:
        """The start-up is over: the extension's held Ready applied (stamped now, when
        it became true), or for an agent that cannot report it, ``starting`` made
        ``waiting``."""
        if not self._reports_startup:
            return self._changed(self.tracker.started_up(at))
        report = self._startup_report
        if report is None or not self._starting():
            return []
        return self._changed(
            self.tracker.apply(report.model_copy(update={"at": max(report.at, at)}))
        )

    def _screen(self, rows: Sequence[str], at: int, seq: int | None) -> list[Effect]:
        """The screen: during start-up, Ready the moment the agent's input prompt shows
        (a drawn prompt is the best evidence of taking keys these agents give: each
        reads keys from that first frame on); then the busy line. The screen that
        ends the start-up is the busy line's first one."""
        effects: list[Effect] = self._show_held_dialog("\n".join(rows), at, seq)
        if (self._starting() or self._before_first_turn()) and self._ready_screen is not None:
            self._drawn = self._drawn or any(line.strip() for line in rows)
            shown = "\n".join(rows)
            asked = self._startup_dialog.search(shown) if self._startup_dialog else None
            self._in_dialog = asked is not None
            self._prompt_shows = asked is None and self._ready_screen.search(shown) is not None
            self._screen_seq = seq
            if self._resuming is not None and self._resuming.search(shown) is not None:
                self._resuming = None  # loading it: the prompt drawn next is Ready
            if asked is not None:
                effects += self._changed(self.tracker.startup_dialog(asked.group(0), at))
            elif self._prompt_shows and self._covers(seq, self._report_seq) and not self._resuming:
                effects += self._become_ready(at)
        line = self._busy_line
        # On a busy machine the renderer lags: a screen from before the Stop hook's
        # report can still show the old turn's line, half redrawn, and is no new turn.
        if line is not None and not self._starting() and self._covers(seq, self._frame_seq):
            began = line.look("\n".join(rows), self.activity, at)
            if began is False:
                if self._busy_gone_at is None:
                    self._busy_gone_at = at
            elif began and self.tracker.turn_on_screen(True, at):
                effects.append(self._now_changed())
        return effects

    def _tick(self, tick: Tick) -> list[Effect]:
        effects: list[Effect] = []
        if self._starting() and self._quiet_rule:
            # The fallback when the prompt is not seen (a dialog of the agent's own, a
            # changed layout): once the start-up output has gone quiet, the agent waits
            # for the user. An agent that reports Ready is so only once its report
            # has come; with a `READY_SCREEN`, only once something was drawn
            # (OpenCode is quiet for seconds before its first frame, reading no keys).
            reported = not self._reports_startup or self._startup_report is not None
            drawn = (self._drawn or self._ready_screen is None) and not self._in_dialog
            if reported and drawn and tick.output_seen and tick.quiet_ms >= STARTUP_QUIET_MS:
                effects += self._become_ready(tick.at)
        gone = self._busy_gone_at
        if gone is not None and tick.at - gone >= UNCONFIRMED_SECONDS * 1000:
            self._busy_gone_at = None
            assert self._busy_line is not None
            if not self._busy_line.shown and self.tracker.turn_on_screen(False, gone):
                effects.append(self._now_changed())
        return effects
