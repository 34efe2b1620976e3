"""What clients type, on its way to the program: bounded, in order, and with an Enter
held back for an agent that loses one typed too soon after the keys before it.

Gemini CLI 0.61 loses an Enter that follows other input closely, in two ways
(`agents.launch.SUBMIT_GAP`): within 30 ms of the previous key it takes it for
Shift+Enter, a newline in the box (its guard against pasted text, active because no
terminal here speaks the kitty keyboard protocol); and in the few milliseconds after it
draws newly typed text, it runs the key handler from before that text, which finds the
box empty and does nothing. Nothing it writes marks the end of that window. So a client
that types a prompt and Enter at once (``send-keys TEXT Enter``, or text and ``\\r``
in one write), or Enter the instant the text shows, lost the prompt. The queue sends
such an Enter on its own, once the program has drawn what came before it and then
been quiet for ``gap`` seconds (`output_seen`): a fixed delay alone was not enough on
a busy machine, where the program may not even have read the text by then, and text
and Enter read together are a newline again. A program that draws nothing gets the
Enter `SETTLE_LIMIT` seconds after the text at the latest. The other agents, a plain
program and a lone Enter are not delayed at all.

I/O-free: the session writes what `TypedInput.next` gives when it says so.
"""

from __future__ import annotations

from collections import deque

ENTER = b"\r"
SETTLE_LIMIT = 3.0
"""Seconds after the text at most that a held Enter waits for the program to draw it
and go quiet (one that keeps drawing, or never echoes, gets it then)."""


class TypedInput:
    """Input queued for one program (see the module's notes)."""

    def __init__(self, *, limit: int, gap: float | None = None) -> None:
        """``limit``: bytes queued at most; ``gap``: how long an Enter must follow
        the keys before it (None: no agent that needs it)."""
        self._limit = limit
        self._gap = gap
        self._chunks: deque[tuple[bytes, float, bool]] = deque()
        """(bytes, not before this monotonic time, whether it waits for the program to
        settle: a held Enter), in the order typed."""
        self._queued = 0
        self._last_at = float("-inf")
        """When the last keys were queued to go (monotonic)."""
        self._wrote_at = float("-inf")
        """When `next` last gave something to write."""
        self._output_at = float("-inf")
        """When the program last wrote anything (`output_seen`)."""

    def __len__(self) -> int:
        return self._queued

    def add(self, data: bytes, now: float) -> bool:
        """Queue ``data`` typed at ``now``; False (nothing queued) past the limit."""
        if self._queued + len(data) > self._limit:
            return False
        gap = self._gap
        not_before = self._chunks[-1][1] if self._chunks else now
        if gap is not None and data.endswith(ENTER) and data != ENTER * len(data):
            self._push(data[: -len(ENTER)], not_before)
            self._push(ENTER, not_before + gap, settles=True)
        elif gap is not None and data == ENTER and now - self._last_at < gap:
            self._push(ENTER, self._last_at + gap, settles=True)
        else:
            self._push(data, not_before)
        return True

    def output_seen(self, now: float) -> None:
        """The program wrote something (its drawing of what it was sent, say)."""
        self._output_at = now

    def _push(self, data: bytes, not_before: float, *, settles: bool = False) -> None:
        self._chunks.append((data, not_before, settles))
        self._queued += len(data)
        self._last_at = max(self._last_at, not_before)

    def next(self, now: float) -> bytes | float | None:
        """What to write now (all that may go, joined), or how many seconds until
        something may go, or None when nothing is queued."""
        if not self._chunks:
            return None
        wait = self._wait(now, self._chunks[0])
        if wait > 0:
            return wait
        parts: list[bytes] = []
        while self._chunks and (not parts or not self._chunks[0][2]):
            if self._wait(now, self._chunks[0]) > 0:
                break
            parts.append(self._chunks.popleft()[0])
        joined = b"".join(parts)
        self._queued -= len(joined)
        self._wrote_at = now
        return joined

    def _wait(self, now: float, chunk: tuple[bytes, float, bool]) -> float:
        """Seconds until ``chunk`` may go (0: now). A held Enter goes once the program
        has written something since the last write and then been quiet for the gap,
        or `SETTLE_LIMIT` after that write; meanwhile the caller looks again soon."""
        _data, not_before, settles = chunk
        if not settles or self._gap is None:
            return max(0.0, not_before - now)
        limit = max(not_before, self._wrote_at + SETTLE_LIMIT)
        if self._output_at > self._wrote_at:
            ready = min(max(not_before, self._output_at + self._gap), limit)
            return max(0.0, ready - now)
        return max(0.0, min(limit - now, self._gap / 2)) if now < limit else 0.0

    def put_back(self, rest: bytes) -> None:
        """What the program did not take of the last `next`: it goes first."""
        if rest:
            self._chunks.appendleft((rest, float("-inf"), False))
            self._queued += len(rest)

    def clear(self) -> None:
        self._chunks.clear()
        self._queued = 0
