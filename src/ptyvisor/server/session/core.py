"""What one program's output and its clients' keys mean, with no I/O at all.

Fed the bytes the program wrote (`SessionCore.output`), the keys clients typed, the
screen the headless terminal shows and the time, it splits frames from output
(scanner.FrameScanner), authenticates each frame (frames.decode_frame, its payload's
schema, its time), hands what it means to the activity rules (activity.ActivityRules),
keeps the queued message, and counts every frame. What the session must then do —
publish a change, withdraw held requests — comes back as effects, so this is tested
the way websockets' protocol is: bytes and events in, results out, no event loop.

    bytes ──▶ FrameScanner ──┬──▶ frames ──▶ authentication ──▶ ActivityRules ──▶ effects
                             └──▶ output (for the log, the clients, the terminal)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from pydantic import ValidationError

from ptyvisor.agents.activity import (
    FRAME_PAYLOAD,
    ActivityPhase,
    ActivityReport,
    ActivityRules,
    ActivityTracker,
    Changed,
    DropQueuedMessage,
    Event,
    FrameApplied,
    IdRefused,
    MessageQueued,
    ProgramExited,
    Stale,
    Which,
    Withdraw,
)
from ptyvisor.agents.via import HELLO, HELLO_SECONDS, missing
from ptyvisor.server.control import nonce_matches
from ptyvisor.wire.frames import Rejected, RejectReason, decode_frame
from ptyvisor.wire.link import HandedFrames, HandedScreen, SessionHandover
from ptyvisor.wire.scanner import FrameScanner, ScanResult

log = logging.getLogger(__name__)

MAX_FRAME_AHEAD_MS = 5 * 60 * 1000
"""A frame stamped further ahead of the server's clock is rejected (``future``); one
less far ahead counts as stamped now, so no frame can hold activity still."""
MAX_MESSAGE = 4000
"""Longest message a client may queue for a session (`SessionCore.queue_message`)."""


@dataclass(frozen=True, slots=True)
class QueueChanged:
    """The queued message came, went or changed: the session list shows it."""


@dataclass(frozen=True, slots=True)
class ViaHello:
    """The far side of the session's wrapper asked for its setup (agents/via.py): the
    session types it into the terminal, once."""


@dataclass(frozen=True, slots=True)
class PromptTaken:
    """The agent reported taking a prompt, by its digest (digest.prompt_digest)."""

    digest: str


Outcome = Changed | QueueChanged | ViaHello | PromptTaken
"""What the session must make known after feeding the core."""


@dataclass
class FrameCounts:
    applied: int = 0
    ignored: int = 0
    """Authentic but older than the last applied: it changed nothing."""
    rejected: dict[str, int] = field(default_factory=dict)
    """By reason (frames.RejectReason); ``error`` for a bug applying one."""


class SessionCore:
    """One session's meaning, fed from outside (see the module's notes)."""

    def __init__(
        self,
        session_id: str,
        nonce: str,
        *,
        agent: str | None,
        created_at: int,
        agent_args: Sequence[str] = (),
        resumed: bool = False,
        withdraw: Callable[[int, Which], bool] | None = None,
        via: tuple[list[str], str] | None = None,
    ) -> None:
        """``agent_args``, ``resumed``: the user's own arguments to the agent, and
        whether ptyvisor resumed its conversation (`ActivityRules`).
        ``withdraw(before, which)``: withdraw held requests a frame ends (the
        control socket's), returning whether any were. ``via``: the wrapper an agent
        runs through and the one-time token of its far side's hello (agents/via.py)."""
        self.id = session_id
        self._nonce = nonce
        self._via = via
        self._hello_until = created_at + int(HELLO_SECONDS * 1000)
        self._withdraw = withdraw
        self._scanner = FrameScanner()
        self.rules = ActivityRules(created_at, agent=agent, args=agent_args, resumed=resumed)
        self.frames = FrameCounts()
        self.queued_message: str | None = None
        """One message for the agent's next Stop hook (see `queue_message`)."""
        self._message_generation = 0

    @property
    def tracker(self) -> ActivityTracker:
        return self.rules.tracker

    def handover(self, screen: HandedScreen) -> SessionHandover:
        """What the next server needs at a planned restart, besides the ring."""
        frames = self.frames
        return SessionHandover(
            session=self.id,
            tracker=self.tracker.export(),
            screen=screen,
            queued_message=self.queued_message,
            frames=HandedFrames(frames.applied, frames.ignored, dict(frames.rejected)),
        )

    def take_over(self, state: SessionHandover) -> None:
        """Continue from what the previous server handed over (`handover`)."""
        self.tracker.restore(state.tracker)
        self.queued_message = state.queued_message
        kept = state.frames
        self.frames = FrameCounts(kept.applied, kept.ignored, dict(kept.rejected))

    def nonce_matches(self, nonce: str) -> bool:
        """Whether ``nonce`` is this spawn's secret (constant time)."""
        return nonce_matches(self._nonce, nonce)

    # ------------------------------------------------------------------ output

    def output(self, data: bytes, now: int, seq: int) -> tuple[bytes, list[Outcome]]:
        """The program wrote ``data``, its output so far ending at ``seq``: its output
        without frames, and what the frames in it changed. Never raises (a bug applying
        a frame costs that frame)."""
        return self._scanned(self._scanner.feed(data), now, seq)

    def end_of_output(self, now: int, seq: int) -> tuple[bytes, list[Outcome]]:
        """The program's output ended: a partial frame prefix held was its own output."""
        return self._scanned(self._scanner.flush(), now, seq)

    def _scanned(self, scanned: ScanResult, now: int, seq: int) -> tuple[bytes, list[Outcome]]:
        outcomes: list[Outcome] = []
        after = seq + len(scanned.output)  # a screen drawn this far shows the frames' time
        for body in scanned.frames:
            outcomes += self._frame(body, now, after)
        if scanned.dropped:
            self._reject(RejectReason.UNTERMINATED.value, scanned.dropped)
        return scanned.output, outcomes

    def _frame(self, body: bytes, now: int, seq: int) -> list[Outcome]:
        """Authenticate and apply one frame. A bug in applying it costs that frame
        (counted as ``error``, logged once), never the session."""
        try:
            return self._authentic(body, now, seq)
        except Exception:
            if "error" not in self.frames.rejected:
                log.exception("session %s: applying a frame failed", self.id)
            self.frames.rejected["error"] = self.frames.rejected.get("error", 0) + 1
            return []

    def _authentic(self, body: bytes, now: int, seq: int) -> list[Outcome]:
        decoded = decode_frame(body, self.id, self._nonce)
        if isinstance(decoded, Rejected):
            if decoded.reason is RejectReason.NONCE and self._hello(body, now):
                return [ViaHello()]
            self._reject(decoded.reason.value)
            return []
        try:
            payload = FRAME_PAYLOAD.validate_python(decoded)
        except ValidationError:
            self._reject(RejectReason.INVALID.value)
            return []
        if payload.at > now + MAX_FRAME_AHEAD_MS:
            # Authentic but absurd (10^30): it would freeze activity until the exit.
            self._reject(RejectReason.FUTURE.value)
            return []
        if payload.at > now:
            payload = payload.model_copy(update={"at": now})
        stale = withdrew = False
        outcomes: list[Outcome] = []
        for effect in self.rules.handle(FrameApplied(payload, seq)):
            match effect:
                case Stale():
                    stale = True
                case IdRefused():
                    self._reject(RejectReason.NATIVE_ID.value)
                case Withdraw(before=before, which=which) if self._withdraw is not None:
                    withdrew = self._withdraw(before, which) or withdrew
                case DropQueuedMessage():
                    outcomes += self.drop_message()
                case Changed():
                    outcomes.append(effect)
        if stale and not withdrew:
            self.frames.ignored += 1  # older than what was applied: it changed nothing
        else:
            self.frames.applied += 1
        if isinstance(payload, ActivityReport) and payload.prompt is not None:
            outcomes.append(PromptTaken(payload.prompt))  # stale or not: it was taken
        return outcomes

    def _hello(self, body: bytes, now: int) -> bool:
        """Whether ``body`` is the far side's hello: its token, in time, once."""
        if self._via is None or now > self._hello_until:
            return False
        decoded = decode_frame(body, self.id, self._via[1])
        if isinstance(decoded, Rejected) or decoded.get("type") != HELLO:
            return False
        self._via = (self._via[0], "")  # used: no second setup for anyone
        return True

    @property
    def awaiting_hello(self) -> bool:
        """A wrapped agent whose far side has not said hello yet."""
        return self._via is not None and bool(self._via[1])

    def _reject(self, reason: str, count: int = 1) -> None:
        first = reason not in self.frames.rejected
        self.frames.rejected[reason] = self.frames.rejected.get(reason, 0) + count
        if first:
            # Once per reason; never the frame itself (it may carry the nonce).
            log.warning("session %s: rejected activity frame: %s", self.id, reason)

    # ------------------------------------------------------------------ everything else

    def feed(self, event: Event) -> list[Outcome]:
        """Anything but output (the screen, a key, signals, the time, the exit) for the
        activity rules; what the session must make known."""
        if isinstance(event, ProgramExited) and self._via is not None and self.awaiting_hello:
            event = replace(event, why=missing(self._via[0], event.exit_code))
        outcomes: list[Outcome] = []
        for effect in self.rules.handle(event):
            if isinstance(effect, Changed):
                outcomes.append(effect)
            elif isinstance(effect, DropQueuedMessage):
                outcomes += self.drop_message()
        return outcomes

    # ------------------------------------------------------------------ queued message

    def queue_message(self, text: str, now: int) -> bool:
        """Queue ``text`` for the agent's next Stop, replacing any queued one; False
        (nothing queued) unless the agent is working on a turn."""
        if self.rules.activity.phase is not ActivityPhase.WORKING:
            return False
        self.queued_message = text
        self.rules.handle(MessageQueued(now))
        self._message_generation += 1
        return True

    def drop_message(self) -> list[Outcome]:
        """Deleted, a new prompt, or the session's end: a message taken meanwhile is
        not put back either."""
        self._message_generation += 1
        if self.queued_message is None:
            return []
        self.queued_message = None
        return [QueueChanged()]

    def take_message(self) -> tuple[str, int] | None:
        """The queued message and its generation, taken out; None if there is none."""
        text = self.queued_message
        if text is None:
            return None
        self.queued_message = None
        return text, self._message_generation

    def put_back_message(self, text: str, generation: int) -> bool:
        """A taken message was not delivered: queued again unless superseded since;
        returns whether it was."""
        if generation == self._message_generation and self.queued_message is None:
            self.queued_message = text
            return True
        return False
