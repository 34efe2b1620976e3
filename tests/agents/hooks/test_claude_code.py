"""Claude Code's hook adapter (hooks/claude_code.py) on its own: the native answer
built from a client's decision about the *masked* interaction, mapped back to the
raw payload that never left the hook; the ids a request and its PostToolUse share;
subagents. The event mapping's main cases are in tests/agents/test_hooks.py."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ptyvisor.agents.hooks import claude_code
from ptyvisor.wire.control import Decision

from .payloads import JSON

SECRET_LABEL = "Use token=abc123 for it"


def request(tool: str, tool_input: object, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "native-1",
        "hook_event_name": "PermissionRequest",
        "tool_name": tool,
        "tool_input": tool_input,
        **fields,
    }


def verdict(answer: dict[str, Any] | None) -> dict[str, Any]:
    assert answer is not None
    decision: dict[str, Any] = answer["hookSpecificOutput"]["decision"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "PermissionRequest"
    return decision


def test_a_suggestion_is_answered_with_the_raw_item_at_its_shown_position() -> None:
    """The client picks an index among the labels it was shown; raw items without a
    label (skipped) must not shift which one Claude gets back."""
    chosen = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    event = request(
        "Edit",
        {"file_path": "/x"},
        permission_suggestions=[42, {"type": "addDirectories", "directories": ["/x"]}, chosen],
    )
    (frame,) = claude_code.map_event(event, 1)
    shown = frame["interaction"]["suggestions"]
    assert shown[1] == "Switch to acceptEdits mode"
    answered = verdict(claude_code.native_answer(event, Decision("allow", suggestion=1)))
    assert answered == {"behavior": "allow", "updatedPermissions": [chosen]}
    for out_of_range in (2, -1):
        assert claude_code.native_answer(event, Decision("allow", suggestion=out_of_range)) is None


def test_answers_chosen_among_masked_labels_go_back_as_the_raw_labels() -> None:
    questions = [
        {"question": "Which?", "options": [{"label": SECRET_LABEL}, {"label": "Other"}]},
        {"id": "many", "question": "Letters?", "multiSelect": True, "options": ["A", "B", "C"]},
        "not a question",
        {"question": "Untouched?", "options": ["Yes"]},
    ]
    event = request("AskUserQuestion", {"questions": questions, "extra": 1})
    (frame,) = claude_code.map_event(event, 1)
    asked = frame["interaction"]["questions"]
    masked = asked[0]["options"][0]["label"]
    assert "abc123" not in masked
    assert [q["id"] for q in asked] == ["q0", "many", "q3"]
    decision = Decision("allow", answers={"q0": [masked], "many": ["C", "A"]})
    answered = verdict(claude_code.native_answer(event, decision))
    assert answered["updatedInput"] == {
        "questions": questions,
        "extra": 1,
        "answers": {"Which?": SECRET_LABEL, "Letters?": "C, A"},
    }


def test_an_answer_that_does_not_fit_the_raw_payload_is_no_answer() -> None:
    """None: Claude shows its own prompt rather than get a wrong answer."""
    questions = [{"question": "Which?", "options": ["A"]}]
    ask = request("AskUserQuestion", {"questions": questions})
    assert claude_code.native_answer(ask, Decision("allow", answers={"q0": ["B"]})) is None
    no_input = request("AskUserQuestion", "questions as text")
    assert claude_code.native_answer(no_input, Decision("allow", answers={"q0": "x"})) is None
    not_a_list = request("AskUserQuestion", {"questions": {"q0": questions[0]}})
    assert claude_code.native_answer(not_a_list, Decision("allow", answers={"q0": "x"})) is None


def test_a_deny_carries_its_message_or_the_default() -> None:
    event = request("Bash", {"command": "make"})
    assert verdict(claude_code.native_answer(event, Decision("deny", message="no"))) == {
        "behavior": "deny",
        "message": "no",
    }
    assert verdict(claude_code.native_answer(event, Decision("deny")))["message"] == (
        claude_code.DEFAULT_DENY_MESSAGE
    )
    assert verdict(claude_code.native_answer(event, Decision("allow"))) == {"behavior": "allow"}


def test_a_subagents_request_names_it_and_its_post_tool_use_clears_without_working() -> None:
    event = request("Write", {"file_path": "/tmp/x", "content": "hi"}, agent_id="sub-7")
    (frame,) = claude_code.map_event(event, 1)
    assert frame["agent_id"] == "sub-7"
    assert frame["interaction"]["title"] == "Write a file"
    done = {**event, "hook_event_name": "PostToolUse", "tool_response": {"ok": True}}
    (cleared,) = claude_code.map_event(done, 2)
    assert cleared["id"] == frame["interaction"]["id"] and cleared["reason"] == "answered"


def test_only_the_question_tool_drops_the_answers_from_the_id() -> None:
    """Another tool whose input has an ``answers`` field keeps it: its PostToolUse,
    with the same input, clears the same request."""
    tool_input = {"command": "x", "answers": {"a": "b"}}
    (frame,) = claude_code.map_event(request("Bash", tool_input), 1)
    done = {**request("Bash", tool_input), "hook_event_name": "PostToolUse"}
    assert claude_code.map_event(done, 2)[0]["id"] == frame["interaction"]["id"]


def test_an_unknown_tool_shows_its_whole_input_and_a_known_field_replaces_it() -> None:
    (unknown,) = claude_code.map_event(request("mcp__db__query", {"sql": "select 1"}), 1)
    rows = unknown["interaction"]["rows"]
    assert unknown["interaction"]["title"] == "Use mcp__db__query"
    assert [(r["label"], r["value"]) for r in rows] == [("Input", '{"sql": "select 1"}')]
    (known,) = claude_code.map_event(request("WebFetch", {"url": "https://x", "q": 1}), 1)
    assert [r["label"] for r in known["interaction"]["rows"]] == ["URL"]


def test_stop_failure_reason_takes_the_best_detail_there_is() -> None:
    def reason(**fields: Any) -> str:
        event = {"hook_event_name": "StopFailure", **fields}
        result: str = claude_code.map_event(event, 1)[0]["reason"]
        return result

    assert reason() == "unknown"
    assert reason(error="rate_limit", last_assistant_message="slow down") == "rate_limit: slow down"
    assert reason(error="x", message="old", error_details="new") == "x: new"


ANSWERS = st.dictionaries(
    st.sampled_from(["q0", "q1", "id"]),
    st.text(max_size=8) | st.lists(st.text(max_size=8), max_size=3),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    tool_input=JSON | st.fixed_dictionaries({"questions": JSON}),
    suggestions=JSON,
    behavior=st.sampled_from(["allow", "deny"]),
    suggestion=st.none() | st.integers(-2, 5),
    answers=st.none() | ANSWERS,
)
def test_any_payload_and_decision_give_an_answer_or_none_never_an_exception(
    tool_input: object,
    suggestions: object,
    behavior: str,
    suggestion: int | None,
    answers: dict[str, list[str] | str] | None,
) -> None:
    """The hook must print a valid answer or nothing: an exception would leave Claude
    waiting on a hook that failed."""
    event = request("AskUserQuestion", tool_input, permission_suggestions=suggestions)
    claude_code.map_event(event, 1)
    answer = claude_code.native_answer(event, Decision(behavior, None, suggestion, answers))
    if answer is not None:
        assert verdict(answer)["behavior"] == behavior
