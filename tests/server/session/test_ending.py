"""A program's end as named states (server/session/ending.py), fed events only: the
table the module's diagram draws, the end reported exactly once and how it came,
and an event a state does not take refused as the bug it is."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.server.session.ending import TRANSITIONS, End, EndEvent, ProgramEnd

EVENTS: tuple[EndEvent, ...] = get_args(EndEvent)


def after(*events: EndEvent) -> ProgramEnd:
    end = ProgramEnd()
    for event in events:
        end.change(event)
    return end


@pytest.mark.parametrize(
    ("events", "state", "ended"),
    [
        (("reaped",), End.EXITED, "exited"),
        (("kill", "reaped"), End.EXITED, "killed"),
        (("close", "reaped"), End.CLOSED, "killed"),
        (("server", "reaped"), End.EXITED, "server"),
        # A client's kill while the server stops it: the client asked first or last,
        # either way it was killed, not stopped with the server.
        (("server", "kill", "reaped"), End.EXITED, "killed"),
        (("kill", "server", "reaped"), End.EXITED, "killed"),
        (("kill", "close", "reaped"), End.CLOSED, "killed"),
        (("reaped", "close"), End.CLOSED, "exited"),
        (("reaped", "kill", "server"), End.EXITED, "exited"),
    ],
)
def test_how_a_program_ended(events: tuple[EndEvent, ...], state: End, ended: str) -> None:
    end = after(*events)
    assert (end.state, end.ended, end.reaped) == (state, ended, True)


def test_closing_means_forgotten_once_gone_and_nothing_is_final_before_reaped() -> None:
    assert not after().closing and not after("kill").closing
    assert after("close").closing and not after("close").reaped
    assert after("reaped", "close").closing
    for events in ((), ("kill",), ("server",), ("close",)):
        assert after(*events).ended is None


def test_reaped_twice_is_a_bug_that_names_the_event_and_the_state() -> None:
    end = after("reaped")
    with pytest.raises(LookupError, match="'reaped' in state exited"):
        end.change("reaped")
    assert end.ended == "exited"


def test_every_state_takes_every_event_but_a_final_one_reaped() -> None:
    for state in End:
        listed = set(TRANSITIONS[state])
        if state in (End.EXITED, End.CLOSED):
            assert listed == set(EVENTS) - {"reaped"}
        else:
            assert listed == set(EVENTS)


@given(st.lists(st.sampled_from(EVENTS), max_size=12))
def test_the_end_is_reported_once_and_then_never_changes(events: list[EndEvent]) -> None:
    end = ProgramEnd()
    reported = []
    for event in events:
        was = (end.state, end.ended)
        if event == "reaped" and end.reaped:
            with pytest.raises(LookupError):
                end.change(event)
            assert (end.state, end.ended) == was
            continue
        if end.change(event):
            reported.append(end.ended)
        if was[1] is not None:
            assert end.ended == was[1], "how it ended is kept"
            assert end.state in (End.EXITED, End.CLOSED)
    assert len(reported) == ("reaped" in events)
    assert end.reaped == ("reaped" in events)
    assert end.closing == ("close" in events)
