"""Codex's hook adapter (hooks/codex.py) on its own, with the payload shapes Codex
0.171 sends: the request id a PermissionRequest and its PostToolUse share, the
approval's rows, its native answer, and the rollout lines that end a turn, which
are untrusted input read by a detached watcher."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from ptyvisor.agents.hooks import codex
from ptyvisor.wire.control import Decision

from .payloads import JSON


def event(name: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": "native-1", "turn_id": "turn-1", "hook_event_name": name, **fields}


def test_a_request_and_its_post_tool_use_share_an_id_although_only_one_has_a_description() -> None:
    asked = event(
        "PermissionRequest",
        tool_name="Bash",
        tool_input={"command": "rm -rf build", "description": "Clean the build"},
    )
    done = event("PostToolUse", tool_name="Bash", tool_input={"command": "rm -rf build"})
    (frame,) = codex.map_event(asked, 1)
    cleared = codex.map_event(done, 2)[0]
    assert cleared == {
        "type": "interaction_cleared",
        "at": 2,
        "reason": "answered",
        "id": frame["interaction"]["id"],
    }
    # The same command in another turn is another request; another command too.
    assert codex.request_id({**asked, "turn_id": "turn-2"}) != codex.request_id(asked)
    other = {**asked, "tool_input": {"command": "ls", "description": "Clean the build"}}
    assert codex.request_id(other) != codex.request_id(asked)


def test_an_approval_shows_the_command_as_one_line_and_its_directory() -> None:
    asked = event(
        "PermissionRequest",
        tool_name="shell",
        tool_input={
            "command": ["git", "push", "--force"],
            "workdir": "/repo",
            "justification": "Publish the fix",
        },
    )
    interaction = codex.map_event(asked, 1)[0]["interaction"]
    assert interaction["kind"] == "approval" and interaction["title"] == "Run a shell command"
    assert [(r["label"], r["value"]) for r in interaction["rows"]] == [
        ("Command", "git push --force"),
        ("Directory", "/repo"),
        ("Description", "Publish the fix"),
    ]


def test_a_tool_without_a_command_shows_its_whole_input_masked() -> None:
    asked = event(
        "PermissionRequest",
        tool_name="apply_patch",
        tool_input={"patch": "+token = 'Bearer sekrit123'"},
    )
    interaction = codex.map_event(asked, 1)[0]["interaction"]
    assert interaction["title"] == "Use apply_patch"
    ((label, value),) = [(r["label"], r["value"]) for r in interaction["rows"]]
    assert label == "Input" and "sekrit123" not in value and "patch" in value


def test_its_question_tool_asks_at_pre_tool_use() -> None:
    """0.171 fires no PermissionRequest for request_user_input."""
    asked = event(
        "PreToolUse",
        tool_name=codex.QUESTION_TOOL,
        tool_input={"questions": [{"id": "color", "question": "Which?", "options": ["a", "b"]}]},
    )
    (frame,) = codex.map_event(asked, 1)
    interaction = frame["interaction"]
    assert interaction["kind"] == "question" and interaction["title"] == "Codex has a question"
    assert [o["label"] for o in interaction["questions"][0]["options"]] == ["a", "b"]
    assert codex.decide(asked, [frame]) is None, "a question is not held (only approvals)"


def test_turn_boundaries() -> None:
    def phases(name: str, **fields: Any) -> list[tuple[Any, Any]]:
        return [
            (p.get("phase", p["type"]), p.get("reason"))
            for p in codex.map_event(event(name, **fields), 1)
        ]

    assert phases("Stop") == [("waiting", None)]
    assert phases("Interrupt") == [("waiting", "interrupted")]
    assert phases("SessionEnd", reason="exit") == [("stopped", "exit")]
    assert phases("PreToolUse", tool_name="Bash") == [("working", None)]
    assert phases("SubagentStop") == phases("SessionStart") == []


def test_native_answers() -> None:
    allow = codex.native_answer(Decision("allow", message="ignored"))
    assert allow == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    deny = codex.native_answer(Decision("deny"))["hookSpecificOutput"]["decision"]
    assert deny == {"behavior": "deny", "message": codex.DEFAULT_DENY_MESSAGE}
    said = codex.native_answer(Decision("deny", message="not on main"))
    assert said["hookSpecificOutput"]["decision"]["message"] == "not on main"


def rollout_line(payload: object, kind: object = "event_msg") -> str:
    return json.dumps({"type": kind, "payload": payload})


def test_the_rollout_lines_that_end_a_turn() -> None:
    assert codex.turn_outcome(rollout_line({"type": "task_complete"})) == (False, None)
    assert codex.turn_outcome(rollout_line({"type": "task_complete", "error": ""})) == (
        False,
        None,
    )
    assert codex.turn_outcome(
        rollout_line({"type": "task_complete", "error": {"message": "quota exceeded"}})
    ) == (True, "quota exceeded")
    assert codex.turn_outcome(rollout_line({"type": "turn_aborted"})) == (False, None)
    assert codex.turn_outcome(rollout_line({"type": "shutdown_complete"})) == (False, None)
    for other in (
        rollout_line({"type": "task_started"}),
        rollout_line({"type": "task_complete"}, kind="response_item"),
        rollout_line("task_complete"),
        "[]",
        "not json",
        "",
    ):
        assert codex.turn_outcome(other) is None


@given(payload=JSON, error=JSON, kind=st.sampled_from(["task_complete", "turn_aborted", "x"]))
@example(payload=None, error=5, kind="task_complete")
@example(payload=None, error=["a list"], kind="task_complete")
@example(payload=None, error={"message": {"nested": "token=abc"}}, kind="task_complete")
def test_any_rollout_line_is_an_outcome_or_none_never_an_exception(
    payload: object, error: object, kind: str
) -> None:
    """The watcher reads what Codex wrote, or anything else in that file: a line that
    raised would end it without a word, and a failed turn would go unreported."""
    for line in (
        rollout_line(payload),
        rollout_line({"type": kind, "error": error}),
        json.dumps(payload),
    ):
        outcome = codex.turn_outcome(line)
        if outcome is not None:
            failed, reason = outcome
            assert failed == (reason is not None)
            assert reason is None or (isinstance(reason, str) and "token=abc" not in reason)
    if kind == "task_complete" and error:
        outcome = codex.turn_outcome(rollout_line({"type": kind, "error": error}))
        assert outcome is not None and outcome[0] is True
