"""A prompt that is confirmed delivered (the ``prompt`` request), for one session.

`Prompter.deliver` waits until the agent is at its input prompt, types the text and
Enter, and returns only once the agent's own extension reports taking a prompt with
that digest (digest.prompt_digest; session/core.py turns such a frame into
`PromptTaken`, which the session hands to `Prompter.taken`). Not confirmed after a
third of the wait: text still on screen gets another Enter; text that never showed,
with the agent still idle, is typed once more (it was lost before it was drawn) — so
the text is never in the input box twice.

It sees its session through `Typist`, a few methods, so tests drive it with a fake.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import anyio

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.agents.digest import one_line, prompt_digest
from ptyvisor.agents.launch import pasted_as
from ptyvisor.errors import PromptNotTaken
from ptyvisor.terminal.keys import encode_keys

IDLE = (ActivityPhase.WAITING, ActivityPhase.FAILED)
"""An agent at its input prompt: ready (or its last turn failed)."""
TRIES = 3
"""Looks at a prompt not yet confirmed: each may press Enter again."""
POLL_SECONDS = 0.5
"""How often a wait for a phase also looks whether the program has ended."""


class Typist(Protocol):
    """What delivering a prompt needs of its session."""

    def phase(self) -> ActivityPhase: ...
    def ended(self) -> bool: ...
    def write_input(self, data: bytes) -> bool: ...
    async def bracketed_paste(self) -> bool: ...
    async def screen_rows(self) -> list[str]: ...


class Prompter:
    """One session's prompts under way, by digest."""

    def __init__(
        self, typist: Typist, now_ms: Callable[[], int], *, agent: str | None = None
    ) -> None:
        """``agent``: whose input box the prompts go to (some report a long paste by
        a marker of their own, launch.pasted_as)."""
        self._agent = agent
        self._typist = typist
        self._now_ms = now_ms
        self._waiting: dict[str, anyio.Event] = {}
        self._changed = anyio.Event()

    def taken(self, digest: str) -> None:
        """The agent reported taking the prompt with this digest."""
        waiter = self._waiting.get(digest)
        if waiter is not None:
            waiter.set()

    def activity_changed(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def deliver(self, text: str, *, ready_wait: float, confirm_wait: float) -> int:
        """Type ``text`` as the next prompt; when (Unix ms) the agent took it. Raises
        PromptNotTaken saying why it did not (``exited`` if the program ended)."""
        typist = self._typist
        if not await self._idle_within(ready_wait):
            raise PromptNotTaken(
                f"the agent was not ready for input within {ready_wait:g} s "
                f"(it is {typist.phase().value})",
                exited=typist.ended(),
            )
        bracketed = await typist.bracketed_paste()
        marker = pasted_as(self._agent, text) if bracketed else None
        digests = {prompt_digest(text), *([prompt_digest(marker)] if marker else [])}
        taken = next((self._waiting[d] for d in digests if d in self._waiting), anyio.Event())
        for digest in digests:
            self._waiting.setdefault(digest, taken)
        try:
            if not bracketed:  # a line break would submit early: words stay words
                text = one_line(text)  # the digest's own spaces: a no-break space stays
            data = encode_keys([text], paste=True, bracketed_paste=bracketed) + b"\r"
            if not typist.write_input(data):
                raise PromptNotTaken("the program is not reading its input", exited=True)
            retyped = False
            for _ in range(TRIES):
                with anyio.move_on_after(confirm_wait / TRIES):
                    await taken.wait()
                    return self._now_ms()
                if typist.ended():
                    raise PromptNotTaken("the program ended before it took the prompt", exited=True)
                if shows(text, await typist.screen_rows()):
                    typist.write_input(b"\r")  # typed, not submitted: submit it
                elif not retyped and typist.phase() in IDLE:
                    retyped = typist.write_input(data)  # lost before it was drawn
            raise PromptNotTaken(
                f"the agent did not report taking the prompt within {confirm_wait:g} s"
            )
        finally:
            for digest in digests:
                self._waiting.pop(digest, None)

    async def _idle_within(self, wait: float) -> bool:
        """Whether the agent is at its input prompt, now or within ``wait`` seconds,
        before its program ends."""
        typist = self._typist
        with anyio.move_on_after(wait):
            while typist.phase() not in IDLE or typist.ended():
                if typist.ended():
                    return False
                changed = self._changed
                with anyio.move_on_after(POLL_SECONDS):  # an exit sets no change
                    await changed.wait()
            return True
        return False


def shows(text: str, rows: Sequence[str]) -> bool:
    """Whether the screen shows the start of ``text`` (in an input box, say): its
    first line's first 24 characters, which one row holds however the box wraps."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    start = " ".join(first.split())[:24]
    return bool(start) and any(start in " ".join(row.split()) for row in rows)
