"""Waiting for a session to reach a state: what ``ptyvisor wait`` blocks on.

A condition is the conjunction of what is asked: the activity is one of some phases,
a line of the screen matches a regular expression, the program has exited, no
output has come for some seconds. The waiter attaches as a viewer (it never types
or resizes), so it hears every output, activity and process change as it happens:
it looks at the screen again only when output came, and never polls.

Once the program has exited the screen and the activity are final, so a condition
that does not hold then never will: the wait ends at once, as a timeout would,
instead of sleeping out its deadline.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import anyio

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.client.client import Client, ConnectionLost, Output
from ptyvisor.errors import SessionVanished
from ptyvisor.wire.protocol import (
    ActivityChanged,
    ProcessChanged,
    SessionClosed,
    SessionSummary,
    SnapshotMessage,
)

TEXT_RECHECK_SECONDS = 0.05
"""Output arriving in a stream is looked at, at most, this often."""


@dataclass(frozen=True)
class Condition:
    phases: frozenset[ActivityPhase] = frozenset()
    text: re.Pattern[str] | None = None
    exited: bool = False
    quiet: float | None = None

    @property
    def empty(self) -> bool:
        return not self.phases and self.text is None and not self.exited and self.quiet is None


def matches(pattern: re.Pattern[str], rows: Sequence[str]) -> bool:
    """Whether the pattern matches a line of the screen, each line on its own."""
    return any(pattern.search(row) for row in rows)


Outcome = Literal["holds", "timeout", "cannot"]
"""How a wait ended: the condition held, time ran out, or it can no longer hold."""


async def wait(client: Client, session_id: str, condition: Condition, *, seconds: float) -> Outcome:
    """Wait until ``condition`` holds, ``seconds`` pass, or it cannot hold any more
    (a deadline, not a cancellation: the outcome says which)."""
    deadline = time.monotonic() + seconds
    attached = await client.attach(session_id, view_only=True, scrollback=False)
    summary: SessionSummary = attached.session
    phase = summary.activity.phase
    exited = summary.process.state == "exited"
    last_output = time.monotonic()
    screen_dirty = True
    screen_checked = 0.0
    text_holds = False
    while True:
        now = time.monotonic()
        if (
            condition.text is not None
            and screen_dirty
            and (now - screen_checked >= TEXT_RECHECK_SECONDS or exited)
        ):
            rows = (await client.capture(session_id)).rows
            text_holds = matches(condition.text, rows)
            screen_dirty, screen_checked = False, time.monotonic()
        quiet_left = (
            0.0 if condition.quiet is None else condition.quiet - (time.monotonic() - last_output)
        )
        holds = (
            (not condition.phases or phase in condition.phases)
            and (condition.text is None or text_holds)
            and (not condition.exited or exited)
            and quiet_left <= 0
        )
        if holds:
            return "holds"
        # Exited, with its final screen looked at: only quietness can still change.
        final = exited and (condition.text is None or not screen_dirty)
        if final and (
            (condition.phases and phase not in condition.phases)
            or (condition.text is not None and not text_holds)
        ):
            return "cannot"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        nap = left
        if quiet_left > 0:
            nap = min(nap, quiet_left)
        if screen_dirty and condition.text is not None:
            nap = min(nap, max(0.0, TEXT_RECHECK_SECONDS - (time.monotonic() - screen_checked)))
        event = None
        with anyio.move_on_after(max(nap, 0.001)):
            event = await client.next_event(math.inf)
        match event:
            case Output() | SnapshotMessage():
                last_output = time.monotonic()
                screen_dirty = True
            case ActivityChanged() if event.session == session_id:
                phase = event.activity.phase
            case ProcessChanged() if event.session == session_id:
                if event.process.state == "exited":
                    exited = True
                    screen_dirty = True  # its last output is in: look once more
            case SessionClosed() if event.session == session_id:
                raise SessionVanished(session_id)
            case ConnectionLost():
                raise SessionVanished(session_id)
            case _:
                pass
