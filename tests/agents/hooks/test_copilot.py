"""GitHub Copilot CLI's hook payloads (1.0.102, as its real TUI sent them; see
tests/agents/clis/test_copilot_e2e.py) mapped to frames, and the real hook process run
the way Copilot's plugin runs it: the event named on the command line."""

from __future__ import annotations

import json
import os
from typing import Any

from ptyvisor.agents.activity import FRAME_PAYLOAD
from ptyvisor.agents.digest import prompt_digest
from ptyvisor.agents.hooks import copilot
from ptyvisor.wire.frames import new_nonce

from ..test_hooks import kinds, read_frames, run_hook, session_env

SESSION = "7c70be05-d2f2-46d2-a042-f558b1353317"


def event(name: str, **fields: Any) -> dict[str, Any]:
    """A payload as Copilot sends it, with the event name ``__main__`` adds."""
    return {
        "sessionId": SESSION,
        "timestamp": 1796417425465,
        "cwd": "/tmp/project",
        "hook_event_name": name,
        **fields,
    }


def mapped(name: str, **fields: Any) -> list[dict[str, Any]]:
    payloads = copilot.map_event(event(name, **fields), 5)
    for payload in payloads:
        FRAME_PAYLOAD.validate_python(payload)
    return payloads


def test_a_turn_from_prompt_to_stop_names_the_conversation() -> None:
    prompt = mapped("userPromptSubmitted", prompt="make a file")
    assert kinds(prompt) == ["interaction_cleared", "activity:working"]
    assert prompt[1]["prompt"] == prompt_digest("make a file")
    assert prompt[1]["native_session_id"] == SESSION
    tool = {"toolName": "bash", "toolArgs": {"command": "ls", "description": "list"}}
    assert kinds(mapped("preToolUse", **tool)) == ["activity:working"]
    assert kinds(mapped("postToolUse", **tool)) == ["interaction_cleared", "activity:working"]
    assert kinds(mapped("postToolUseFailure", **tool)) == [
        "interaction_cleared",
        "activity:working",
    ]
    stop = mapped("agentStop", stopReason="end_turn", stop_hook_active=False)
    assert kinds(stop) == ["activity:waiting"]
    end = mapped("sessionEnd", reason="user_exit")
    assert (kinds(end), end[0]["reason"]) == (["activity:stopped"], "user_exit")
    assert mapped("sessionStart", source="new", initialPrompt="hi") == []
    assert mapped("subagentStop") == []


def test_the_permission_dialog_is_a_masked_approval() -> None:
    """The notification sent as the dialog shows; its message names the command."""
    (frame,) = mapped(
        "notification",
        message="Run command: curl -H 'Authorization: Bearer sekrit123' https://x",
        title="Permission needed",
        notification_type="permission_prompt",
    )
    interaction = frame["interaction"]
    assert (interaction["kind"], interaction["tool"]) == ("approval", "bash")
    assert interaction["title"] == "Run a shell command"
    (row,) = interaction["rows"]
    assert (row["label"], row["monospace"]) == ("Command", True)
    assert row["value"].startswith("curl -H") and "sekrit123" not in row["value"]
    other = mapped(
        "notification",
        message="Allow writing to /etc/hosts",
        title="Permission needed",
        notification_type="permission_prompt",
    )[0]["interaction"]
    assert other["title"] == "Permission needed"
    assert other["rows"] == [
        {"label": "Request", "value": "Allow writing to /etc/hosts", "monospace": False}
    ]


def test_other_notifications_and_permission_checks_raise_no_alarm() -> None:
    """The elicitation notification follows ask_user's preToolUse (already a question);
    an idle or unknown one says nothing about a dialog."""
    for kind in ("elicitation_dialog", "idle_prompt", None):
        assert mapped("notification", message="Information requested", notification_type=kind) == []


def test_ask_user_is_a_question_with_the_forms_choices() -> None:
    schema = {
        "properties": {
            "colour": {"type": "string", "title": "Colour", "enum": ["Red", "Blue", "Green"]}
        },
        "required": ["colour"],
    }
    (frame,) = mapped(
        "preToolUse",
        toolName="ask_user",
        toolArgs={"message": "Which colour?", "requestedSchema": schema},
    )
    interaction = frame["interaction"]
    assert (interaction["kind"], interaction["tool"]) == ("question", "ask_user")
    (question,) = interaction["questions"]
    assert (question["id"], question["header"], question["question"]) == (
        "colour",
        "Colour",
        "Which colour?",
    )
    assert [o["label"] for o in question["options"]] == ["Red", "Blue", "Green"]
    assert interaction["accepts_free_form"]


def test_a_form_of_several_fields_asks_each_and_shows_its_labels() -> None:
    schema = {
        "properties": {
            "size": {
                "type": "string",
                "description": "How big?",
                "enum": ["s", "l"],
                "enumNames": ["Small", "Large"],
            },
            "tags": {"type": "array", "description": "Which tags?"},
        }
    }
    (frame,) = mapped(
        "preToolUse", toolName="ask_user", toolArgs={"message": "Set up", "requestedSchema": schema}
    )
    asked = frame["interaction"]["questions"]
    assert [(q["question"], q["multi_select"]) for q in asked] == [
        ("How big?", False),
        ("Which tags?", True),
    ]
    assert [o["label"] for o in asked[0]["options"]] == ["Small", "Large"]
    bare = mapped("preToolUse", toolName="ask_user", toolArgs={"message": "Anything else?"})
    assert bare[0]["interaction"]["questions"][0]["question"] == "Anything else?"


def test_a_failed_model_call_fails_the_turn_with_the_providers_message() -> None:
    body = {"message": "fake model: rejected E2E-403", "type": "invalid_request_error"}
    (frame,) = mapped(
        "errorOccurred",
        errorContext="model_call",
        recoverable=True,
        error={"message": json.dumps(body), "name": "Error", "stack": "Error: …"},
    )
    assert (frame["phase"], frame["reason"]) == ("failed", "fake model: rejected E2E-403")
    plain = mapped("errorOccurred", errorContext="model_call", error={"message": "timed out"})
    assert plain[0]["reason"] == "timed out"
    assert mapped("errorOccurred", errorContext="tool_execution", error={"message": "x"}) == []


def test_the_real_hook_takes_the_event_from_its_command_line() -> None:
    """Copilot's payloads do not name their event: the plugin's command does."""
    master, slave = os.openpty()
    nonce = new_nonce()
    payload = event("ignored", prompt="hello")
    del payload["hook_event_name"]
    result = run_hook("copilot", payload, session_env(slave, nonce), "userPromptSubmitted")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    frames = read_frames(master, "s1", nonce)
    assert [f["type"] for f in frames] == ["interaction_cleared", "activity"]
    assert frames[1]["native_session_id"] == SESSION
    os.close(master)
    os.close(slave)
