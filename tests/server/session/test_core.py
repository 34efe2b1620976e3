"""A session's I/O-free parts, driven directly: the core (core.py) fed bytes, keys
and time, and a program's end (ending.py). No PTY, no event loop."""

from __future__ import annotations

import json

import pytest

from ptyvisor.agents.activity import ActivityPhase, KeyTyped, ProgramExited, Which
from ptyvisor.agents.via import HELLO_SECONDS
from ptyvisor.server.session import SessionCore
from ptyvisor.server.session.core import MAX_FRAME_AHEAD_MS, PromptTaken, QueueChanged, ViaHello
from ptyvisor.server.session.ending import ENDED_BY, TRANSITIONS, End, ProgramEnd
from ptyvisor.wire import link as wire
from ptyvisor.wire.frames import encode_frame, new_nonce
from ptyvisor.wire.link import HandedScreen

SID = "s0000abcd"
NONCE = new_nonce()
NOW = 1_000_000


def report(phase: str, at: int = NOW - 10, **extra: object) -> bytes:
    return encode_frame(SID, NONCE, {"type": "activity", "phase": phase, "at": at, **extra})


class Withdrawals:
    def __init__(self, answer: bool = False) -> None:
        self.calls: list[tuple[int, Which]] = []
        self.answer = answer

    def __call__(self, before: int, which: Which) -> bool:
        self.calls.append((before, which))
        return self.answer


def core(agent: str | None = None, withdraw: Withdrawals | None = None) -> SessionCore:
    return SessionCore(SID, NONCE, agent=agent, created_at=0, withdraw=withdraw)


def test_output_loses_its_frames_and_they_apply_whole_or_split_at_any_byte() -> None:
    stream = b"before " + report("working", reason="on it") + b" after\r\n"
    whole = core()
    output, outcomes = whole.output(stream, NOW, 0)
    assert output == b"before  after\r\n" and outcomes
    assert whole.tracker.activity.phase is ActivityPhase.WORKING
    for cut in range(len(stream) + 1):
        split = core()
        first, _ = split.output(stream[:cut], NOW, 0)
        second, _ = split.output(stream[cut:], NOW, 0)
        rest, _ = split.end_of_output(NOW, 0)
        assert first + second + rest == output, cut
        assert split.tracker.activity == whole.tracker.activity, cut
        assert split.frames.applied == 1


def test_frames_that_are_not_authentic_or_absurd_are_counted_not_applied() -> None:
    c = core()
    forged = encode_frame(SID, new_nonce(), {"type": "activity", "phase": "working", "at": 1})
    far = report("working", at=NOW + MAX_FRAME_AHEAD_MS + 1)
    bad = encode_frame(SID, NONCE, {"type": "activity", "phase": "dancing", "at": 1})
    output, outcomes = c.output(forged + far + bad, NOW, 0)
    assert (output, outcomes) == (b"", [])
    assert c.frames.rejected == {"nonce": 1, "future": 1, "invalid": 1}
    assert c.tracker.activity.phase is ActivityPhase.UNAVAILABLE
    # A frame a little ahead of the clock counts as stamped now.
    c.output(report("working", at=NOW + 1000), NOW, 0)
    assert c.tracker.activity.since == NOW


def test_what_a_frame_ends_is_withdrawn_and_counted() -> None:
    withdrawals = Withdrawals(answer=True)
    c = core(withdraw=withdrawals)
    c.output(report("working", at=NOW - 5), NOW, 0)
    c.output(report("waiting", at=NOW - 2), NOW, 0)
    assert withdrawals.calls == [(NOW - 2, "main")]
    # An older frame changes nothing, but still withdraws what it ends: applied.
    c.output(report("waiting", at=NOW - 3), NOW, 0)
    assert (c.frames.applied, c.frames.ignored) == (3, 0)
    withdrawals.answer = False
    c.output(report("failed", at=NOW - 4), NOW, 0)
    assert c.frames.ignored == 1


def test_the_queued_message_waits_for_a_working_turn_and_goes_with_the_next_prompt() -> None:
    c = core(agent="claude-code")
    assert not c.queue_message("then this", NOW)  # starting: no turn
    c.output(report("working"), NOW, 0)
    assert c.queue_message("then this", NOW)
    taken = c.take_message()
    assert taken is not None and c.queued_message is None
    assert c.put_back_message(*taken)  # not delivered: back
    prompt = encode_frame(SID, NONCE, {"type": "interaction_cleared", "at": NOW})
    _, outcomes = c.output(prompt, NOW, 0)
    assert QueueChanged() in outcomes and c.queued_message is None
    assert not c.put_back_message(*taken)  # superseded meanwhile


def test_keys_and_the_exit_go_to_the_rules() -> None:
    c = core(agent="claude-code")
    c.output(report("working"), NOW, 0)
    assert c.feed(KeyTyped(b"\x03", NOW + 1))
    assert c.tracker.activity.reason == "interrupted"
    c.queue_message("x", NOW)  # not working any more: refused
    assert c.feed(ProgramExited(0, None, False, NOW + 2))
    assert c.tracker.activity.phase is ActivityPhase.STOPPED


@pytest.mark.parametrize("path", [["reaped"], ["kill", "reaped"], ["server", "reaped"]])
def test_a_programs_end_is_named_by_how_it_came(path: list[str]) -> None:
    end = ProgramEnd()
    for event in path[:-1]:
        assert not end.change(event)  # type: ignore[arg-type]
    before = end.state
    assert end.change("reaped") and end.reaped
    assert (end.state, end.ended) == (End.EXITED, ENDED_BY[before])
    with pytest.raises(LookupError, match="'reaped' in state exited"):
        end.change("reaped")


def test_closing_is_forgetting_whenever_it_comes() -> None:
    before = ProgramEnd()
    before.change("close")
    before.change("reaped")
    assert (before.state, before.ended, before.closing) == (End.CLOSED, "killed", True)
    after = ProgramEnd()
    after.change("reaped")
    after.change("close")
    assert (after.state, after.ended, after.closing) == (End.CLOSED, "exited", True)


def test_every_state_names_every_event_but_a_second_end() -> None:
    for state, events in TRANSITIONS.items():
        final = state in (End.EXITED, End.CLOSED)
        assert set(events) == {"kill", "close", "server"} | (set() if final else {"reaped"})


def test_a_handover_through_the_link_continues_where_it_was() -> None:
    """A planned restart: what the core hands over, sent as the link's JSON, gives the
    next server's core the same activity, pending question, queued message and counts."""
    before = core(agent="claude-code")
    approval = {"id": "req-1", "kind": "approval", "agent": "claude-code", "created_at": NOW - 5}
    question = {"type": "interaction", "at": NOW - 5, "interaction": approval}
    before.output(report("working", at=NOW - 9), NOW, 0)
    before.queue_message("then this", NOW)
    before.output(encode_frame(SID, NONCE, question) + report("working", at=NOW - 20), NOW, 0)
    before.output(encode_frame(SID, new_nonce(), {"type": "activity", "at": 1}), NOW, 0)
    sent = wire.to_json(wire.Handover([before.handover(HandedScreen("$ ", 7))]))
    received = wire.parse(json.loads(json.dumps(sent)))
    assert isinstance(received, wire.Handover)
    after = core(agent="claude-code")
    after.take_over(received.sessions[0])
    assert after.tracker.activity == before.tracker.activity
    assert after.tracker.pending == before.tracker.pending is not None
    assert after.queued_message == before.queued_message
    assert after.frames == before.frames and after.frames.ignored == 1
    assert received.sessions[0].screen == HandedScreen("$ ", 7)


# -- an agent through a wrapper (agents/via.py) ---------------------------------------

VIA = ["ssh", "-t", "far"]
TOKEN = new_nonce()


def hello(token: str = TOKEN, session: str = SID) -> bytes:
    return encode_frame(session, token, {"type": "via_hello", "at": 1})


def wrapped(created_at: int = NOW) -> SessionCore:
    return SessionCore(SID, NONCE, agent="pi", created_at=created_at, via=(VIA, TOKEN))


def test_the_far_sides_hello_is_answered_once_and_shown_to_nobody() -> None:
    c = wrapped()
    assert c.awaiting_hello
    output, outcomes = c.output(b"Last login: today\r\n" + hello(), NOW + 1, 0)
    assert output == b"Last login: today\r\n" and outcomes == [ViaHello()]
    assert not c.awaiting_hello
    # Printed again (cat of a log of this session): nothing more is typed.
    output, outcomes = c.output(hello(), NOW + 2, 0)
    assert (output, outcomes) == (b"", [])
    assert c.frames.rejected == {"nonce": 1}


@pytest.mark.parametrize(
    ("body", "at"),
    [
        (hello(token=new_nonce()), NOW + 1),  # another token
        (hello(session="s1111abcd"), NOW + 1),  # another session's
        (encode_frame(SID, TOKEN, {"type": "activity", "phase": "working", "at": 1}), NOW + 1),
        (hello(), NOW + int(HELLO_SECONDS * 1000) + 1),  # too late
    ],
)
def test_no_other_frame_gets_the_setup(body: bytes, at: int) -> None:
    c = wrapped()
    assert c.output(body, at, 0)[1] == []
    assert c.awaiting_hello and sum(c.frames.rejected.values()) == 1


def test_a_session_not_wrapped_answers_no_hello() -> None:
    c = core(agent="pi")
    assert c.output(hello(), NOW, 0)[1] == [] and not c.awaiting_hello


def test_a_far_side_that_ends_before_its_hello_says_why() -> None:
    c = wrapped()
    c.feed(ProgramExited(127, None, False, NOW + 5))
    reason = c.tracker.activity.reason or ""
    assert "far side of 'ssh -t far' has no ptyvisor" in reason
    other = wrapped()
    other.feed(ProgramExited(255, None, False, NOW + 5))  # ssh could not connect
    assert "'ssh -t far' ended before ptyvisor started" in (other.tracker.activity.reason or "")
    after = wrapped()
    after.output(hello(), NOW + 1, 0)
    after.feed(ProgramExited(127, None, False, NOW + 5))  # the agent's own status now
    assert after.tracker.activity.reason == "exited with status 127"


def test_a_frame_naming_a_prompt_says_it_was_taken_even_when_stale() -> None:
    c = core(agent="claude-code")
    digest = "0123456789abcdef"
    assert PromptTaken(digest) in c.output(report("working", prompt=digest), NOW, 0)[1]
    c.output(report("waiting", at=NOW), NOW, 0)
    late = c.output(report("working", at=NOW - 100, prompt=digest), NOW, 0)[1]
    assert late == [PromptTaken(digest)]  # older than what was applied, and still taken
    assert c.output(report("working", prompt="NOT-A-DIGEST"), NOW, 0)[1] == []
    assert c.frames.rejected == {"invalid": 1}
