"""Whose size a session's program gets when several clients show it.

tmux's ``window-size latest``: the program takes the size of the client that most
recently typed into it or resized its own window. Each attached client says what
size it would like (on attach, and whenever its window changes); typing reclaims
that size, so a phone that glanced at a session does not leave it at 41 columns for
the desktop user, who gets their size back with their next key. When the client
whose size the program has leaves, the most recently active one still attached
takes over. Attaching alone never takes the size from another client: it only
sizes a session nobody has claimed yet. Viewers (``attach {view_only}``) never
resize and cannot type; they draw at the program's size.

Pure bookkeeping: it says which size to apply; the session applies it.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from ptyvisor.wire.protocol import TermSize

Client = TypeVar("Client")
"""Whatever stands for a client (a connection): only hashed and compared."""


class SizePolicy(Generic[Client]):
    """Per session: each attached client's wanted size and who claimed it last."""

    __slots__ = ("_latest", "_wanted")

    def __init__(self) -> None:
        self._wanted: dict[Client, TermSize] = {}
        """Clients with a wanted size, least recently active first."""
        self._latest: Client | None = None

    @property
    def latest(self) -> Client | None:
        """The client whose size the program has (None: nobody, or someone outside)."""
        return self._latest

    def attached(self, client: Client, size: TermSize | None) -> TermSize | None:
        """A client attached wanting ``size``: the size to apply, if it gets it."""
        if size is None:
            return None
        self._wanted.pop(client, None)
        if self._latest is None or self._latest == client:
            self._wanted[client] = size
            self._latest = client
            return size
        # Less recently active than the one that holds the size: first in line.
        self._wanted = {client: size, **self._wanted}
        return None

    def resized(self, client: Client, size: TermSize) -> TermSize:
        """The client's window changed: it wants, and gets, ``size``."""
        self._wanted.pop(client, None)
        self._wanted[client] = size
        self._latest = client
        return size

    def wants(self, client: Client, size: TermSize) -> TermSize | None:
        """The client would now like ``size`` without claiming it (its pane changed
        by itself): applied only if it holds the size, or nobody does."""
        if client not in self._wanted:
            return self.attached(client, size)
        self._wanted[client] = size  # keeps its place in the activity order
        if self._latest is None or self._latest == client:
            self._latest = client
            return size
        return None

    def resized_from_outside(self) -> None:
        """A client that is not attached set the size: nobody holds it now."""
        self._latest = None

    def typed(self, client: Client) -> TermSize | None:
        """The client typed: its size, if it has one and did not hold it already."""
        size = self._wanted.pop(client, None)
        if size is None:
            return None
        self._wanted[client] = size
        if self._latest == client:
            return None
        self._latest = client
        return size

    def detached(self, client: Client) -> TermSize | None:
        """The client left: the size of the one that takes over, if it held it."""
        self._wanted.pop(client, None)
        if self._latest != client:
            return None
        self._latest = None
        if not self._wanted:
            return None
        successor = next(reversed(self._wanted))
        self._latest = successor
        return self._wanted[successor]
