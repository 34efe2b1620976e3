"""Answering an agent from a client: real hook processes inside real sessions, the real
control socket, a real server and real WebSocket clients."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.agents.hooks.claude_code import native_answer
from ptyvisor.agents.hooks.normalise import request_digest
from ptyvisor.agents.interaction import Interaction, Option, Question
from ptyvisor.agents.launch import (
    CODEX_DECISION_TIMEOUT_SECONDS,
    DECISION_TIMEOUT_SECONDS,
    HOOK_TIMEOUT_SECONDS,
    claude_settings,
    codex_overrides,
)
from ptyvisor.client.client import Client, Event
from ptyvisor.config import Settings, load_settings, save_settings
from ptyvisor.errors import BadAnswer, BadControlMessage, ServerError
from ptyvisor.server.control import check_answer
from ptyvisor.wire import control as wire
from ptyvisor.wire.control import MAX_LINE, Decision
from ptyvisor.wire.frames import new_nonce
from ptyvisor.wire.protocol import ActivityChanged, Sessions, SessionSummary

from ..conftest import TOKEN, RunningServer, control_refuses, output_until, poll, until

SUGGESTION = {
    "type": "addRules",
    "rules": [{"toolName": "Bash", "ruleContent": "make:*"}],
    "behavior": "allow",
    "destination": "localSettings",
}
BASH = {
    "session_id": "native-1",
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "make deploy", "description": "Deploy"},
    "permission_suggestions": [SUGGESTION],
}
QUESTIONS = [
    {
        "question": "Which colour?",
        "header": "Colour",
        "options": [{"label": "Red", "description": "warm"}, {"label": "Blue"}],
        "multiSelect": False,
    },
    {
        "question": "Which letters?",
        "header": "Letters",
        "options": [{"label": "A"}, {"label": "B"}, {"label": "C"}],
        "multiSelect": True,
    },
]
ASK = {
    "session_id": "native-1",
    "hook_event_name": "PermissionRequest",
    "tool_name": "AskUserQuestion",
    "tool_input": {"questions": QUESTIONS},
}

# Runs the hook the way Claude does (own session, no controlling terminal), records
# its pid, then its exit status, stdout and duration. Detached from the session's
# own process session so that ending the session does not kill it.
WRAPPER = """
import json, os, subprocess, sys, time
start = time.monotonic()
with open("payload.json", "rb") as payload:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ptyvisor.agents.hooks", sys.argv[1]],
        stdin=payload, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
with open("hook.pid.tmp", "w") as f:
    f.write(str(proc.pid))
os.replace("hook.pid.tmp", "hook.pid")
out, err = proc.communicate()
result = {"rc": proc.returncode, "stdout": out.decode(), "stderr": err.decode(),
          "seconds": time.monotonic() - start}
with open("result.tmp", "w") as f:
    json.dump(result, f)
os.replace("result.tmp", "result.json")
"""


class HookRun:
    """A session whose program starts one detached hook run and waits for a line."""

    def __init__(self, client: Client, directory: Path, session_id: str) -> None:
        self.client = client
        self.dir = directory
        self.session = session_id

    @classmethod
    async def start(
        cls,
        client: Client,
        directory: Path,
        payload: dict[str, Any],
        *,
        then: str = "read x",
        agent: str = "claude-code",
    ) -> HookRun:
        """``then``: what the session's program does after starting the hook run."""
        (directory / "payload.json").write_text(json.dumps(payload))
        (directory / "wrap.py").write_text(WRAPPER)
        script = f"setsid {sys.executable} wrap.py {agent} & {then}"
        session = await client.spawn(["sh", "-c", script], cwd=str(directory))
        return cls(client, directory, session.id)

    async def answer(self, interaction: str, **fields: Any) -> None:
        await self.client.request(
            {"type": "answer", "session": self.session, "interaction": interaction, **fields}
        )

    async def error_of(self, interaction: str, **fields: Any) -> ServerError:
        with pytest.raises(ServerError) as caught:
            await self.answer(interaction, **fields)
        return caught.value

    async def waiting(self) -> str:
        """The interaction id once the hook's request is held on the control socket.

        Probes with an answer that never fits (a suggestion with no behavior):
        ``gone`` until the request arrives, ``bad_request`` from then on.
        """
        summary = await poll(self._pending, wait=15)

        async def probe() -> bool:
            error = await self.error_of(summary, suggestion=99)
            return error.code == "bad_request"

        await poll(probe, wait=15)
        return summary

    async def _pending(self) -> str | None:
        for item in await self.client.list():
            if item.id == self.session and item.pending_interaction is not None:
                return item.pending_interaction.id
        return None

    async def result(self) -> dict[str, Any]:
        path = self.dir / "result.json"

        async def done() -> dict[str, Any] | None:
            return json.loads(path.read_text()) if path.exists() else None

        return await poll(done, wait=15)

    def hook_pid(self) -> int:
        return int((self.dir / "hook.pid").read_text())


def decision_of(result: dict[str, Any]) -> dict[str, Any]:
    assert result["rc"] == 0, result
    output = json.loads(result["stdout"])
    assert output["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    decision: dict[str, Any] = output["hookSpecificOutput"]["decision"]
    return decision


# --------------------------------------------------------------------------- answer wins


@pytest.mark.anyio
async def test_allow_reaches_the_hook_and_a_second_answer_is_gone(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, BASH)
    ident = await run.waiting()
    await run.answer(ident, behavior="allow")
    assert decision_of(await run.result()) == {"behavior": "allow"}
    error = await run.error_of(ident, behavior="deny")
    assert error.code == "gone"
    assert "already answered" in error.message


@pytest.mark.anyio
async def test_deny_carries_the_message(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, BASH)
    ident = await run.waiting()
    await run.answer(ident, behavior="deny", message="not on a Friday")
    assert decision_of(await run.result()) == {"behavior": "deny", "message": "not on a Friday"}


@pytest.mark.anyio
async def test_suggestion_becomes_updated_permissions(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, BASH)
    ident = await run.waiting()
    await run.answer(ident, behavior="allow", suggestion=0)
    decision = decision_of(await run.result())
    assert decision == {"behavior": "allow", "updatedPermissions": [SUGGESTION]}


@pytest.mark.anyio
async def test_question_answers_reach_claude_as_updated_input(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, ASK)
    ident = await run.waiting()
    bad: dict[str, dict[str, Any]] = {
        "no question": {"answers": {"q0": ["Red"], "q1": ["A"], "q9": ["A"]}},
        "not an option": {"answers": {"q0": ["Green"], "q1": ["A"]}},
        "single option": {"answers": {"q0": ["Red", "Blue"], "q1": ["A"]}},
        "not answered": {"answers": {"q0": ["Red"]}},
        "longer than 4000": {"answers": {"q0": "x" * 4001, "q1": ["A"]}},
    }
    for expected, fields in bad.items():
        error = await run.error_of(ident, **fields)
        assert (error.code, expected in error.message) == ("bad_request", True), error.message
    await run.answer(ident, answers={"q0": ["Blue"], "q1": ["A", "C"]})
    decision = decision_of(await run.result())
    assert decision == {
        "behavior": "allow",
        "updatedInput": {
            "questions": QUESTIONS,
            "answers": {"Which colour?": "Blue", "Which letters?": "A, C"},
        },
    }


@pytest.mark.anyio
async def test_bad_approval_answers_are_refused_and_leave_it_waiting(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, BASH)
    ident = await run.waiting()
    bad: dict[str, dict[str, Any]] = {
        "needs behavior": {},
        "out of range": {"behavior": "allow", "suggestion": 1},
        "no questions": {"behavior": "allow", "answers": {"q0": "x"}},
        "longer than 4000": {"behavior": "deny", "message": "x" * 4001},
    }
    for expected, fields in bad.items():
        error = await run.error_of(ident, **fields)
        assert (error.code, expected in error.message) == ("bad_request", True), error.message
    assert (await run.error_of("req-nope", behavior="allow")).code == "gone"
    await run.answer(ident, behavior="allow")
    assert decision_of(await run.result()) == {"behavior": "allow"}


# --------------------------------------------------------------------------- withdrawn


@pytest.mark.anyio
async def test_hook_killed_first_withdraws_the_request(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, BASH)
    ident = await run.waiting()
    os.kill(run.hook_pid(), signal.SIGKILL)  # the user answered in the terminal

    async def withdrawn() -> bool:
        return (await run.error_of(ident, suggestion=99)).code == "gone"

    await poll(withdrawn)
    error = await run.error_of(ident, behavior="allow")
    assert error.code == "gone"
    assert (await run.result())["rc"] == -signal.SIGKILL


@pytest.mark.anyio
async def test_session_exit_closes_a_waiting_hook_which_fails_open(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, BASH)
    ident = await run.waiting()
    await client.input(run.session, "\n")  # the session's program ends
    result = await run.result()
    assert (result["rc"], result["stdout"]) == (0, "")
    assert (await run.error_of(ident, behavior="allow")).code in ("gone", "unknown_session")


class FrameRun(HookRun):
    """A held hook run whose session then writes more frames, on request, from inside
    the session: through the real Claude hook, or one raw frame with a chosen ``at``."""

    @classmethod
    async def begin(cls, client: Client, directory: Path, payload: dict[str, Any]) -> FrameRun:
        run = await HookRun.start(client, directory, payload, then=SCRIPTS_LOOP)
        return cls(client, directory, run.session)

    async def hook(self, event: dict[str, Any]) -> None:
        """Run the Claude hook in the session for ``event``; returns once it was applied."""
        (self.dir / "event.json").write_text(json.dumps(event))
        await self._run(f"{sys.executable} -m ptyvisor.agents.hooks claude-code < event.json\n")

    async def frame(self, payload: dict[str, Any]) -> None:
        """Write one frame (exactly ``payload``) from the session; returns once applied."""
        (self.dir / "frame.json").write_text(json.dumps(payload))
        code = "import json; from ptyvisor.agents.emit import write_frame as w; "
        code += "w(json.load(open('frame.json')))"
        await self._run(f'{sys.executable} -c "{code}"\n')

    async def _run(self, script: str) -> None:
        before = await self._frames_taken()
        name = f"step{before}.sh"
        (self.dir / name).write_text(script)
        await self.client.input(self.session, name + "\n")

        async def applied() -> bool:
            return await self._frames_taken() > before

        await poll(applied, wait=15)

    async def _frames_taken(self) -> int:
        """Authentic frames the session has applied or ignored as stale."""
        stats = await self.client.stats(self.session)
        return stats.frames_applied + stats.frames_ignored

    async def held(self, ident: str) -> bool:
        error = await self.error_of(ident, suggestion=99)
        assert error.code in ("bad_request", "gone", "not_answerable"), error
        return error.code == "bad_request"

    async def start_hook(self, name: str, payload: dict[str, Any]) -> FrameRun:
        """One more detached Claude hook run, in subdirectory ``name`` of this session's
        directory; returns once its frame was applied."""
        directory = self.dir / name
        directory.mkdir()
        (directory / "payload.json").write_text(json.dumps(payload))
        (directory / "wrap.py").write_text(WRAPPER)
        # Started by the session's own shell, so the hook descends from its program
        # (the server refuses requests from outside), in a process session of its own.
        await self._run(f"(cd {name} && exec setsid {sys.executable} wrap.py claude-code) &\n")
        return FrameRun(self.client, directory, self.session)

    async def summary(self) -> SessionSummary:
        return next(item for item in await self.client.list() if item.id == self.session)

    async def created_at(self) -> int:
        for item in await self.client.list():
            if item.id == self.session and item.pending_interaction is not None:
                return item.pending_interaction.created_at
        raise AssertionError("no pending interaction")


SCRIPTS_LOOP = 'while read name; do . "./$name"; done'
"""The session's program: run each script whose name arrives as a line of input."""


@pytest.mark.anyio
async def test_stop_withdraws_only_older_requests(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await FrameRun.begin(client, tmp_path, BASH)
    ident = await run.waiting()
    created = await run.created_at()
    # A late Stop, from before the request: it does not withdraw the newer request.
    await run.frame({"type": "activity", "phase": "waiting", "at": created - 1})
    assert await run.held(ident)
    # The real Stop hook, after the request: withdrawn, the hook fails open.
    await run.hook({"hook_event_name": "Stop", "session_id": "native-1"})
    result = await run.result()
    assert (result["rc"], result["stdout"]) == (0, "")
    assert not await run.held(ident)
    assert (await run.error_of(ident, behavior="allow")).code == "gone"


@pytest.mark.anyio
async def test_prompt_submitted_withdraws_older_requests(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await FrameRun.begin(client, tmp_path, ASK)
    ident = await run.waiting()
    await run.hook({"hook_event_name": "UserPromptSubmit", "prompt": "next"})
    assert (await run.result())["stdout"] == ""
    assert (await run.error_of(ident, answers={"q0": ["Red"], "q1": ["A"]})).code == "gone"


@pytest.mark.anyio
async def test_finished_tool_call_withdraws_its_own_request(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await FrameRun.begin(client, tmp_path, BASH)
    ident = await run.waiting()
    post = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": {}}
    await run.hook({**post, "tool_input": {"command": "make test", "description": "Deploy"}})
    assert await run.held(ident), "another tool call withdrew it"
    await run.hook({**post, "tool_input": BASH["tool_input"]})
    assert (await run.result())["stdout"] == ""
    assert (await run.error_of(ident, behavior="allow")).code == "gone"


# --------------------------------------------------------------------------- the socket


@pytest.mark.anyio
async def test_control_socket_refuses_strangers_and_serves_its_own(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    path = server.config.control_path
    assert path and stat.S_ISSOCK(os.stat(path).st_mode)
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    script = 'echo "C=$PTYVISOR_CONTROL N=$PTYVISOR_NONCE."; read x; $x'
    session = await client.spawn(["sh", "-c", script], cwd=str(tmp_path))
    await client.attach(session.id, since=0)
    seen = (await output_until(client, b".\r\n")).decode()
    control = seen.split("C=", 1)[1].split(" ", 1)[0]
    nonce = seen.split("N=", 1)[1].split(".", 1)[0]
    assert control == path
    interaction = {"id": "req-1", "kind": "approval", "agent": "test", "created_at": 1}

    def request(**fields: Any) -> bytes:
        body = {"op": "request", "session": session.id, "nonce": nonce}
        body["interaction"] = interaction  # type: ignore[assignment]
        return json.dumps({**body, **fields}).encode() + b"\n"

    def refused(line: bytes) -> bool:
        return control_refuses(path, line)

    assert await anyio.to_thread.run_sync(refused, request(nonce=new_nonce()))
    assert await anyio.to_thread.run_sync(refused, request(session="s00000000"))
    assert await anyio.to_thread.run_sync(refused, request(interaction={"id": "x"}))
    assert await anyio.to_thread.run_sync(refused, request(agent_id=""))
    assert await anyio.to_thread.run_sync(refused, request(agent_id=7))
    assert await anyio.to_thread.run_sync(refused, request(agent_id="a" * 257))
    assert await anyio.to_thread.run_sync(refused, b"not json\n")
    huge = request()[:-2] + b', "pad": "' + b"x" * MAX_LINE + b'"}\n'
    assert await anyio.to_thread.run_sync(refused, huge)
    # The right session and nonce, from a process outside the session: refused too.
    assert await anyio.to_thread.run_sync(refused, request())

    # From inside the session: held until a client answers, then one decision line.
    (tmp_path / "request.json").write_bytes(request())
    (tmp_path / "ask.py").write_text(ASK_FROM_INSIDE)
    await client.send_input(f"{sys.executable} ask.py\n")
    run = HookRun(client, tmp_path, session.id)

    async def answered() -> bool:
        try:
            await run.answer("req-1", behavior="deny")
        except ServerError as error:
            assert error.code == "gone"
            return False
        return True

    await poll(answered)
    reply_file = tmp_path / "reply.json"

    async def reply_written() -> bytes | None:
        return reply_file.read_bytes() if reply_file.exists() else None

    reply = await poll(reply_written)
    assert json.loads(reply) == {
        "op": "decision",
        "behavior": "deny",
        "message": None,
        "suggestion": None,
        "answers": None,
    }


ASK_FROM_INSIDE = """
import os, socket
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
    sock.connect(os.environ["PTYVISOR_CONTROL"])
    with open("request.json", "rb") as line:
        sock.sendall(line.read())
    reply = sock.recv(65536)
with open("reply.tmp", "wb") as out:
    out.write(reply)
os.replace("reply.tmp", "reply.json")
"""


def test_hook_fails_open_fast_when_the_server_is_down(tmp_path: Path) -> None:
    master, slave = os.openpty()
    listening = tmp_path / "closed.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(listening))  # exists, but nobody accepts: connection refused
    base = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    for control in (tmp_path / "missing.sock", listening):
        env = {
            **base,
            "PTYVISOR_SESSION": "s1",
            "PTYVISOR_NONCE": new_nonce(),
            "PTYVISOR_TTY": os.ttyname(slave),
            "PTYVISOR_CONTROL": str(control),
        }
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "ptyvisor.agents.hooks", "claude-code"],
            input=json.dumps(BASH).encode(),
            env=env,
            capture_output=True,
            timeout=20,
            check=False,
        )
        elapsed = time.monotonic() - started
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
        assert elapsed < 5, elapsed  # typically ~0.1 s: interpreter start-up
    os.close(master)
    os.close(slave)


# --------------------------------------------------------------------------- pure rules


def test_answer_rules_name_the_problem() -> None:
    closed = Interaction(
        id="i",
        kind="question",
        agent="a",
        questions=[Question(id="q0", question="Pick", options=[Option(label="X")])],
        accepts_free_form=False,
        created_at=1,
    )
    cases: list[tuple[dict[str, Any], str]] = [
        ({"answers": {"q0": "typed"}}, "does not accept free text"),
        ({"answers": {"q0": []}}, "no option chosen"),
        ({"answers": {"q0": ["X", "Y"]}}, "takes a single option"),
        ({"behavior": "deny", "answers": {"q0": ["X"]}}, "carries no answers"),
        ({"behavior": "allow", "suggestion": 0}, "out of range"),
        ({}, "answers are needed"),
        ({"behavior": "allow", "message": "hi", "answers": {"q0": ["X"]}}, "only with"),
    ]
    for fields, expected in cases:
        arguments: dict[str, Any] = {
            "behavior": None,
            "message": None,
            "suggestion": None,
            "answers": None,
            **fields,
        }
        with pytest.raises(BadAnswer, match=expected):
            check_answer(closed, **arguments)
    decision = check_answer(
        closed, behavior=None, message=None, suggestion=None, answers={"q0": ["X"]}
    )
    assert (decision.behavior, decision.answers) == ("allow", {"q0": ["X"]})


def test_native_answer_for_free_text_and_default_deny() -> None:
    free = native_answer(ASK, Decision("allow", answers={"q0": "Teal", "q1": ["B"]}))
    assert free is not None
    answers = free["hookSpecificOutput"]["decision"]["updatedInput"]["answers"]
    assert answers == {"Which colour?": "Teal", "Which letters?": "B"}
    denied = native_answer(BASH, Decision("deny"))
    assert denied is not None
    assert denied["hookSpecificOutput"]["decision"] == {
        "behavior": "deny",
        "message": "Denied from ptyvisor",
    }
    # A label that is not in the raw payload: no answer at all (Claude asks itself).
    assert native_answer(ASK, Decision("allow", answers={"q0": ["Green"]})) is None


def test_claude_permission_request_hook_may_hold_long() -> None:
    hooks = claude_settings()["hooks"]
    assert isinstance(hooks, dict)
    timeouts = {event: entries[0]["hooks"][0]["timeout"] for event, entries in hooks.items()}
    assert timeouts.pop("PermissionRequest") == DECISION_TIMEOUT_SECONDS
    assert set(timeouts.values()) == {HOOK_TIMEOUT_SECONDS}


@pytest.mark.anyio
async def test_hook_frame_still_reaches_clients(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, BASH)
    await client.attach(run.session, since=0)
    events = await until(client, lambda e: isinstance(e, ActivityChanged))
    change = events[-1]
    assert isinstance(change, ActivityChanged) and change.pending_interaction is not None
    ident = await run.waiting()
    assert ident == change.pending_interaction.id
    await run.answer(ident, behavior="allow")
    await run.result()


# --------------------------------------------------------------------------- Codex

CODEX_BASH = {
    "session_id": "native-2",
    "turn_id": "turn-1",
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "make deploy", "description": "Deploy"},
}


@pytest.mark.anyio
async def test_codex_request_is_held_and_answered_natively(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    server.config.settings.codex_remote_answers = True
    allowed = await HookRun.start(client, tmp_path, CODEX_BASH, agent="codex")
    ident = await allowed.waiting()
    await allowed.answer(ident, behavior="allow")
    assert decision_of(await allowed.result()) == {"behavior": "allow"}
    assert (await allowed.error_of(ident, behavior="deny")).code == "gone"

    (tmp_path / "second").mkdir()
    payload = {**CODEX_BASH, "turn_id": "turn-2"}
    denied = await HookRun.start(client, tmp_path / "second", payload, agent="codex")
    ident = await denied.waiting()
    await denied.answer(ident, behavior="deny", message="not on a Friday")
    assert decision_of(await denied.result()) == {"behavior": "deny", "message": "not on a Friday"}


@pytest.mark.anyio
async def test_codex_remote_answers_off_fails_open_at_once(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    assert not server.config.settings.codex_remote_answers  # the default
    run = await HookRun.start(client, tmp_path, CODEX_BASH, agent="codex")
    result = await run.result()
    assert (result["rc"], result["stdout"]) == (0, ""), result
    assert result["seconds"] < 2, result
    ident = await poll(run._pending)
    error = await run.error_of(ident, behavior="allow")
    assert error.code == "not_answerable"
    assert "can only be answered in the terminal" in error.message


@pytest.mark.anyio
async def test_codex_request_is_withdrawn_after_the_wait(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    server.config.settings.codex_remote_answers = True
    server.config.settings.codex_answer_wait_seconds = 3.0
    run = await HookRun.start(client, tmp_path, CODEX_BASH, agent="codex")
    ident = await run.waiting()
    result = await run.result()
    assert (result["rc"], result["stdout"]) == (0, ""), result
    assert 3 <= result["seconds"] < 8, result
    error = await run.error_of(ident, behavior="allow")
    assert error.code == "gone"
    assert "already answered" in error.message


def test_codex_settings_persist(tmp_path: Path) -> None:
    assert load_settings(tmp_path) == Settings()  # off, 20 s
    assert Settings().codex_answer_wait_seconds < CODEX_DECISION_TIMEOUT_SECONDS
    save_settings(tmp_path, Settings(codex_remote_answers=True))
    assert load_settings(tmp_path).codex_remote_answers is True
    assert load_settings(tmp_path).qwen_code_remote_answers is False
    qwen = Settings(qwen_code_remote_answers=True, qwen_code_answer_wait_seconds=9)
    save_settings(tmp_path, qwen)
    assert load_settings(tmp_path).answer_hold("qwen-code") == (True, 9.0)
    assert load_settings(tmp_path).answer_hold("claude-code") == (True, None)
    assert stat.S_IMODE((tmp_path / "settings.json").stat().st_mode) == 0o600
    (tmp_path / "settings.json").write_text("not json")
    assert load_settings(tmp_path) == Settings()


def test_codex_permission_request_hook_timeout_exceeds_the_wait() -> None:
    overrides = codex_overrides()
    permission = next(arg for arg in overrides if arg.startswith("hooks.PermissionRequest="))
    assert f"timeout = {CODEX_DECISION_TIMEOUT_SECONDS} " in permission


# --------------------------------------------------------------------------- subagents


def bash_in(command: str, agent_id: str | None = None) -> dict[str, Any]:
    """A Claude Bash PermissionRequest, raised in subagent ``agent_id`` if given (2.1.332
    adds ``agent_id`` and ``agent_type`` to every hook payload fired in a subagent)."""
    payload = {**BASH, "tool_input": {"command": command, "description": "Deploy"}}
    if agent_id is not None:
        payload.update(agent_id=agent_id, agent_type="general-purpose")
    return payload


def subagent_stop(agent_id: str) -> dict[str, Any]:
    """Claude Code 2.1.332's SubagentStop payload (fields as in its hook input schema)."""
    return {
        "session_id": "native-1",
        "hook_event_name": "SubagentStop",
        "stop_hook_active": False,
        "agent_id": agent_id,
        "agent_type": "general-purpose",
        "agent_transcript_path": "/nonexistent/agent.jsonl",
    }


@pytest.mark.anyio
async def test_a_subagents_requests_end_with_its_own_stop(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    main_payload, a_payload, b_payload = (
        bash_in("make main"),
        bash_in("make a", "agent-a"),
        bash_in("make b", "agent-b"),
    )
    main_ident, a_ident, b_ident = (
        request_digest("Bash", p["tool_input"]) for p in (main_payload, a_payload, b_payload)
    )
    idents = (main_ident, a_ident, b_ident)
    run = await FrameRun.begin(client, tmp_path, main_payload)
    assert await run.waiting() == main_ident
    a = await run.start_hook("a", a_payload)
    await poll(lambda: run.held(a_ident))
    b = await run.start_hook("b", b_payload)
    await poll(lambda: run.held(b_ident))
    b_created = await run.created_at()  # the card shows the newest: B's

    # A late stop of B, from before B's request: it withdraws nothing.
    await run.frame({"type": "subagent_stopped", "at": b_created - 1, "agent_id": "agent-b"})
    assert [await run.held(i) for i in idents] == [True, True, True]

    # The main turn's Stop (the real hook): the main thread's request only. Subagents
    # run in the background and still ask: their requests and B's card stay.
    await run.hook({"hook_event_name": "Stop", "session_id": "native-1"})
    result = await run.result()
    assert (result["rc"], result["stdout"]) == (0, ""), result
    assert [await run.held(i) for i in idents] == [False, True, True]
    summary = await run.summary()
    assert summary.pending_interaction is not None
    assert (summary.pending_interaction.id, summary.answerable) == (b_ident, True)
    assert summary.activity.phase.value == "needs_input"

    # A's own stop (the real hook): A's request only; A's hook fails open.
    await run.hook(subagent_stop("agent-a"))
    result = await a.result()
    assert (result["rc"], result["stdout"]) == (0, ""), result
    assert [await run.held(i) for i in idents] == [False, False, True]
    assert (await run.error_of(a_ident, behavior="allow")).code == "gone"

    # B's stop: B's request, and its card.
    await run.hook(subagent_stop("agent-b"))
    assert (await b.result())["stdout"] == ""
    assert not await run.held(b_ident)
    assert (await run.summary()).pending_interaction is None


@pytest.mark.anyio
async def test_a_subagent_request_is_answered_like_any_other(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    run = await HookRun.start(client, tmp_path, bash_in("make sub", "agent-a"))
    ident = await run.waiting()
    await run.answer(ident, behavior="deny", message="not from a subagent")
    assert decision_of(await run.result()) == {"behavior": "deny", "message": "not from a subagent"}


# --------------------------------------------------------------------------- answerable

CODEX_QUESTION = {
    "session_id": "native-2",
    "turn_id": "turn-1",
    "hook_event_name": "PreToolUse",
    "tool_name": "request_user_input",
    "tool_input": {
        "questions": [
            {
                "id": "q0",
                "header": "Colour",
                "question": "Which colour?",
                "options": [{"label": "Red", "description": "warm"}, {"label": "Blue"}],
            }
        ]
    },
}


@pytest.mark.anyio
async def test_clients_see_whether_the_pending_interaction_is_answerable(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    async with Client.connect(server.url, TOKEN) as watcher:
        await watcher.watch_sessions()
        run = await HookRun.start(client, tmp_path, BASH)
        await client.attach(run.session, since=0)

        def listed(answerable: bool) -> Callable[[Event], bool]:
            def check(event: Event) -> bool:
                return isinstance(event, Sessions) and any(
                    s.id == run.session and s.pending_interaction and s.answerable is answerable
                    for s in event.sessions
                )

            return check

        # Held: pushed to the attached client (activity) and to the session list.
        events = await until(client, lambda e: isinstance(e, ActivityChanged) and e.answerable)
        change = events[-1]
        assert isinstance(change, ActivityChanged) and change.pending_interaction is not None
        ident = change.pending_interaction.id
        await until(watcher, listed(True))
        await run.answer(ident, behavior="allow")
        await run.result()
        # Answered: the card stays until the tool call finishes, but is not answerable.
        events = await until(client, lambda e: isinstance(e, ActivityChanged))
        change = events[-1]
        assert isinstance(change, ActivityChanged) and change.pending_interaction is not None
        assert (change.pending_interaction.id, change.answerable) == (ident, False)
        await until(watcher, listed(False))
        error = await run.error_of(ident, behavior="allow")
        assert (error.code, "already answered" in error.message) == ("gone", True)


@pytest.mark.anyio
async def test_a_codex_question_can_only_be_answered_in_the_terminal(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    server.config.settings.codex_remote_answers = True  # even so: no hook holds it
    run = await HookRun.start(client, tmp_path, CODEX_QUESTION, agent="codex")
    result = await run.result()
    assert (result["rc"], result["stdout"]) == (0, ""), result
    ident = await poll(run._pending)
    summary = next(item for item in await client.list() if item.id == run.session)
    assert summary.pending_interaction is not None
    assert (summary.pending_interaction.kind, summary.answerable) == ("question", False)
    error = await run.error_of(ident, answers={"q0": ["Red"]})
    assert error.code == "not_answerable"
    assert "can only be answered in the terminal" in error.message
    assert (await run.error_of("req-nope", behavior="allow")).code == "gone"


CONTROL_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.one_of(
        CONTROL_JSON,
        st.fixed_dictionaries(
            {
                "op": st.sampled_from(
                    ["request", "take_message", "decision", "message", "delivered"]
                )
            },
            optional={
                name: CONTROL_JSON
                for name in (
                    "session",
                    "nonce",
                    "interaction",
                    "agent_id",
                    "behavior",
                    "message",
                    "suggestion",
                    "answers",
                    "text",
                )
            },
        ),
    )
)
def test_control_messages_are_read_whole_or_refused(data: object) -> None:
    """Both ends read with the same definitions: any JSON is a message or refused."""
    kinds = (wire.Request, wire.TakeMessage, wire.Decision, wire.QueuedMessage, wire.Delivered)
    try:
        message = wire.read(data, *kinds)
    except BadControlMessage:
        return
    assert wire.read(json.loads(message.line()), *kinds) == message
