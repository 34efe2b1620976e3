"""What the agent is doing, kept apart from whether its process is alive.

Activity is reported in-band by agent extensions (see `frames`) and is transient: it
lives in memory only and is rebuilt from frames after a restart. The tracker is a
small state machine fed with decoded frame payloads and with the process's exit;
it never looks at screen text.

Rules (each one pinned by a test):
- A report whose ``at`` is older than the last applied report is ignored: hooks run
  as separate processes and can race.
- Once the process has exited, activity is final (``stopped`` for exit 0, ``failed``
  otherwise) and late frames never resurrect the session.
- ``agent`` and ``native_session_id`` are sticky: a report that omits them keeps the
  values learned earlier. ``reason`` belongs to the report that carried it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


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
AgentName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]


class Activity(BaseModel):
    """The activity axis of a session's state, as sent to clients."""

    model_config = ConfigDict(frozen=True)

    phase: ActivityPhase = ActivityPhase.UNAVAILABLE
    since: int = Field(description="Unix time in milliseconds when this phase began")
    agent: str | None = None
    reason: str | None = None
    native_session_id: str | None = None


class ActivityReport(BaseModel):
    """Frame payload ``{"type": "activity", ...}`` written by an agent extension."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["activity"]
    phase: ReportedPhase
    at: int = Field(ge=0, description="Unix time in milliseconds when the event happened")
    agent: AgentName | None = None
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS)] | None = None
    native_session_id: Annotated[str, Field(min_length=1, max_length=256)] | None = None


# Later payload types (pending interactions) join this union; the ``type`` field
# discriminates, so an unknown type is a validation failure, never a guess.
FramePayload = Annotated[ActivityReport, Field(discriminator="type")]
FRAME_PAYLOAD = TypeAdapter[FramePayload](FramePayload)


class ActivityTracker:
    """Applies reports and the process exit to one session's activity."""

    def __init__(self, now_ms: int) -> None:
        self._activity = Activity(since=now_ms)
        self._last_at = 0
        self._final = False

    @property
    def activity(self) -> Activity:
        return self._activity

    def report(self, report: ActivityReport) -> bool:
        """Apply a report; returns whether the visible activity changed."""
        if self._final or report.at < self._last_at:
            return False
        self._last_at = report.at
        current = self._activity
        phase = ActivityPhase(report.phase)
        updated = Activity(
            phase=phase,
            since=current.since if phase is current.phase else report.at,
            agent=report.agent or current.agent,
            reason=report.reason,
            native_session_id=report.native_session_id or current.native_session_id,
        )
        return self._replace(updated)

    def process_exited(self, *, exit_code: int | None, signal: int | None, now_ms: int) -> bool:
        """Make activity final: ``stopped`` on a clean exit, ``failed`` otherwise."""
        if self._final:
            return False
        self._final = True
        clean = exit_code == 0 and signal is None
        if clean:
            phase, reason = ActivityPhase.STOPPED, None
        elif signal is not None:
            phase, reason = ActivityPhase.FAILED, f"killed by signal {signal}"
        else:
            phase, reason = ActivityPhase.FAILED, f"exited with status {exit_code}"
        current = self._activity
        return self._replace(
            Activity(
                phase=phase,
                since=now_ms,
                agent=current.agent,
                reason=reason,
                native_session_id=current.native_session_id,
            )
        )

    def _replace(self, updated: Activity) -> bool:
        changed = updated != self._activity
        self._activity = updated
        return changed
