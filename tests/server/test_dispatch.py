"""The request handlers (dispatch.py), driven without a connection or a socket: a real
`Supervisor` owning real PTYs, and a stand-in for the connection a request came on.
What a refusal becomes on the wire is decided in one place, `wire_error`, checked
here kind by kind."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest

from ptyvisor.agents.launch import takes_queued_message
from ptyvisor.errors import (
    BadAnswer,
    BadJSON,
    Gone,
    KeeperGone,
    NoRecords,
    NotResumable,
    PtyvisorError,
    SpawnError,
    UnknownSession,
)
from ptyvisor.server.dispatch import Dispatcher, Reply, RequestError, wire_error
from ptyvisor.server.outbox import Outbox
from ptyvisor.server.session import MAX_MESSAGE, Session
from ptyvisor.server.supervisor import Supervisor
from ptyvisor.wire.protocol import CLIENT_MESSAGE, Captured, ClientMessage, Ok, Spawned
from tests.timeouts import scaled

from ..conftest import child_env, poll

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (RequestError("view_only", "no input"), "view_only"),
        (UnknownSession("s1"), "unknown_session"),
        (SpawnError("no such file"), "spawn_failed"),
        (NotResumable("still running"), "not_resumable"),
        (NoRecords("no records"), "no_records"),
        (BadAnswer("no such choice"), "bad_request"),
        (Gone("i1"), "gone"),
        (Gone("i1", terminal_only=True), "not_answerable"),
    ],
)
def test_each_refusal_is_one_wire_error(error: PtyvisorError, code: str) -> None:
    assert (wire := wire_error(error)) is not None
    assert wire[0] == code and wire[1]


@pytest.mark.parametrize(
    "error", [KeeperGone("gone"), BadJSON("nan", syntax=True), PtyvisorError("bug")]
)
def test_anything_else_is_no_wire_error_but_a_bug_to_log(error: PtyvisorError) -> None:
    assert wire_error(error) is None


@dataclass(eq=False)  # hashed by identity, as a connection is
class Connection:
    """What a handler sees of the connection a request came on."""

    outbox: Outbox = field(default_factory=Outbox)
    answers_queries: bool = False
    session: Session | None = None
    detached: int = 0

    def detach(self) -> None:
        self.detached += 1
        if self.session is not None:
            self.session.clients.detach(self)
            self.session = None

    def texts(self) -> list[str]:
        out: list[str] = []
        while (item := self.outbox.pop()) is not None:
            if isinstance(item, str):
                out.append(item)
        return out


@dataclass
class Harness:
    supervisor: Supervisor
    connection: Connection
    dispatch: Dispatcher

    async def __call__(self, **message: Any) -> Reply | None:
        request: ClientMessage = CLIENT_MESSAGE.validate_python({"req_id": 1, **message})
        return await self.dispatch(request)

    async def spawn(self, *argv: str, **extra: Any) -> str:
        spawned = await self(type="spawn", argv=list(argv), env=child_env(), **extra)
        assert isinstance(spawned, Spawned)
        return spawned.session.id

    async def screen(self, session_id: str) -> str:
        captured = await self(type="capture", session=session_id)
        assert isinstance(captured, Captured) and captured.req_id == 1
        return "\n".join(captured.rows)


@pytest.fixture
def harness(supervisor: Supervisor) -> Harness:
    connection = Connection()
    return Harness(supervisor, connection, Dispatcher(supervisor, connection))


async def test_a_session_is_spawned_typed_into_read_renamed_and_closed(harness: Harness) -> None:
    sid = await harness.spawn(
        sys.executable, "-c", "import sys; print(sys.stdin.readline().upper())"
    )
    assert await harness(type="input", session=sid, data="hello\r") == Ok(req_id=1)

    async def shown() -> str | None:
        text = await harness.screen(sid)
        return text if "HELLO" in text else None

    await poll(shown)
    assert await harness(type="rename", session=sid, name="upper") == Ok(req_id=1)
    assert [s.name for s in harness.supervisor.summaries()] == ["upper"]
    assert await harness(type="close", session=sid) == Ok(req_id=1)
    assert harness.supervisor.find(sid) is None
    with pytest.raises(UnknownSession):
        await harness(type="capture", session=sid)


async def test_a_program_that_cannot_start_registers_nothing(harness: Harness) -> None:
    with pytest.raises(SpawnError):
        await harness.spawn("/nonexistent/program")
    assert harness.supervisor.summaries() == []


async def test_a_client_attached_to_watch_only_cannot_type_or_resize(harness: Harness) -> None:
    sid = await harness.spawn("cat")
    assert await harness(type="attach", session=sid, view_only=True) is None
    assert harness.connection.session is not None
    assert any('"attached"' in text for text in harness.connection.texts())
    for request in (
        {"type": "input", "data": "x"},
        {"type": "send_keys", "keys": ["Enter"]},
        {"type": "resize", "cols": 40, "rows": 10},
    ):
        with pytest.raises(RequestError) as refused:
            await harness(session=sid, **request)
        assert refused.value.code == "view_only", request
    assert await harness(type="detach") == Ok(req_id=1)
    assert harness.connection.session is None
    assert await harness(type="input", session=sid, data="x") == Ok(req_id=1)


async def test_attaching_elsewhere_leaves_the_session_attached_before(harness: Harness) -> None:
    first, second = await harness.spawn("cat"), await harness.spawn("cat")
    await harness(type="attach", session=first)
    await harness(type="attach", session=second)
    assert harness.connection.detached == 2 and harness.connection.session is not None
    assert harness.connection.session.id == second


async def test_messages_are_refused_blank_too_long_or_with_no_turn_running(
    harness: Harness,
) -> None:
    sid = await harness.spawn("cat")
    for message, code in (
        ("  \n", "bad_request"),
        ("x" * (MAX_MESSAGE + 1), "bad_request"),
        ("next, please", "not_running"),  # no agent is working on a turn
    ):
        with pytest.raises(RequestError) as refused:
            await harness(type="send", session=sid, message=message)
        assert refused.value.code == code


async def test_a_message_for_an_agent_that_cannot_take_one_is_refused(
    harness: Harness, tmp_path: Path
) -> None:
    """Cline (like OpenCode, Kilo, Pi and oh-my-pi) has no hook that could hand a queued
    message over: ``send`` says so (``not_supported``), and the summary tells a client
    before it tries (``takes_messages``). Here ``cline`` is a stand-in that waits."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cline").write_text("#!/bin/sh\nexec sleep 60\n")
    (bin_dir / "cline").chmod(0o755)
    env = {**child_env(), "PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    spawned = await harness(type="spawn", argv=[], agent="cline", env=env)
    assert isinstance(spawned, Spawned) and not spawned.session.takes_messages
    with pytest.raises(RequestError) as refused:
        await harness(type="send", session=spawned.session.id, message="then run the tests")
    assert refused.value.code == "not_supported"
    assert harness.supervisor.get(spawned.session.id).core.queued_message is None
    assert (await harness.spawn("cat")) and takes_queued_message(None)
    assert takes_queued_message("claude-code") and not takes_queued_message("pi")


async def test_a_signal_to_a_program_that_has_exited_is_refused(harness: Harness) -> None:
    sid = await harness.spawn("true")
    session = harness.supervisor.get(sid)
    with anyio.fail_after(scaled(30)):
        await session.exited.wait()
    with pytest.raises(RequestError) as refused:
        await harness(type="signal", session=sid, signal="INT")
    assert refused.value.code == "session_exited"
    with pytest.raises(RequestError):
        await harness(type="input", session=sid, data="x")


async def test_every_request_type_has_a_handler(harness: Harness) -> None:
    """Each message of the protocol's union reaches a handler: what it raises is a
    refusal of the request (here: no such session), never a missing handler."""
    filled: dict[str, Any] = {"session": "s-none", "interaction": "i1", "message": "m",
                              "name": "n", "data": "x", "keys": ["Enter"], "cols": 40,
                              "rows": 10, "signal": "INT", "argv": ["true"],
                              "text": "t"}  # fmt: skip
    kinds = get_args(get_args(ClientMessage)[0])
    assert len(kinds) >= 23
    for kind in kinds:
        fields = {k: v for k, v in filled.items() if k in kind.model_fields}
        (name,) = get_args(kind.model_fields["type"].annotation)
        request = kind.model_validate({"type": name, "req_id": 1, **fields})
        try:
            await harness.dispatch(request)
        except (UnknownSession, NoRecords) as refused:
            assert wire_error(refused) is not None
