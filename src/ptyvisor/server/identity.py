"""What a session is, from its spawn on: id, name, what runs, where, for which agent.

The keeper keeps it (as JSON) so that a server started after a restart can adopt the
running program; the records keep it, *without the nonce*, after the session is
gone. Names may hold bytes that are not UTF-8 (``surrogateescape``), so they are kept
as base64 of their bytes. Stdlib only.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ptyvisor.errors import BadIdentity
from ptyvisor.keeper.spawn import DEFAULT_TERM


@dataclass(frozen=True)
class Identity:
    """What a session is (see the module's notes)."""

    id: str
    name: str
    argv: list[str]
    command: list[str]
    """What was asked for, for display: an agent without its extension flags."""
    cwd: str
    agent: str | None
    created_at: int
    nonce: str
    recording: str | None = None
    """The asciicast file it is recorded to (see recording.py), if it is."""
    term: str = DEFAULT_TERM
    """The program's ``TERM``."""
    via: list[str] | None = None
    """The wrapper an agent runs through (agents/via.py): ``argv`` is the wrapper and
    ``ptyvisor via-exec <id> <token>``, ``command`` the wrapper, the agent's program
    and its arguments."""
    resume: str | None = None
    """The agent's own conversation id this session was started to continue."""
    worktree: str | None = None
    """The git worktree made for it (server/worktrees.py); ``cwd`` is inside it."""

    @property
    def agent_args(self) -> list[str]:
        """The user's own arguments to the agent (no extension flags, no wrapper)."""
        return self.command[len(self.via or ()) + 1 :]

    def to_json(self) -> dict[str, object]:
        # Names may hold undecodable bytes (surrogateescape): kept as their bytes.
        return {
            "id": self.id,
            "name": _b64(self.name),
            "argv": [_b64(arg) for arg in self.argv],
            "command": [_b64(arg) for arg in self.command],
            "cwd": _b64(self.cwd),
            "agent": self.agent,
            "created_at": self.created_at,
            "nonce": self.nonce,
            "recording": self.recording,
            "term": self.term,
            "via": None if self.via is None else [_b64(word) for word in self.via],
            "resume": self.resume,
            "worktree": None if self.worktree is None else _b64(self.worktree),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Identity:
        """Raises `BadIdentity` for anything `to_json` could not have written."""
        try:
            return cls._from_json(data)
        except (KeyError, TypeError, ValueError, OverflowError, binascii.Error) as bad:
            raise BadIdentity(f"unreadable identity: {type(bad).__name__}") from None

    @classmethod
    def _from_json(cls, data: Mapping[str, Any]) -> Identity:
        agent, recording = data.get("agent"), data.get("recording")
        via, resume, worktree = data.get("via"), data.get("resume"), data.get("worktree")
        if not isinstance(agent, str | None) or not isinstance(recording, str | None):
            raise TypeError("agent and recording are texts")
        if not isinstance(via, list | None) or not isinstance(resume, str | None):
            raise TypeError("via is a list, resume a text")
        if not isinstance(worktree, str | None):
            raise TypeError("worktree is a text")
        if not isinstance(data["argv"], list) or not isinstance(data["command"], list):
            raise TypeError("argv and command are lists")
        return cls(
            id=str(data["id"]),
            name=_unb64(data["name"]),
            argv=[_unb64(arg) for arg in data["argv"]],
            command=[_unb64(arg) for arg in data["command"]],
            cwd=_unb64(data["cwd"]),
            agent=agent,
            created_at=int(data["created_at"]),
            nonce=str(data["nonce"]),
            recording=recording,
            term=str(data.get("term", DEFAULT_TERM)),
            via=None if via is None else [_unb64(word) for word in via],
            resume=resume,
            worktree=None if worktree is None else _unb64(worktree),
        )


def _b64(name: str) -> str:
    return base64.b64encode(os.fsencode(name)).decode("ascii")


def _unb64(data: str) -> str:
    return os.fsdecode(base64.b64decode(data, validate=True))
