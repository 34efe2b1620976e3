"""Claude Code, Codex, Gemini CLI and Qwen Code hook mapping: pure mapping rules, the
real hook process writing real frames to a real PTY, and the whole path through a real
server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptyvisor.agents.activity import (
    FRAME_PAYLOAD,
    ActivityPhase,
    ActivityReport,
    InteractionReport,
)
from ptyvisor.agents.digest import prompt_digest
from ptyvisor.agents.emit import write_frame
from ptyvisor.agents.hooks import claude_code, cline, codex, copilot, droid, gemini_cli, qwen_code
from ptyvisor.agents.launch import (
    CLAUDE_EVENTS,
    CLINE_EVENTS,
    CODEX_EVENTS,
    COPILOT_EVENTS,
    GEMINI_EVENTS,
)
from ptyvisor.client.client import Client
from ptyvisor.keeper.proctable import process_start
from ptyvisor.wire.frames import Rejected, decode_frame, new_nonce
from ptyvisor.wire.protocol import ActivityChanged
from ptyvisor.wire.scanner import FrameScanner

from ..conftest import RunningServer, until

TOKEN_IN_COMMAND = "curl -H 'Authorization: Bearer sekrit123' https://api.example/x"


def claude(event: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": "native-1", "hook_event_name": event, **fields}


def kinds(payloads: list[dict[str, Any]]) -> list[str]:
    return [p["type"] + (":" + p["phase"] if p["type"] == "activity" else "") for p in payloads]


def test_claude_turn_mapping() -> None:
    assert kinds(claude_code.map_event(claude("SessionStart", source="startup"), 1)) == [
        "activity:waiting"
    ]
    start = claude_code.map_event(claude("SessionStart", source="startup"), 1)[0]
    assert start["native_session_id"] == "native-1"
    assert kinds(claude_code.map_event(claude("UserPromptSubmit", prompt="hi"), 2)) == [
        "interaction_cleared",
        "activity:working",
    ]
    assert kinds(claude_code.map_event(claude("Stop"), 3)) == ["activity:waiting"]
    failed = claude_code.map_event(claude("StopFailure", error="invalid_request"), 4)
    assert kinds(failed) == ["activity:failed"]
    assert failed[0]["reason"] == "invalid_request"


@pytest.mark.parametrize(
    ("mapper", "event"),
    [
        (claude_code.map_event, {"hook_event_name": "UserPromptSubmit"}),
        (qwen_code.map_event, {"hook_event_name": "UserPromptSubmit"}),
        (codex.map_event, {"hook_event_name": "UserPromptSubmit"}),
        (gemini_cli.map_event, {"hook_event_name": "BeforeAgent"}),
    ],
)
def test_the_turn_a_prompt_starts_names_the_prompt_by_digest(
    mapper: Callable[[dict[str, Any], int], list[dict[str, Any]]], event: dict[str, Any]
) -> None:
    """So a client that typed it (the prompt request) learns that it was taken; the
    frame carries the digest, never the text, and passes the server's own model."""
    text = "Deploy with TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n please"
    frames = mapper({**event, "session_id": "5f1c2a8e-8b1e-4a56-9a0e-3c6d9f1b2a77",
                     "prompt": text, "transcript_path": ""}, 7)  # fmt: skip
    working = [f for f in frames if f.get("phase") == "working"]
    assert [f["prompt"] for f in working] == [prompt_digest(text)]
    assert "ghp_" not in json.dumps(frames)
    report = FRAME_PAYLOAD.validate_python(working[0])
    assert isinstance(report, ActivityReport) and report.prompt == prompt_digest(text)


def test_claude_subagents_do_not_end_the_turn() -> None:
    assert claude_code.map_event(claude("Stop", agent_id="sub-1"), 1) == []
    assert claude_code.map_event(claude("PreToolUse", agent_id="sub-1", tool_name="Read"), 1) == []
    # A subagent's own stop ends only that subagent's requests (test_control.py).
    stop = claude_code.map_event(claude("SubagentStop", agent_id="sub-1"), 1)
    assert stop == [{"type": "subagent_stopped", "at": 1, "agent_id": "sub-1"}]


def test_claude_permission_request_is_a_masked_typed_approval() -> None:
    tool_input = {"command": TOKEN_IN_COMMAND, "description": "Fetch the thing"}
    suggestions = [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "curl:*"}],
            "behavior": "allow",
            "destination": "localSettings",
        }
    ]
    (frame,) = claude_code.map_event(
        claude(
            "PermissionRequest",
            tool_name="Bash",
            tool_input=tool_input,
            permission_suggestions=suggestions,
        ),
        10,
    )
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    interaction = report.interaction
    assert interaction.kind == "approval" and interaction.tool == "Bash"
    assert interaction.title == "Run a shell command"
    command = next(r for r in interaction.rows if r.label == "Command")
    assert command.monospace
    assert command.value == "curl -H 'Authorization: Bearer ***' https://api.example/x"
    assert "sekrit123" not in json.dumps(frame)
    assert [r.label for r in interaction.rows] == ["Command", "Description"]
    assert interaction.suggestions == ["Always allow Bash(curl:*) (localSettings)"]
    # PostToolUse of the same call clears exactly this request.
    after = claude_code.map_event(
        claude("PostToolUse", tool_name="Bash", tool_input=tool_input, tool_use_id="toolu_1"), 11
    )
    assert after[0] == {
        "type": "interaction_cleared",
        "at": 11,
        "id": interaction.id,
        "reason": "answered",
    }


def test_claude_ask_user_question_is_a_question() -> None:
    questions = [
        {
            "question": "Which colour?",
            "header": "Colour",
            "options": [
                {"label": "Red", "description": "warm"},
                {"label": "Blue", "description": "cool"},
            ],
            "multiSelect": False,
        }
    ]
    (frame,) = claude_code.map_event(
        claude(
            "PermissionRequest", tool_name="AskUserQuestion", tool_input={"questions": questions}
        ),
        5,
    )
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    question = report.interaction.questions[0]
    assert report.interaction.kind == "question" and report.interaction.accepts_free_form
    assert (question.header, question.question) == ("Colour", "Which colour?")
    assert [(o.label, o.description) for o in question.options] == [
        ("Red", "warm"),
        ("Blue", "cool"),
    ]


def test_answered_question_clears_although_claude_adds_the_answers() -> None:
    asked = {"questions": [{"question": "Which?", "options": [{"label": "A"}]}]}
    (frame,) = claude_code.map_event(
        claude("PermissionRequest", tool_name="AskUserQuestion", tool_input=asked), 1
    )
    answered = {**asked, "answers": {"Which?": "A"}, "annotations": {}}
    after = claude_code.map_event(
        claude("PostToolUse", tool_name="AskUserQuestion", tool_input=answered), 2
    )
    assert after[0]["id"] == frame["interaction"]["id"]


def test_stop_failure_carries_the_providers_details() -> None:
    (frame,) = claude_code.map_event(
        claude(
            "StopFailure",
            error="invalid_request",
            error_details="400 bad key sk-ant-abcdefghij0123456789",
        ),
        1,
    )
    assert frame["reason"] == "invalid_request: 400 bad key sk-ant-***"


def test_notification_is_weak_and_clear_session_end_ignored() -> None:
    weak = claude_code.map_event(claude("Notification", notification_type="permission_prompt"), 1)
    assert kinds(weak) == ["activity:needs_input"]
    idle = claude_code.map_event(claude("Notification", notification_type="idle_prompt"), 1)
    assert kinds(idle) == ["activity:waiting"]
    assert claude_code.map_event(claude("SessionEnd", reason="clear"), 1) == []
    assert kinds(claude_code.map_event(claude("SessionEnd", reason="exit"), 1)) == [
        "activity:stopped"
    ]


def test_qwen_code_speaks_claudes_protocol_with_its_own_tools() -> None:
    """Payloads as Qwen Code 0.24.4 sent them (tests/agents/clis/test_qwen_code_e2e.py)."""
    assert kinds(qwen_code.map_event(claude("SessionStart", source="startup"), 1)) == [
        "activity:waiting"
    ]
    shell = {"command": f"{TOKEN_IN_COMMAND} && ls", "description": "list"}
    (frame,) = qwen_code.map_event(
        claude("PermissionRequest", tool_name="run_shell_command", tool_input=shell), 2
    )
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    assert (report.interaction.agent, report.interaction.kind) == ("qwen-code", "approval")
    assert report.interaction.title == "Run a shell command"
    assert "sekrit123" not in report.model_dump_json()
    # The approval comes before PreToolUse: the tool's start ends it (a hook run
    # fewer per call than waiting for PostToolUse, which launch registers for the
    # question tool only).
    after = qwen_code.map_event(
        claude("PreToolUse", tool_name="run_shell_command", tool_input=shell), 3
    )
    assert after[0]["id"] == frame["interaction"]["id"]
    assert kinds(after) == ["interaction_cleared", "activity:working"]
    inside = {"agent_id": "a1", "agent_type": "Explorer"}
    by_subagent = claude("PreToolUse", tool_name="run_shell_command", tool_input=shell, **inside)
    assert kinds(qwen_code.map_event(by_subagent, 3)) == ["interaction_cleared"]
    asked = {"questions": [{"question": "Which?", "header": "H", "options": [{"label": "A"}]}]}
    ask = {"tool_name": "ask_user_question", "tool_input": asked}
    (question,) = qwen_code.map_event(claude("PermissionRequest", **ask), 4)
    assert question["interaction"]["kind"] == "question"
    assert question["interaction"]["title"] == "Qwen Code has a question"
    # Its dialog shows while the tool runs: only the tool's end answers it.
    assert kinds(qwen_code.map_event(claude("PreToolUse", **ask), 4)) == ["activity:working"]
    answered = qwen_code.map_event(claude("PostToolUse", **ask), 4)
    assert answered[0]["id"] == question["interaction"]["id"]
    # The request carrying tool results fires UserPromptSubmit too: no new prompt.
    continued = qwen_code.map_event(claude("UserPromptSubmit", prompt=""), 5)
    assert kinds(continued) == ["interaction_cleared", "activity:working"]
    assert continued[0]["reason"] == "tool_results" and "id" not in continued[0]
    assert kinds(qwen_code.map_event(claude("UserPromptSubmit", prompt="go"), 5)) == [
        "interaction_cleared",
        "activity:working",
    ]
    # Its idle_prompt follows every turn's end, a failed one's too: Stop said enough.
    assert qwen_code.map_event(claude("Notification", notification_type="idle_prompt"), 5) == []
    assert all(p["agent"] == "qwen-code" for p in qwen_code.map_event(claude("Stop"), 6))


def test_qwen_code_questions_are_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Qwen ignores a hook's allow for ask_user_question, so the hook asks ptyvisor for
    approvals only; a question is answered in the terminal."""
    asked: list[object] = []
    monkeypatch.setattr(claude_code, "request_decision", lambda i, **_: asked.append(i))
    questions = {"questions": [{"question": "Which?", "options": [{"label": "A"}]}]}
    event = claude("PermissionRequest", tool_name="ask_user_question", tool_input=questions)
    assert qwen_code.decide(event, qwen_code.map_event(event, 1)) is None
    assert asked == []
    event = claude("PermissionRequest", tool_name="run_shell_command", tool_input={"command": "x"})
    assert qwen_code.decide(event, qwen_code.map_event(event, 1)) is None  # no decision
    assert len(asked) == 1


def test_bounds_and_oversized_interactions_are_shortened() -> None:
    huge = {"command": "x" * 100_000}
    (frame,) = claude_code.map_event(
        claude("PermissionRequest", tool_name="Bash", tool_input=huge), 1
    )
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    assert len(report.interaction.rows[0].value) == 4000
    many = {
        "questions": [
            {"question": f"q{i}", "options": list("abcdefghijklmnopqrst")} for i in range(12)
        ]
    }
    (frame,) = claude_code.map_event(
        claude("PermissionRequest", tool_name="AskUserQuestion", tool_input=many), 1
    )
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    assert len(report.interaction.questions) == 8
    assert all(len(q.options) == 16 for q in report.interaction.questions)


def test_codex_mapping() -> None:
    event = {
        "session_id": "thread-1",
        "turn_id": "t1",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build", "description": "clean"},
    }
    (frame,) = codex.map_event(event, 3)
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    ident = report.interaction.id
    assert [(r.label, r.value) for r in report.interaction.rows] == [
        ("Command", "rm -rf build"),
        ("Description", "clean"),
    ]
    question = {
        **event,
        "tool_name": "request_user_input",
        "tool_input": {
            "questions": [
                {"id": "pick", "header": "Pick", "question": "Which?", "options": [{"label": "A"}]}
            ]
        },
    }
    (frame,) = codex.map_event(question, 4)
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    assert report.interaction.kind == "question"
    assert report.interaction.questions[0].id == "pick"
    # Codex 0.171: the PostToolUse has a tool_use_id and no description; same id.
    post = {
        **event,
        "hook_event_name": "PostToolUse",
        "tool_use_id": "call_9",
        "tool_input": {"command": "rm -rf build"},
    }
    done = codex.map_event(post, 5)
    assert done[0]["id"] == ident
    assert kinds(codex.map_event({"hook_event_name": "Interrupt"}, 6)) == ["activity:waiting"]
    # 0.171 fires no PermissionRequest for request_user_input: its PreToolUse asks.
    (pre,) = codex.map_event({**question, "hook_event_name": "PreToolUse"}, 7)
    assert pre["type"] == "interaction" and pre["interaction"]["kind"] == "question"


def gemini(event: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": "g-1", "hook_event_name": event, **fields}


def test_gemini_mapping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    assert kinds(gemini_cli.map_event(gemini("SessionStart", source="startup"), 1)) == [
        "activity:waiting"
    ]
    assert kinds(gemini_cli.map_event(gemini("BeforeAgent", prompt="hi"), 2)) == [
        "interaction_cleared",
        "activity:working",
    ]
    tool = {"tool_name": "run_shell_command", "tool_input": {"command": TOKEN_IN_COMMAND}}
    assert kinds(gemini_cli.map_event(gemini("BeforeTool", **tool), 3)) == ["activity:working"]
    details = {"type": "exec", "title": "Confirm Shell Command", "command": TOKEN_IN_COMMAND}
    ask = gemini("Notification", notification_type="ToolPermission", details=details)
    (frame,) = gemini_cli.map_event(ask, 4)
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    assert report.interaction.tool == "run_shell_command"
    assert report.interaction.title == "Confirm Shell Command"
    ((label, value),) = [(r.label, r.value) for r in report.interaction.rows]
    assert label == "Command" and "sekrit123" not in value
    assert (tmp_path / gemini_cli.CALL_FILE).read_text() == report.interaction.id
    # A kind whose details say nothing of it: needs input, without an interaction.
    other = {**ask, "details": {"type": "exit_plan_mode", "title": "Plan"}}
    assert kinds(gemini_cli.map_event(other, 5)) == ["activity:needs_input"]
    # ask_user: its questions are in the call's input, so its BeforeTool asks.
    questions = [{"question": "Which?", "header": "Pick", "type": "choice", "options": []}]
    asked = gemini("BeforeTool", tool_name="ask_user", tool_input={"questions": questions})
    (frame,) = gemini_cli.map_event(asked, 5)
    question = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(question, InteractionReport) and question.interaction.kind == "question"
    assert question.interaction.questions[0].question == "Which?"
    dialog = {**ask, "details": {"type": "ask_user", "title": "Ask User"}}
    assert gemini_cli.map_event(dialog, 5) == []
    answered = gemini_cli.map_event({**asked, "hook_event_name": "AfterTool"}, 5)
    assert answered[0]["id"] == question.interaction.id
    # The next AfterTool clears exactly that request (no call runs while a dialog
    # shows), once: an id-less clear would mean a new prompt, dropping a queued message.
    done = gemini_cli.map_event(gemini("AfterTool", **tool, tool_response={}), 6)
    assert kinds(done) == ["interaction_cleared", "activity:working"]
    assert done[0]["id"] == report.interaction.id
    again = gemini_cli.map_event(gemini("AfterTool", **tool, tool_response={}), 6)
    assert kinds(again) == ["activity:working"]
    assert kinds(gemini_cli.map_event(gemini("SessionEnd", reason="clear"), 7)) == []
    assert kinds(gemini_cli.map_event(gemini("SessionEnd", reason="exit"), 8)) == [
        "activity:stopped"
    ]


def test_gemini_turn_end_reads_a_failure_from_the_transcript(tmp_path: Path) -> None:
    """0.61.0 fires AfterAgent for a failed turn too; the TUI has just appended the
    error (then a hint) to the transcript, the records as the real one writes them."""
    transcript = tmp_path / "session.jsonl"
    records = [
        {"sessionId": "g-1", "kind": "main"},
        {"id": "1", "type": "user", "content": [{"text": "hi"}]},
        {"$set": {"lastUpdated": "x"}},
        {"id": "2", "type": "gemini", "content": "hello"},
    ]
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    end = gemini("AfterAgent", transcript_path=str(transcript), prompt_response="hello")
    assert kinds(gemini_cli.map_event(end, 1)) == ["activity:waiting"]
    error = '[API Error: {"error":{"code":400,"message":"no E2E","status":"INVALID_ARGUMENT"}}]'
    records += [
        {"id": "3", "type": "user", "content": [{"text": "again"}]},
        {"id": "4", "type": "error", "content": error},
        {"$set": {"lastUpdated": "y"}},
        {"id": "5", "type": "info", "content": "This request failed."},
    ]
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    (failed,) = gemini_cli.map_event(end, 2)
    assert failed["phase"] == "failed" and "no E2E" in failed["reason"]
    missing = gemini("AfterAgent", transcript_path=str(tmp_path / "gone.jsonl"))
    assert kinds(gemini_cli.map_event(missing, 3)) == ["activity:waiting"]


def test_codex_rollout_watcher_reports_failed_turns(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(
        json.dumps({"type": "event_msg", "payload": {"type": "task_started"}}) + "\n"
    )
    offset = rollout.stat().st_size

    def codex_writes() -> None:
        time.sleep(0.3)
        with rollout.open("a") as handle:
            handle.write(json.dumps({"type": "response_item", "payload": {}}) + "\n")
            handle.write(
                json.dumps(
                    {
                        "type": "event_msg",
                        "payload": {"type": "task_complete", "error": "400 bad request: token=abc"},
                    }
                )
            )
            handle.flush()
            time.sleep(0.3)
            handle.write("\n")

    writer = threading.Thread(target=codex_writes)
    writer.start()
    outcome = codex.watch_rollout(rollout, offset, time.monotonic() + 10)
    writer.join()
    assert outcome == (True, "400 bad request: token=***")
    assert codex.turn_outcome(
        json.dumps({"type": "event_msg", "payload": {"type": "task_complete"}})
    ) == (False, None)


def test_codex_rollout_watcher_ends_with_codex_and_writes_nothing_after(tmp_path: Path) -> None:
    """Codex runs hooks in sessions of their own, so the watcher outlives a stopped
    session unless it watches Codex. A turn that never completes: the watcher ends
    with its program, well before its deadline. Its frame is written only while the
    program runs, since an ended program's /dev/pts/N may be the next session's."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("")
    program = subprocess.Popen(["sleep", "600"])
    started = process_start(program.pid)
    assert started is not None
    argv = [str(rollout), "0", str(program.pid), str(started)]
    watcher = subprocess.Popen(
        [sys.executable, "-m", "ptyvisor.agents.hooks.codex", *argv],
        env={**os.environ, "PTYVISOR_SESSION": "s1", "PTYVISOR_NONCE": "n" * 32},
        start_new_session=True,
    )
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            watcher.wait(timeout=codex.POLL_SECONDS * 4)  # following the live turn
        program.kill()
        program.wait()
        assert watcher.wait(timeout=60) == 0
    finally:
        program.kill()
        watcher.kill()
        watcher.wait()
    assert process_start(program.pid) is None
    master, slave = os.openpty()
    try:
        nonce = new_nonce()
        env = {"PTYVISOR_SESSION": "s1", "PTYVISOR_NONCE": nonce, "PTYVISOR_TTY": os.ttyname(slave)}
        frame = {"type": "activity", "phase": "failed", "at": 1}
        assert not write_frame(frame, env, only_if=lambda: False)
        assert read_frames(master, "s1", nonce) == []
        assert write_frame(frame, env, only_if=lambda: True)
        assert read_frames(master, "s1", nonce) == [frame]
    finally:
        os.close(slave)
        os.close(master)


def run_hook(
    agent: str, event: dict[str, Any], env: dict[str, str], *named: str
) -> subprocess.CompletedProcess[bytes]:
    """The hook as ``python -m`` (what older sessions run); ``named``: the event on
    the command line, as Copilot's plugin passes it."""
    return subprocess.run(
        [sys.executable, "-m", "ptyvisor.agents.hooks", agent, *named],
        input=json.dumps(event).encode(),
        env=env,
        capture_output=True,
        timeout=20,
        check=False,
    )


def read_frames(master: int, session: str, nonce: str) -> list[dict[str, Any]]:
    os.set_blocking(master, False)
    data = b""
    while True:
        try:
            data += os.read(master, 65536)
        except BlockingIOError:
            break
    scanned = FrameScanner().feed(data)
    decoded = [decode_frame(body, session, nonce) for body in scanned.frames]
    assert not [d for d in decoded if isinstance(d, Rejected)]
    return [d for d in decoded if isinstance(d, dict)]


def session_env(slave: int, nonce: str) -> dict[str, str]:
    """This process's environment as a hook in session ``s1`` on ``slave`` gets it."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    return {
        **base,
        "PTYVISOR_SESSION": "s1",
        "PTYVISOR_NONCE": nonce,
        "PTYVISOR_TTY": os.ttyname(slave),
    }


def test_real_hook_process_writes_frames_and_stays_silent() -> None:
    master, slave = os.openpty()
    nonce = new_nonce()
    env = session_env(slave, nonce)
    base = {k: v for k, v in env.items() if not k.startswith("PTYVISOR_")}
    event = claude("PermissionRequest", tool_name="Bash", tool_input={"command": "ls"})
    result = run_hook("claude-code", event, env)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    (payload,) = read_frames(master, "s1", nonce)
    assert payload["interaction"]["rows"][0]["value"] == "ls"
    # Garbage in, outside a session, unknown agent: exit 0, nothing written or printed.
    for agent, stdin_env in (("claude-code", env), ("claude-code", base), ("nobody", env)):
        result = subprocess.run(
            [sys.executable, "-m", "ptyvisor.agents.hooks", agent],
            input=b"\xff not json",
            env=stdin_env,
            capture_output=True,
            timeout=20,
            check=False,
        )
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert read_frames(master, "s1", nonce) == []
    os.close(master)
    os.close(slave)


@pytest.mark.anyio
async def test_hook_interaction_reaches_clients_through_the_server(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    ask = claude("PermissionRequest", tool_name="Bash", tool_input={"command": "make deploy"})
    done = claude("PostToolUse", tool_name="Bash", tool_input={"command": "make deploy"})
    (tmp_path / "ask.json").write_text(json.dumps(ask))
    (tmp_path / "done.json").write_text(json.dumps(done))
    hook = f"{sys.executable} -m ptyvisor.agents.hooks claude-code"
    # Like Claude's hooks: no controlling terminal (setsid), frames go to PTYVISOR_TTY.
    # Without the control socket the request hook frames and exits rather than holding
    # for a client's answer (that is test_control's subject).
    ask_hook = f"env -u PTYVISOR_CONTROL {hook}"
    script = f"read go; setsid {ask_hook} < ask.json; read x; setsid {hook} < done.json; read y"
    session = await client.spawn(["sh", "-c", script], cwd=str(tmp_path))
    await client.attach(session.id, since=0)
    await client.send_input(b"go\r")  # the hook runs once this client sees what it says
    events = await until(client, lambda e: isinstance(e, ActivityChanged))
    change = events[-1]
    assert isinstance(change, ActivityChanged)
    assert change.activity.phase is ActivityPhase.NEEDS_INPUT
    assert change.activity.agent == "claude-code"
    assert change.pending_interaction is not None
    assert change.pending_interaction.rows[0].value == "make deploy"
    listed = {s.id: s for s in await client.list()}
    assert listed[session.id].pending_interaction == change.pending_interaction
    snapshot = await client.snapshot(session.id)
    assert snapshot.session.pending_interaction == change.pending_interaction
    await client.send_input(b"\r")
    events = await until(
        client, lambda e: isinstance(e, ActivityChanged) and e.pending_interaction is None
    )
    final = events[-1]
    assert isinstance(final, ActivityChanged)
    assert final.activity.phase is ActivityPhase.WORKING


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
_FIELDS = [
    "session_id",
    "prompt",
    "tool_name",
    "tool_input",
    "tool_use_id",
    "tool_response",
    "notification_type",
    "message",
    "details",
    "source",
    "reason",
    "transcript_path",
    "stop_hook_active",
    "permission_suggestions",
    "error",
    "error_details",
    "agent_id",
    # Copilot's camelCase payloads
    "sessionId",
    "timestamp",
    "toolName",
    "toolArgs",
    "toolResult",
    "errorContext",
    "recoverable",
    # Cline's
    "sessionContext",
    "tool_call",
    "tool_result",
]
_EVENTS = sorted(
    {
        *CLAUDE_EVENTS,
        *CODEX_EVENTS,
        *GEMINI_EVENTS,
        *COPILOT_EVENTS,
        *CLINE_EVENTS,
        "Interrupt",
        "SessionEnd",
        "Unknown",
    }
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    mapper=st.sampled_from([claude_code, codex, gemini_cli, qwen_code, copilot, droid, cline]),
    event=st.sampled_from(_EVENTS),
    fields=st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=8),
)
def test_any_hook_payload_maps_to_valid_frames(
    mapper: Any, event: str, fields: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's hook payload is untrusted input: whatever its fields hold, every
    mapper returns frames ptyvisor accepts (bounded, typed), never an exception."""
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path))
    for payload in mapper.map_event({**fields, "hook_event_name": event}, 1):
        FRAME_PAYLOAD.validate_python(payload)
