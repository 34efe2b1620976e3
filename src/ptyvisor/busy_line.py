"""An agent's own busy line on its screen: the earliest sign that a turn has begun.

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

from __future__ import annotations

import re

from ptyvisor.activity import Activity, ActivityPhase

UNCONFIRMED_SECONDS = 5.0
"""How long a guessed turn outlives its busy line while the extension says nothing:
longer than a hook takes to start on a busy machine."""


class BusyLine:
    """Watches one session's screen for its agent's busy line (`agents.BUSY_SCREEN`)."""

    def __init__(self, pattern: str) -> None:
        self._pattern = re.compile(pattern)
        self._waiting: Activity | None = None
        """The ``waiting`` activity the screens below were seen in."""
        self._seen_absent = False
        """A screen in that ``waiting`` has shown no busy line (since the last one)."""
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

    def look(self, text: str, activity: Activity) -> bool | None:
        """The visible rows joined by newlines: True when a turn has begun, False
        when a guessed turn's line has gone (see `UNCONFIRMED_SECONDS`), None when
        nothing follows from them."""
        shown = self.shown = self._pattern.search(text) is not None
        if activity.phase is ActivityPhase.WAITING:
            if activity is not self._waiting:
                self._waiting, self._seen_absent = activity, False
            if not shown:
                self._seen_absent = True
                return None
            began, self._seen_absent = self._seen_absent, False
            return True if began else None
        if self.guessed(activity) and not shown:
            return False
        return None
