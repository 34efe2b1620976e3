"""How a program ends, as named states changed through one method.

::

    RUNNING ──kill──▶ KILLING ──reaped──▶ EXITED (ended "killed")
       │  └──close──▶ CLOSING ──reaped──▶ CLOSED (ended "killed"; then forgotten)
       ├──server──▶ STOPPING ──reaped──▶ EXITED (ended "server": this server stopped it)
       └──reaped──────────────────────▶ EXITED (ended "exited": by itself)
    EXITED ──close──▶ CLOSED (its end kept; then forgotten)

`TRANSITIONS` is the whole table; an event a state does not list is a bug (`change`
raises, naming both). Reaching EXITED or CLOSED by ``reaped`` is the program's end,
published once, by the session, to everyone who keeps it (records, the activity, the
clients, the session list); CLOSED also means the session is to be forgotten.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from ptyvisor.wire.protocol import Ended


class End(StrEnum):
    RUNNING = "running"
    KILLING = "killing"
    """A client asked for it to stop (``kill``)."""
    CLOSING = "closing"
    """A client closed the session: it is stopped, then forgotten."""
    STOPPING = "stopping"
    """This server stops it on its way out (it owns its programs: no keeper)."""
    EXITED = "exited"
    CLOSED = "closed"


EndEvent = Literal["kill", "close", "server", "reaped"]

TRANSITIONS: dict[End, dict[EndEvent, End]] = {
    End.RUNNING: {
        "kill": End.KILLING,
        "close": End.CLOSING,
        "server": End.STOPPING,
        "reaped": End.EXITED,
    },
    End.KILLING: {
        "kill": End.KILLING,
        "close": End.CLOSING,
        "server": End.KILLING,
        "reaped": End.EXITED,
    },
    End.CLOSING: {
        "kill": End.CLOSING,
        "close": End.CLOSING,
        "server": End.CLOSING,
        "reaped": End.CLOSED,
    },
    End.STOPPING: {
        "kill": End.KILLING,
        "close": End.CLOSING,
        "server": End.STOPPING,
        "reaped": End.EXITED,
    },
    End.EXITED: {"kill": End.EXITED, "close": End.CLOSED, "server": End.EXITED},
    End.CLOSED: {"kill": End.CLOSED, "close": End.CLOSED, "server": End.CLOSED},
}
"""Every state's events. ``reaped`` happens once: a final state does not list it."""

ENDED_BY: dict[End, Ended] = {
    End.RUNNING: "exited",
    End.KILLING: "killed",
    End.CLOSING: "killed",
    End.STOPPING: "server",
}
"""How the program ended, by the state it was reaped in."""


class ProgramEnd:
    """One program's end (see the module's notes)."""

    def __init__(self) -> None:
        self.state = End.RUNNING
        self.ended: Ended | None = None
        """How it ended, once reaped."""

    @property
    def reaped(self) -> bool:
        return self.state in (End.EXITED, End.CLOSED) and self.ended is not None

    @property
    def closing(self) -> bool:
        """Whether the session is to be forgotten once its program is gone."""
        return self.state in (End.CLOSING, End.CLOSED)

    def change(self, event: EndEvent) -> bool:
        """Apply ``event``; whether this was the program's end (``reaped``, which the
        caller then publishes). Raises LookupError for an event the state does not
        take: a bug."""
        try:
            after = TRANSITIONS[self.state][event]
        except KeyError:
            raise LookupError(f"a program's end: {event!r} in state {self.state}") from None
        if event == "reaped":
            self.ended = ENDED_BY[self.state]
        self.state = after
        return event == "reaped"
