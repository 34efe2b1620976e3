"""Cline CLI's hook adapter (hooks/cline.py) on its own: its payloads as Cline 3.0.65
sends them (its real TUI: tests/agents/clis/test_cline_e2e.py), an approval that waits
for its dialog, and the prompt read back from Cline's input history (untrusted, in the
session's data folder)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptyvisor.agents.activity import FRAME_PAYLOAD, ActivityReport, InteractionReport
from ptyvisor.agents.digest import prompt_digest
from ptyvisor.agents.hooks import cline
from ptyvisor.agents.hooks.normalise import request_digest

from .payloads import JSON

SESSION = "1796509832523_enbov"
SECRET = "curl -H 'Authorization: Bearer sekrit123' https://api.example/x > out.txt"


def event(name: str, **fields: Any) -> dict[str, Any]:
    """A payload's common fields, as 3.0.65 sends them, and the event's own."""
    return {
        "clineVersion": "",
        "timestamp": "2026-12-05T22:30:38.764Z",
        "taskId": "conv_1796509838757_pmrrok3",
        "sessionContext": {"rootSessionId": SESSION},
        "workspaceRoots": ["/tmp/proj"],
        "hookName": "agent_start",
        "hook_event_name": name,
        **fields,
    }


def history(data: Path, *prompts: str) -> None:
    path = data / "cache" / "user_input_history.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps({"prompt": p, "ts": 1}) for p in prompts))


def frames(payload: dict[str, Any]) -> list[Any]:
    """The frames, each checked against the server's own model."""
    return [FRAME_PAYLOAD.validate_python(f) for f in cline.map_event(payload, 5)]


def test_a_turn_names_the_prompt_cline_took_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path))
    history(tmp_path, "an older one", "Deploy it  now\nplease")
    for name in ("TaskStart", "TaskResume"):
        cleared, working = frames(event(name))
        assert cleared.type == "interaction_cleared" and cleared.id is None
        assert isinstance(working, ActivityReport) and working.phase == "working"
        assert working.native_session_id == SESSION
        assert working.prompt == prompt_digest("Deploy it now please")


def test_no_history_no_digest_and_a_fifo_there_does_not_hold_the_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path))
    assert frames(event("TaskStart"))[1].prompt is None
    fifo = tmp_path / "cache" / "user_input_history.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert frames(event("TaskStart"))[1].prompt is None  # returns: nobody writes it
    monkeypatch.delenv("CLINE_DATA_DIR")
    assert frames(event("TaskStart"))[1].prompt is None


def test_only_the_history_tail_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path))
    history(tmp_path, "x" * (cline.HISTORY_TAIL * 2), "the last one")
    assert frames(event("TaskStart"))[1].prompt == prompt_digest("the last one")


def test_a_command_is_an_approval_shown_only_with_its_dialog_and_its_end_clears_it() -> None:
    call = {"id": "call_1", "name": "run_commands", "input": {"commands": [SECRET, "ls"]}}
    (approval,) = frames(event("PreToolUse", tool_call=call))
    assert isinstance(approval, InteractionReport) and approval.on_screen
    shown = approval.interaction
    assert shown.kind == "approval" and shown.tool == "run_commands"
    assert shown.title == "Run shell commands"
    assert shown.id == request_digest("run_commands", call["input"])
    assert shown.rows[0].label == "Command" and shown.rows[0].monospace
    assert shown.rows[0].value.endswith("\nls") and "sekrit123" not in shown.model_dump_json()
    result = {**call, "output": [{"result": "ok", "success": True}]}
    cleared, working = frames(event("PostToolUse", tool_result=result))
    assert cleared.id == shown.id
    assert working.phase == "working" and working.native_session_id == SESSION


def test_another_tools_approval_shows_its_input() -> None:
    call = {"id": "c", "name": "editor", "input": {"path": "src/a.py", "new_text": "x"}}
    (approval,) = frames(event("PreToolUse", tool_call=call))
    rows = {r.label: r.value for r in approval.interaction.rows}
    assert approval.interaction.title == "Edit a file" and rows["File"] == "src/a.py"
    assert json.loads(rows["Input"]) == call["input"]  # what the edit writes
    odd = {"id": "c", "name": "team_task", "input": {"anything": 1}}
    (approval,) = frames(event("PreToolUse", tool_call=odd))
    assert approval.interaction.title == "Use team_task"
    assert [r.label for r in approval.interaction.rows] == ["Input"]


def test_its_question_tool_is_pending_from_its_hook() -> None:
    asked = {"question": "Which colour?", "options": ["Red", "Blue"]}
    call = {"id": "c", "name": "ask_question", "input": asked}
    (question,) = frames(event("PreToolUse", tool_call=call))
    assert isinstance(question, InteractionReport) and not question.on_screen
    assert question.interaction.kind == "question"
    (q,) = question.interaction.questions
    assert q.question == "Which colour?" and [o.label for o in q.options] == ["Red", "Blue"]


def test_turn_ends() -> None:
    assert [f.phase for f in frames(event("TaskComplete"))] == ["waiting"]
    assert [f.phase for f in frames(event("SessionShutdown"))] == ["waiting"]
    error = {
        "name": "Error",
        "message": "400 Bad Request: token=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    }
    (failed,) = frames(event("TaskError", error=error))
    assert failed.phase == "failed" and failed.reason is not None
    assert "400 Bad Request" in failed.reason and "ghp_abcdef" not in failed.reason
    assert frames(event("UserPromptSubmit")) == []


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(st.one_of(JSON.map(json.dumps), st.text(max_size=40)), max_size=6),
    name=st.sampled_from(["TaskStart", "PreToolUse", "PostToolUse", "TaskError", "Nope"]),
    fields=st.dictionaries(
        st.sampled_from(["sessionContext", "tool_call", "tool_result", "error"]), JSON, max_size=4
    ),
)
def test_any_history_and_payload_give_valid_frames(
    lines: list[str],
    name: str,
    fields: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The history file and the payload are the session's: whatever they hold, the
    hook sends frames the server accepts, and never fails."""
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path))
    path = tmp_path / "cache" / "user_input_history.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines))
    for payload in cline.map_event({**fields, "hook_event_name": name}, 1):
        FRAME_PAYLOAD.validate_python(payload)
