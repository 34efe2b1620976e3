"""Session references on the command line: an id, an exact session name, or a
unique prefix of an id — whichever names exactly one session, in that order.

A reference that names none or several is one line saying so, with the candidates,
so a script's author sees at once what to type instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from ptyvisor.errors import BadReference
from ptyvisor.wire.protocol import SessionSummary

SHOWN_CANDIDATES = 8
"""How many candidates an error lists before it says how many more there are."""


def resolve(sessions: Sequence[SessionSummary], ref: str) -> str:
    """The id of the one session ``ref`` names; raises BadReference otherwise."""
    for session in sessions:
        if session.id == ref:
            return ref
    for matches in (
        [s for s in sessions if s.name == ref],
        [s for s in sessions if s.id.startswith(ref)] if ref else [],
    ):
        if len(matches) == 1:
            return matches[0].id
        if matches:
            raise BadReference("bad_request", f"{ref!r} could be any of: {_candidates(matches)}")
    known = f" (sessions: {_candidates(sessions)})" if sessions else " (there are none)"
    raise BadReference("unknown_session", f"no session {ref!r}{known}")


def _candidates(sessions: Sequence[SessionSummary]) -> str:
    shown = [f"{s.id} ({s.name})" for s in sessions[:SHOWN_CANDIDATES]]
    more = len(sessions) - SHOWN_CANDIDATES
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
