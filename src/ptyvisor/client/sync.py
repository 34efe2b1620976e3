"""Blocking wrappers of `ptyvisor.client.scripting`, for plain scripts and tests.

    import ptyvisor.client.sync

    with ptyvisor.client.sync.connect() as remote:
        session = remote.spawn(["bash"])
        session.send_keys("echo hi", "Enter")
        session.wait_for(text=r"^hi$", timeout=10)
        print(session.screen().rows)

The async API runs on an event loop in a thread of its own (an anyio blocking
portal); every method here waits for its coroutine there. Streams (`output`,
`events`) are iterators that block for their next item.
"""

from __future__ import annotations

import queue
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import aclosing, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from ptyvisor.agents.interaction import Interaction
from ptyvisor.client import scripting
from ptyvisor.client.client import Behavior
from ptyvisor.errors import WaitTimeout
from ptyvisor.wire.protocol import Captured, ProcessChanged, SessionSummary, Transition

__all__ = ["Remote", "Session", "WaitTimeout", "connect"]

T = TypeVar("T")


@contextmanager
def connect(
    url: str | None = None, token: str | None = None, *, state_dir: Path | None = None
) -> Iterator[Remote]:
    """Connect as `ptyvisor.client.scripting.connect` does; closed when the block ends."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            scripting.connect(url, token, state_dir=state_dir)
        ) as remote,
    ):
        yield Remote(portal, remote)


class Remote:
    def __init__(self, portal: BlockingPortal, remote: scripting.Remote) -> None:
        self._portal = portal
        self._remote = remote

    def sessions(self, *, past: bool = False) -> list[SessionSummary]:
        return self._portal.call(lambda: self._remote.sessions(past=past))

    def spawn(
        self,
        argv: Sequence[str] = (),
        *,
        name: str | None = None,
        cwd: str | None = None,
        agent: str | None = None,
        env: Mapping[str, str] | None = None,
        cols: int = 80,
        rows: int = 24,
    ) -> Session:
        """See `ptyvisor.client.scripting.Remote.spawn`."""
        spawned = self._portal.call(
            lambda: self._remote.spawn(
                argv, name=name, cwd=cwd, agent=agent, env=env, cols=cols, rows=rows
            )
        )
        return Session(self._portal, spawned)

    def session(self, ref: str) -> Session:
        return Session(self._portal, self._portal.call(self._remote.session, ref))


class Session:
    """A blocking `ptyvisor.client.scripting.Session`."""

    def __init__(self, portal: BlockingPortal, session: scripting.Session) -> None:
        self._portal = portal
        self._session = session
        self.id = session.id

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    def _call(self, call: Callable[[], Any]) -> Any:
        return self._portal.call(call)

    def summary(self) -> SessionSummary:
        result: SessionSummary = self._call(self._session.summary)
        return result

    def send_keys(self, *keys: str, literal: bool = False, paste: bool = False) -> None:
        self._call(lambda: self._session.send_keys(*keys, literal=literal, paste=paste))

    def type(self, text: str) -> None:
        self._call(lambda: self._session.type(text))

    def screen(self, *, scrollback: int = 0) -> Captured:
        result: Captured = self._call(lambda: self._session.screen(scrollback=scrollback))
        return result

    def wait_for(
        self,
        *,
        phase: str | Sequence[str] | None = None,
        text: str | re.Pattern[str] | None = None,
        exit: bool = False,
        quiet: float | None = None,
        timeout: float = 30,
    ) -> None:
        self._call(
            lambda: self._session.wait_for(
                phase=phase, text=text, exit=exit, quiet=quiet, timeout=timeout
            )
        )

    def output(self, *, strip: bool = False, since: int = 0) -> Iterator[bytes]:
        yield from self._iterate(lambda: self._session.output(strip=strip, since=since))

    def events(self) -> Iterator[Transition | ProcessChanged]:
        yield from self._iterate(self._session.events)

    def interaction(self) -> Interaction | None:
        result: Interaction | None = self._call(self._session.interaction)
        return result

    def answer(
        self,
        *,
        behavior: Behavior | None = None,
        message: str | None = None,
        suggestion: int | None = None,
        answers: Mapping[str, Sequence[str] | str] | None = None,
    ) -> None:
        self._call(
            lambda: self._session.answer(
                behavior=behavior, message=message, suggestion=suggestion, answers=answers
            )
        )

    def kill(self) -> None:
        self._call(self._session.kill)

    def close(self) -> None:
        self._call(self._session.close)

    def _iterate(self, stream: Callable[[], Any]) -> Iterator[Any]:
        """Run the async iterator in one task on the portal's loop (its connection
        lives in that task) and hand its items over through a queue."""
        items: queue.Queue[tuple[str, Any]] = queue.Queue()

        async def pump() -> None:
            try:
                # aclosing: a cancelled pump still closes the stream in this task.
                async with aclosing(stream()) as iterator:
                    async for item in iterator:
                        items.put(("item", item))
            except BaseException as error:  # handed to the caller, re-raised there
                items.put(("error", error))
                raise
            items.put(("end", None))

        future = self._portal.start_task_soon(pump)
        try:
            while True:
                kind, value = items.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
        finally:
            if not future.done():
                future.cancel()
