"""Publishing a session's activity: once, to every listener — the records, the
recording's markers, the attached clients (an ``activity`` event when what they see
of it changed, see protocol.ActivityChanged) and the session list."""

from __future__ import annotations

from collections.abc import Callable

from ptyvisor.agents.activity import Activity, ActivityTracker, Changed
from ptyvisor.agents.interaction import Interaction
from ptyvisor.server.recording import Recorder, marker_label
from ptyvisor.server.records import Records
from ptyvisor.server.session.clients import Clients
from ptyvisor.wire.protocol import ActivityChanged, ActivityField


class ActivityPublisher:
    """Tells everyone of one session's activity when it changes."""

    def __init__(
        self,
        session_id: str,
        tracker: ActivityTracker,
        clients: Clients,
        *,
        on_change: Callable[[], None],
        holds: Callable[[str, str], bool] | None = None,
        records: Records | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        """``holds(session, interaction)``: whether a hook waits for a client's answer
        (control.PendingRequests.holds)."""
        self._id = session_id
        self._tracker = tracker
        self._clients = clients
        self._on_change = on_change
        self._holds = holds
        self._records = records
        self._recorder = recorder
        self._answerable_shown = False
        self._shown = self._view(tracker.activity, tracker.pending)
        """The activity as the last event (or the start) showed it."""

    @property
    def answerable(self) -> bool:
        """Whether a client can answer the pending interaction: only while an agent hook
        holds a request for it (Codex questions, for one, are answered in the terminal)."""
        return self._answerable(self._tracker.pending)

    def _answerable(self, pending: Interaction | None) -> bool:
        return pending is not None and self._holds is not None and self._holds(self._id, pending.id)

    def requests_changed(self) -> None:
        """A hook began or stopped waiting for an answer: clients learn when that changes
        whether the pending interaction is answerable."""
        if self.answerable != self._answerable_shown:
            self.changed()

    def changed(self, to: Changed | None = None) -> None:
        """The activity changed (``to``: what it changed to, by default what it is now):
        into the records, and to clients and the recording when what they see of it
        changed. Each change is published as it was, even when several came in one read."""
        activity, pending = (
            (self._tracker.activity, self._tracker.pending)
            if to is None
            else (to.activity, to.pending)
        )
        self._answerable_shown = self._answerable(pending)
        if self._records is not None:
            self._records.activity(
                self._id,
                phase=activity.phase.value,
                since=activity.since,
                reason=activity.reason,
                native_session_id=activity.native_session_id,
                agent=activity.agent,
                source=activity.source,
            )
        shown = self._view(activity, pending)
        differs = [name for name, value in shown.items() if self._shown[name] != value]
        if not differs:
            return
        self._shown = shown
        if self._recorder is not None and {"phase", "reason"} & set(differs):
            self._recorder.marker(marker_label(activity.phase.value, activity.reason))
        event = ActivityChanged(
            session=self._id,
            activity=activity,
            pending_interaction=pending,
            answerable=self._answerable_shown,
            changed=differs,
        )
        self._clients.broadcast(event.model_dump_json())
        self._on_change()

    def _view(self, activity: Activity, pending: Interaction | None) -> dict[ActivityField, object]:
        return {
            "phase": activity.phase,
            "since": activity.since,
            "reason": activity.reason,
            "agent": activity.agent,
            "native_session_id": activity.native_session_id,
            "source": activity.source,
            "pending_interaction": pending,
            "answerable": self._answerable_shown,
        }
