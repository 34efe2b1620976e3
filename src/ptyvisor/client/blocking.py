"""What every blocking twin shares: a call, a stream, on the portal's loop.

``client/sync.py`` is generated from ``client/scripting.py`` (``scripts/unasync.py``);
its classes derive from `Blocking`, which holds the async object and the anyio
blocking portal whose event loop (in a thread of its own) runs it.
"""

from __future__ import annotations

import queue
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import aclosing
from typing import Any, Generic, TypeVar

from anyio.from_thread import BlockingPortal

T = TypeVar("T")
W = TypeVar("W")


class Blocking(Generic[W]):
    """The blocking twin of an async object ``W``."""

    def __init__(self, portal: BlockingPortal, wrapped: W) -> None:
        self._portal = portal
        self._async = wrapped

    def __repr__(self) -> str:
        return repr(self._async)

    def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        """Wait for ``call()`` on the portal's loop."""
        return self._portal.call(call)

    def _iterate(self, stream: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
        """Run the async iterator in one task on the portal's loop (its connection
        lives in that task) and hand its items over through a queue."""
        items: queue.Queue[tuple[str, Any]] = queue.Queue()

        async def pump() -> None:
            try:
                # aclosing: a cancelled pump still closes the stream in this task.
                async with aclosing(stream()) as iterator:  # type: ignore[type-var]
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
