"""Factory Droid's hook adapter (hooks/droid.py) on its own: its dialogs found in the
transcript (untrusted, possibly huge), a failed turn told from a finished one, and its
question tool's text. Records are shaped as Droid 0.225.2 wrote them (its real TUI:
tests/agents/clis/test_droid_e2e.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptyvisor.agents.activity import FRAME_PAYLOAD, InteractionReport
from ptyvisor.agents.hooks import droid
from ptyvisor.agents.hooks.normalise import request_digest

from .payloads import JSON

SECRET_COMMAND = "curl -H 'Authorization: Bearer sekrit123' https://api.example/x > out.txt"
CALL = {
    "command": SECRET_COMMAND,
    "summary": "Fetch the thing now",
    "riskLevelReason": "Writes one file in the project.",
    "riskLevel": "medium",
}
QUESTIONNAIRE = (
    "1. [question] Which features? (multi)\n[topic] Features\n[option] Auth\n[option] Login\n"
    "2. [question] Which colour?\n[topic] Colour\n[option] Red\n[option] Blue\n"
)


def message(ident: str, role: str, *content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": ident,
        "message": {"role": role, "content": list(content), **extra},
    }


def tool_use(ident: str, name: str, tool_input: object) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": tool_input}


def hook_record(ident: str, event: str) -> dict[str, Any]:
    return message(ident, "user", visibility="user_only", hookEventName=event, hookStatus="done")


def transcript(tmp_path: Path, *records: object) -> str:
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def event(name: str, path: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "a4525c8b-3450-4e7a-8127-8350f4d07ce6",
        "hook_event_name": name,
        "transcript_path": path,
        **fields,
    }


def test_the_permission_dialog_is_the_pending_call_masked_and_cleared_by_its_post_tool_use(
    tmp_path: Path,
) -> None:
    path = transcript(
        tmp_path,
        message("u1", "user", {"type": "text", "text": "run it"}),
        # An earlier call, answered, is not the one asked about.
        message("a0", "assistant", tool_use("c0", "Execute", {"command": "ls"})),
        message("r0", "user", {"type": "tool_result", "tool_use_id": "c0", "content": "ok"}),
        message("a1", "assistant", {"type": "text", "text": "Ok"}, tool_use("c1", "Execute", CALL)),
        hook_record("h1", "PreToolUse"),
    )  # fmt: skip
    asked = event("Notification", path, notification_type="permission_prompt", message="1 tool")
    (frame,) = droid.map_event(asked, 5)
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    interaction = report.interaction
    assert (interaction.agent, interaction.kind, interaction.tool) == (
        "droid",
        "approval",
        "Execute",
    )
    assert interaction.title == "Run a shell command"
    shown = {row.label: row.value for row in interaction.rows}
    assert "sekrit123" not in json.dumps(frame)
    assert shown["Command"].startswith("curl -H 'Authorization: Bearer ")
    assert shown["Why"] == "Writes one file in the project."
    assert interaction.id == request_digest("Execute", CALL)
    # No client can answer it: only keys in Droid's dialog do.
    assert droid.decide(asked, [frame]) is None

    done = droid.map_event(event("PostToolUse", path, tool_name="Execute", tool_input=CALL), 6)
    assert [f["type"] for f in done] == ["interaction_cleared", "activity"]
    assert done[0]["id"] == interaction.id and done[1]["phase"] == "working"


def test_the_question_dialog_is_askusers_questionnaire(tmp_path: Path) -> None:
    asked = {"questionnaire": QUESTIONNAIRE}
    path = transcript(
        tmp_path,
        message("a1", "assistant", tool_use("c1", "AskUser", asked)),
        hook_record("h1", "PreToolUse"),
    )
    (frame,) = droid.map_event(
        event("Notification", path, notification_type="elicitation_dialog"), 1
    )
    report = FRAME_PAYLOAD.validate_python(frame)
    assert isinstance(report, InteractionReport)
    interaction = report.interaction
    assert (interaction.kind, interaction.title) == ("question", "Droid has a question")
    assert interaction.id == request_digest("AskUser", asked)
    first, second = interaction.questions
    assert (first.question, first.header, first.multi_select) == (
        "Which features?",
        "Features",
        True,
    )
    assert [o.label for o in first.options] == ["Auth", "Login"]
    assert (second.question, second.multi_select) == ("Which colour?", False)
    assert [o.label for o in second.options] == ["Red", "Blue"]
    # The permission notification looks for another tool's call, and finds none here.
    (weak,) = droid.map_event(event("Notification", path, notification_type="permission_prompt"), 2)
    assert (weak["type"], weak["phase"], weak["reason"]) == (
        "activity",
        "needs_input",
        "permission_prompt",
    )


def test_questionnaire_lines_droid_would_refuse_are_skipped() -> None:
    assert droid.questionnaire(None) == []
    assert droid.questionnaire("[option] before any question\nno number [question] x") == []
    (only,) = droid.questionnaire("  3.  [question]  Why?  \n[option] A\n[bogus] x\n")
    assert only == {"question": "Why?", "options": [{"label": "A"}], "multiSelect": False}


def test_without_a_readable_transcript_a_dialog_is_still_needs_input(tmp_path: Path) -> None:
    for path in ("", str(tmp_path / "missing.jsonl"), str(tmp_path)):
        (frame,) = droid.map_event(
            event("Notification", path, notification_type="permission_prompt"), 1
        )
        assert (frame["phase"], frame["reason"]) == ("needs_input", "permission_prompt")


def test_a_turn_that_ends_on_droids_error_notice_failed(tmp_path: Path) -> None:
    notice = "BYOK Error: 403 fake model: prompt rejected E2E-403\n\nUpstream error: rejected"
    path = transcript(
        tmp_path,
        message("u1", "user", {"type": "text", "text": "fail now"}),
        message("e1", "user", {"type": "text", "text": notice}, visibility="user_only"),
    )
    (failed,) = droid.map_event(event("Stop", path, message_id="e1"), 3)
    assert (failed["phase"], failed["reason"]) == ("failed", notice)
    assert droid.decide(event("Stop", path, message_id="e1"), [failed]) is None
    # The same Stop naming the model's answer, a hook's record, the user's own text, a
    # cancelled call's result or nothing: the turn is over, not failed.
    answered = transcript(
        tmp_path,
        message("u1", "user", {"type": "text", "text": "hi"}),
        message("r1", "user", {"type": "tool_result", "tool_use_id": "c", "content": "no"}),
        hook_record("h1", "Stop"),
        message("a1", "assistant", {"type": "text", "text": "Hello"}),
    )
    for ident in ("a1", "h1", "u1", "r1", "elsewhere", None, 7):
        frames = droid.map_event(event("Stop", answered, message_id=ident), 4)
        assert [(f["type"], f.get("phase")) for f in frames] == [("activity", "waiting")], ident


def test_esc_while_thinking_ends_the_turn() -> None:
    """Droid sends no Stop then, only this notification."""
    (frame,) = droid.map_event(event("Notification", "", notification_type="idle_prompt"), 1)
    assert frame["phase"] == "waiting"


def test_only_the_transcripts_tail_is_read(tmp_path: Path) -> None:
    """A call further back than the tail is not found (a record cut by the seek is
    skipped): the read is bounded whatever the file's size."""
    old = message("a1", "assistant", tool_use("c1", "Execute", {"command": "ls"}))
    filler = message("x", "user", {"type": "text", "text": "x" * droid.TRANSCRIPT_TAIL})
    path = transcript(tmp_path, old, filler)
    assert droid.pending_call(path, question=False) is None
    path = transcript(tmp_path, filler, old)
    assert droid.pending_call(path, question=False) == ("Execute", {"command": "ls"})


def test_a_fifo_or_folder_as_transcript_neither_holds_the_hook_nor_is_read(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        (frame,) = droid.map_event(
            event("Notification", str(path), notification_type="permission_prompt"), 1
        )
        assert frame["phase"] == "needs_input"
        assert droid.turn_error(str(path), "e1") is None


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=st.lists(JSON, max_size=6),
    name=st.sampled_from(["Notification", "Stop", "PostToolUse", "SessionStart"]),
    fields=st.dictionaries(
        st.sampled_from(["notification_type", "message_id", "tool_name", "tool_input"]),
        JSON | st.sampled_from(["permission_prompt", "elicitation_dialog", "idle_prompt"]),
        max_size=4,
    ),
)
def test_any_transcript_and_payload_give_valid_frames(
    tmp_path: Path, records: list[object], name: str, fields: dict[str, Any]
) -> None:
    """The transcript is the session's to write: whatever it holds, the frames are
    ones ptyvisor accepts, never an exception."""
    path = transcript(tmp_path, *records)
    for frame in droid.map_event(event(name, path, **fields), 1):
        FRAME_PAYLOAD.validate_python(frame)


@pytest.mark.parametrize("kind", ["permission_prompt", "elicitation_dialog"])
def test_a_transcript_of_records_shaped_wrong_is_no_call(tmp_path: Path, kind: str) -> None:
    path = transcript(
        tmp_path,
        {"type": "message", "message": "text"},
        {"type": "message", "message": {"content": "text"}},
        {"type": "message", "message": {"content": [1, "x", None]}},
        {"type": "other", "message": {"content": [tool_use("c", "Execute", {})]}},
    )
    (frame,) = droid.map_event(event("Notification", path, notification_type=kind), 1)
    assert (frame["type"], frame["phase"]) == ("activity", "needs_input")
