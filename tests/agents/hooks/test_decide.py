"""The hook's side of the control socket (hooks/decide.py) against a real Unix socket
served by a thread: what it sends, that it holds past the connect timeout, and that
it fails open (None, the agent asks itself) on anything but one valid reply."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ptyvisor.agents.hooks import decide
from ptyvisor.wire import control
from tests.timeouts import scaled

from .conftest import ControlSocket, Reply, answer

INTERACTION = {"id": "req-1", "kind": "approval", "title": "Run a shell command"}


def test_a_request_carries_the_interaction_and_gets_the_decision(
    serving: Callable[[Reply], ControlSocket],
) -> None:
    chosen = control.Decision("allow", suggestion=0, answers={"q0": ["A"]})
    server = serving(answer(chosen.line()))
    decision = decide.request_decision(INTERACTION, agent_id="sub-1", env=server.env())
    assert decision == chosen
    (line,) = server.received
    request = control.read(json.loads(line), control.Request)
    assert (request.session, request.nonce, request.agent_id) == ("s1", "n" * 32, "sub-1")
    assert request.interaction == INTERACTION


def test_it_holds_for_as_long_as_the_user_takes(
    serving: Callable[[Reply], ControlSocket],
) -> None:
    def later(conn: socket.socket, _request: bytes) -> None:
        deadline = time.monotonic() + scaled(decide.CONNECT_TIMEOUT * 3)
        while time.monotonic() < deadline:  # the user is thinking: the peer's pace
            time.sleep(0.05)
        conn.sendall(control.Decision("deny", message="no").line())

    server = serving(later)
    decision = decide.request_decision(INTERACTION, env=server.env())
    assert decision == control.Decision("deny", message="no")


@pytest.mark.parametrize(
    "reply",
    [
        b"",  # closed without a word: refused or withdrawn
        b'{"op": "decision", "behavior": "maybe"}\n',
        b'{"op": "message", "text": "x"}\n',
        b"not json\n",
        b"\xff\xfe\n",
        b'{"op": "decision", "behavior": "allow"}',  # no newline, then closed
        b"x" * (control.MAX_LINE + 10),
    ],
)
def test_anything_but_one_valid_decision_fails_open(
    serving: Callable[[Reply], ControlSocket], reply: bytes
) -> None:
    server = serving(answer(reply, then_close=True))
    assert decide.request_decision(INTERACTION, env=server.env()) is None


def test_without_a_socket_or_its_variables_it_asks_nobody(tmp_path: Path) -> None:
    env = {
        decide.ENV_CONTROL: str(tmp_path / "gone.sock"),
        "PTYVISOR_SESSION": "s1",
        "PTYVISOR_NONCE": "n" * 32,
    }
    assert decide.request_decision(INTERACTION, env=env) is None
    assert decide.take_message(env) is None
    for missing in env:
        partial = {k: v for k, v in env.items() if k != missing}
        assert decide.request_decision(INTERACTION, env=partial) is None


def test_a_request_too_long_for_a_line_is_not_sent(
    serving: Callable[[Reply], ControlSocket],
) -> None:
    server = serving(answer(control.Decision("allow").line()))
    huge = {"id": "req-1", "rows": ["x" * control.MAX_LINE]}
    assert decide.request_decision(huge, env=server.env()) is None
    assert server.received == []


def test_a_queued_message_is_taken_and_acknowledged_once_delivered(
    serving: Callable[[Reply], ControlSocket],
) -> None:
    server = serving(answer(control.QueuedMessage("next: run the tests").line()))
    taken = decide.take_message(server.env())
    assert taken is not None and taken.text == "next: run the tests"
    taken.delivered()
    request = control.read(json.loads(server.received[0]), control.TakeMessage)
    assert (request.session, request.nonce) == ("s1", "n" * 32)
    deadline = time.monotonic() + scaled(15)
    while not server.after and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.after == [control.Delivered().line()]


@pytest.mark.parametrize(
    "reply", [control.QueuedMessage(None).line(), control.QueuedMessage("").line(), b"", b"[]\n"]
)
def test_no_message_is_none_and_nothing_is_acknowledged(
    serving: Callable[[Reply], ControlSocket], reply: bytes
) -> None:
    server = serving(answer(reply, then_close=True))
    assert decide.take_message(server.env()) is None


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=200).map(lambda b: b + b"\n"))
@example(b"[" * 100_000 + b"\n")  # nested past the recursion limit
@example(b'{"op": "decision", "behavior": "allow", "answers": {"q": [1]}}\n')
def test_any_reply_is_a_decision_or_none(
    serving: Callable[[Reply], ControlSocket], reply: bytes
) -> None:
    """A hook that raised would print a traceback where the agent reads its answer."""
    server = serving(answer(reply))
    decision = decide.request_decision(INTERACTION, env=server.env())
    assert decision is None or isinstance(decision, control.Decision)
    taken = decide.take_message(server.env())
    assert taken is None or isinstance(taken.text, str)
    if taken is not None:
        taken.delivered()
