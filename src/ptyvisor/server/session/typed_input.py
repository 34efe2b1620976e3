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
such an Enter on its own, ``gap`` seconds after what came before it — the other
agents, a plain program and a lone Enter are not delayed at all.

I/O-free: the session writes what `TypedInput.next` gives when it says so.
"""

from __future__ import annotations

from collections import deque

ENTER = b"\r"


class TypedInput:
    """Input queued for one program (see the module's notes)."""

    def __init__(self, *, limit: int, gap: float | None = None) -> None:
        """``limit``: bytes queued at most; ``gap``: how long an Enter must follow
        the keys before it (None: no agent that needs it)."""
        self._limit = limit
        self._gap = gap
        self._chunks: deque[tuple[bytes, float]] = deque()
        """(bytes, not before this monotonic time), in the order typed."""
        self._queued = 0
        self._last_at = float("-inf")
        """When the last keys were queued to go (monotonic)."""

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
            self._push(ENTER, not_before + gap)
        elif gap is not None and data == ENTER and now - self._last_at < gap:
            self._push(ENTER, self._last_at + gap)
        else:
            self._push(data, not_before)
        return True

    def _push(self, data: bytes, not_before: float) -> None:
        self._chunks.append((data, not_before))
        self._queued += len(data)
        self._last_at = max(self._last_at, not_before)

    def next(self, now: float) -> bytes | float | None:
        """What to write now (all that may go, joined), or how many seconds until
        something may go, or None when nothing is queued."""
        if not self._chunks:
            return None
        not_before = self._chunks[0][1]
        if not_before > now:
            return not_before - now
        parts = []
        while self._chunks and self._chunks[0][1] <= now:
            parts.append(self._chunks.popleft()[0])
        joined = b"".join(parts)
        self._queued -= len(joined)
        return joined

    def put_back(self, rest: bytes) -> None:
        """What the program did not take of the last `next`: it goes first."""
        if rest:
            self._chunks.appendleft((rest, float("-inf")))
            self._queued += len(rest)

    def clear(self) -> None:
        self._chunks.clear()
        self._queued = 0
