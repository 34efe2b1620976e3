"""The Python API for scripts and tests: `connect()` and `Session`.

    async with ptyvisor.connect() as remote:
        session = await remote.spawn(["bash"], name="demo")
        await session.send_keys("echo hi", "Enter")
        await session.wait_for(text=r"^hi$", timeout=10)
        print((await session.screen()).rows)

`connect()` finds the server and token as the CLI does (arguments, then
``$PTYVISOR_URL`` / ``$PTYVISOR_TOKEN``, contexts, then the state directory); its
``url`` may be ``ssh://[user@]host`` (`ptyvisor.client.ssh`) or a context's name
(`ptyvisor.client.contexts`). A `Session`
names one session; requests share the connection, while what follows a stream
(`wait_for`, `output`, `events`) opens its own, attached as a viewer, so it never
types into or resizes the program. ``ptyvisor.client.sync`` wraps all of it for plain,
blocking scripts.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.agents.interaction import Interaction
from ptyvisor.client.client import Behavior, Client, ConnectionLost, Output
from ptyvisor.client.contexts import chosen_url
from ptyvisor.client.ssh import is_ssh
from ptyvisor.client.waiting import Condition, wait
from ptyvisor.config import read_token
from ptyvisor.errors import BadReference, Disconnected, SessionVanished, WaitTimeout
from ptyvisor.wire.protocol import (
    ActivityChanged,
    Captured,
    ProcessChanged,
    SessionClosed,
    SessionSummary,
    Transition,
)
from ptyvisor.wire.refs import resolve

ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|\x1b[ -/][0-~]"  # charset designations and the like
    r"|[\x00-\x08\x0b-\x1f\x7f]"  # control characters but tab and newline
)
"""Terminal escape sequences and controls, for `Session.output(strip=True)`."""


def server_url(url: str | None = None, context: str | None = None) -> str:
    """The server's URL as the CLI finds it (`contexts.chosen_url`): ``url`` may be a
    ``ws://``, ``wss://`` or ``ssh://`` URL, the ``http(s)://`` one of its page, or a
    context's name."""
    if url is not None and "://" not in url:
        url, context = None, url  # a context's name
    chosen = chosen_url(url, context)
    parts = urlsplit(chosen)
    if parts.scheme in ("http", "https"):
        return urlunsplit(("wss" if parts.scheme == "https" else "ws", parts.netloc, "/", "", ""))
    return chosen


def client_token(url: str, token: str | None, state_dir: Path | None = None) -> str | None:
    """The token to offer ``url``: ``token`` if given; for a server on this machine,
    else the stored one; for one reached through ``ssh://``, the one its far end reads
    there (None here), so this machine's token never leaves it."""
    if token or is_ssh(url):
        return token
    return read_token(state_dir)


@asynccontextmanager
async def connect(
    url: str | None = None, token: str | None = None, *, state_dir: Path | None = None
) -> AsyncIterator[Remote]:
    """Connect to a server the way the CLI does; see the module's docstring."""
    address = server_url(url)
    secret = client_token(address, token, state_dir)
    async with Client.connect(address, secret) as client:
        yield Remote(client, address, secret)


class Remote:
    """A connected server: its sessions, and new ones."""

    def __init__(self, client: Client, url: str, token: str | None) -> None:
        self.client = client
        self.url = url
        self._token = token

    async def sessions(self, *, past: bool = False) -> list[SessionSummary]:
        return await self.client.list(all=past)

    async def spawn(
        self,
        argv: Sequence[str] = (),
        *,
        name: str | None = None,
        cwd: str | None = None,
        agent: str | None = None,
        env: Mapping[str, str] | None = None,
        cols: int = 80,
        rows: int = 24,
        worktree: str | None = None,
    ) -> Session:
        """``worktree``: start it in a new git worktree of this name ("": the session's
        id), on its own branch (docs/sessions.md, Worktrees)."""
        summary = await self.client.spawn(
            argv, cwd=cwd or os.getcwd(), env=dict(env or {}), name=name, cols=cols, rows=rows,
            agent=agent, worktree=worktree,
        )  # fmt: skip
        return Session(self, summary.id)

    async def session(self, ref: str) -> Session:
        """The session ``ref`` names: an id, an exact name, or a unique id prefix."""
        try:
            return Session(self, resolve(await self.client.list(), ref))
        except BadReference as bad:
            raise LookupError(bad.message) from None

    @asynccontextmanager
    async def _own_connection(self) -> AsyncIterator[Client]:
        """A connection of its own, for something that follows a stream."""
        async with Client.connect(self.url, self._token) as client:
            yield client


class Session:
    """One session on a `Remote`: keys in, screen and state out."""

    def __init__(self, remote: Remote, session_id: str) -> None:
        self.remote = remote
        self.id = session_id

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    async def summary(self) -> SessionSummary:
        for summary in await self.remote.client.list(all=True):
            if summary.id == self.id:
                return summary
        raise LookupError(f"session {self.id} is gone")

    async def prompt(
        self, text: str, *, ready_wait: float = 120.0, confirm_wait: float = 20.0
    ) -> int:
        """Type ``text`` as the agent's next prompt once it is ready, and return when
        (Unix ms) it reported taking it; ServerError ``prompt_not_taken`` says why it
        did not (docs/answering.md, *A prompt that is confirmed*)."""
        return await self.remote.client.prompt(
            self.id, text, ready_wait=ready_wait, confirm_wait=confirm_wait
        )

    async def send_keys(self, *keys: str, literal: bool = False, paste: bool = False) -> None:
        """Keys by name and text, as ``ptyvisor send-keys`` (see `ptyvisor.terminal.keys`)."""
        await self.remote.client.send_keys(self.id, *keys, literal=literal, paste=paste)

    async def type(self, text: str) -> None:
        """Type ``text`` as it is (no key names)."""
        await self.send_keys(text, literal=True)

    async def screen(self, *, scrollback: int = 0) -> Captured:
        """The screen now: ``rows`` as text, ``cursor_row``/``cursor_col``, ``title``,
        ``modes``, ``size``; with ``scrollback`` lines above (-1: all)."""
        return await self.remote.client.capture(self.id, scrollback=scrollback)

    async def wait_for(
        self,
        *,
        phase: str | Sequence[str] | None = None,
        text: str | re.Pattern[str] | None = None,
        exit: bool = False,
        quiet: float | None = None,
        timeout: float = 30,  # noqa: ASYNC109 - a deadline whose outcome is reported
    ) -> None:
        """Return once every condition given holds (as ``ptyvisor wait``); raise
        WaitTimeout after ``timeout`` seconds, or at once when it can no longer hold.
        ``text`` is matched against each line of the screen on its own."""
        phases = [phase] if isinstance(phase, str) else list(phase or ())
        condition = Condition(
            phases=frozenset(ActivityPhase(p) for p in phases),
            text=re.compile(text) if isinstance(text, str) else text,
            exited=exit,
            quiet=quiet,
        )
        if condition.empty:
            condition = Condition(exited=True)
        async with self.remote._own_connection() as client:
            try:
                outcome = await wait(client, self.id, condition, seconds=timeout)
            except SessionVanished:
                raise WaitTimeout(f"session {self.id} is gone") from None
        if outcome == "timeout":
            raise WaitTimeout(f"{self.id}: not within {timeout:g} s")
        if outcome == "cannot":
            raise WaitTimeout(f"{self.id}: the program has exited; it can no longer hold")

    async def output(self, *, strip: bool = False, since: int = 0) -> AsyncIterator[bytes]:
        """The program's output as it comes (from ``since``, as far back as the server
        still holds it), until it exits; ``strip`` removes escape sequences."""
        async with self.remote._own_connection() as client:
            attached = await client.attach(self.id, since=since, view_only=True)
            if attached.snapshot is not None:
                yield _clean(attached.snapshot.screen.ansi.encode(), strip)
            async for event in client.events():
                match event:
                    case Output():
                        yield _clean(event.data, strip)
                    case ProcessChanged() if event.process.state == "exited":
                        return
                    case SessionClosed() | ConnectionLost():
                        return
                    case _:
                        pass

    async def events(self) -> AsyncIterator[Transition | ProcessChanged]:
        """The recorded activity transitions, then each change (activity, process) as
        it happens, until the program exits."""
        async with self.remote._own_connection() as client:
            timeline = await client.timeline(self.id)
            for transition in timeline.transitions:
                yield transition
            if timeline.ended_at is not None:  # over already: how it ended closes the list
                summary = await self.summary()
                yield ProcessChanged(session=self.id, process=summary.process)
                return
            await client.attach(self.id, view_only=True, scrollback=False)
            async for event in client.events():
                match event:
                    case ActivityChanged() if event.session == self.id:
                        activity = event.activity
                        yield Transition(
                            at=activity.since, phase=activity.phase, reason=activity.reason
                        )
                    case ProcessChanged() if event.session == self.id:
                        yield event
                        if event.process.state == "exited":
                            return
                    case SessionClosed() | ConnectionLost():
                        return
                    case _:
                        pass

    async def interaction(self) -> Interaction | None:
        """The approval or question the agent is waiting on, if any."""
        return (await self.summary()).pending_interaction

    async def answer(
        self,
        *,
        behavior: Behavior | None = None,
        message: str | None = None,
        suggestion: int | None = None,
        answers: Mapping[str, Sequence[str] | str] | None = None,
    ) -> None:
        """Answer the pending interaction: ``behavior="allow"``/``"deny"``, ``message``,
        ``suggestion``, or ``answers={question_id: [labels] or "text"}``."""
        pending = await self.interaction()
        if pending is None:
            raise LookupError(f"{self.id} is waiting on nothing")
        await self.remote.client.answer(
            self.id,
            pending.id,
            behavior=behavior,
            message=message,
            suggestion=suggestion,
            answers=answers,
        )

    async def kill(self) -> None:
        await self.remote.client.kill(self.id)

    async def close(self, *, remove_worktree: bool = False) -> None:
        """End the session; ``remove_worktree``: and its worktree, unless it has
        changes (ServerError ``worktree_kept``)."""
        await self.remote.client.close(self.id, remove_worktree=remove_worktree)


def _clean(data: bytes, strip: bool) -> bytes:
    if not strip:
        return data
    return ESCAPES.sub("", data.decode(errors="replace")).encode()


__all__ = [
    "Disconnected",
    "Remote",
    "Session",
    "WaitTimeout",
    "connect",
    "server_url",
]
