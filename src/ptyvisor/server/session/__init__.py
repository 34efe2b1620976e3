"""One supervised program and everything derived from its output: the `Session` (a
thin composition, session.py) of a reader, an I/O-free core, the clients and the
program's end. See session.py for the picture."""

from ptyvisor.server.session.clients import Subscriber
from ptyvisor.server.session.core import MAX_MESSAGE, SessionCore
from ptyvisor.server.session.session import Session, new_session_id, now_ms, raw_names

__all__ = [
    "MAX_MESSAGE",
    "Session",
    "SessionCore",
    "Subscriber",
    "new_session_id",
    "now_ms",
    "raw_names",
]
