"""Qwen Code's hook adapter (hooks/qwen_code.py): Claude Code's protocol spoken in
Qwen's dialect. What is its own is pinned here: its tool names and titles, the
``ask_user_question`` dialog it answers only in the terminal, the empty
``UserPromptSubmit`` that carries tool results, and the ``idle_prompt`` it sends after
every turn. The real hook process is run as Qwen runs it, against a control socket
served by a thread. The common mapping is in tests/agents/test_hooks.py."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ptyvisor.agents.activity import FRAME_PAYLOAD, ActivityReport, InteractionReport
from ptyvisor.agents.digest import prompt_digest
from ptyvisor.agents.hooks import claude_code, decide, qwen_code
from ptyvisor.wire import control
from ptyvisor.wire.frames import new_nonce

from ..test_hooks import kinds, read_frames, run_hook, session_env
from .conftest import ControlSocket, Reply, answer
from .payloads import JSON

QUESTIONS = {"questions": [{"question": "Which?", "header": "H", "options": [{"label": "A"}]}]}


def event(name: str, **fields: Any) -> dict[str, Any]:
    """A payload as Qwen Code 0.24 sends it (Claude's fields)."""
    return {"session_id": "qwen-native-1", "hook_event_name": name, **fields}


def mapped(name: str, **fields: Any) -> list[dict[str, Any]]:
    """The frames, each checked against the model ptyvisor reads them with."""
    payloads = qwen_code.map_event(event(name, **fields), 5)
    for payload in payloads:
        FRAME_PAYLOAD.validate_python(payload)
    return payloads


def asked(tool: str, tool_input: object) -> dict[str, Any]:
    (frame,) = mapped("PermissionRequest", tool_name=tool, tool_input=tool_input)
    interaction: dict[str, Any] = frame["interaction"]
    return interaction


@pytest.mark.parametrize(
    ("tool", "title"),
    [
        ("run_shell_command", "Run a shell command"),
        ("edit", "Edit a file"),
        ("write_file", "Write a file"),
        ("notebook_edit", "Edit a notebook"),
        ("web_fetch", "Fetch a web page"),
        # Claude's names are no tools of Qwen's: named as they come.
        ("Bash", "Use Bash"),
        ("AskUserQuestion", "Use AskUserQuestion"),
        ("mcp__db__query", "Use mcp__db__query"),
    ],
)
def test_an_approval_is_titled_by_qwens_tool_name(tool: str, title: str) -> None:
    interaction = asked(tool, {"command": "x"})
    assert (interaction["kind"], interaction["tool"], interaction["title"]) == (
        "approval",
        tool,
        title,
    )
    assert interaction["agent"] == "qwen-code"


def test_an_approval_shows_the_fields_qwen_sends() -> None:
    shell = asked("run_shell_command", {"command": "npm test", "description": "Run tests"})
    assert [(r["label"], r["value"], r["monospace"]) for r in shell["rows"]] == [
        ("Command", "npm test", True),
        ("Description", "Run tests", False),
    ]
    fetch = asked("web_fetch", {"url": "https://example.org", "prompt": "Summarise"})
    assert [(r["label"], r["value"]) for r in fetch["rows"]] == [
        ("URL", "https://example.org"),
        ("Prompt", "Summarise"),
    ]
    # Qwen sends no permission_suggestions: none are offered.
    assert shell["suggestions"] == fetch["suggestions"] == []


def test_its_question_dialog_is_a_question_that_its_answer_clears() -> None:
    """ask_user_question's PostToolUse carries the user's answers, left out of the id,
    so it clears the question it answers."""
    question = asked("ask_user_question", QUESTIONS)
    assert (question["kind"], question["title"]) == ("question", "Qwen Code has a question")
    assert [o["label"] for o in question["questions"][0]["options"]] == ["A"]
    answered = {**QUESTIONS, "answers": {"Which?": "A"}, "annotations": {}}
    done = mapped("PostToolUse", tool_name="ask_user_question", tool_input=answered)
    assert kinds(done) == ["interaction_cleared", "activity:working"]
    assert (done[0]["reason"], done[0]["id"]) == ("answered", question["id"])


@pytest.mark.parametrize("prompt", ["", "  \n\t", None, 0])
def test_a_prompt_submit_without_text_carries_tool_results(prompt: object) -> None:
    """No new prompt: what was asked is over (reason tool_results) and no prompt digest
    confirms anything."""
    cleared, working = mapped("UserPromptSubmit", prompt=prompt)
    assert (cleared["type"], cleared["reason"], "id" in cleared) == (
        "interaction_cleared",
        "tool_results",
        False,
    )
    assert (working["phase"], "prompt" in working) == ("working", False)
    assert mapped("UserPromptSubmit") == [cleared, working]


def test_a_prompt_submit_with_text_is_a_new_prompt() -> None:
    cleared, working = mapped("UserPromptSubmit", prompt=" fix the tests ")
    assert cleared["reason"] == "prompt"
    assert (working["phase"], working["prompt"]) == ("working", prompt_digest("fix the tests"))


def test_only_a_dialog_notification_says_anything() -> None:
    """Its idle_prompt follows every turn's end, a failed one's too: Stop and
    StopFailure have said it, and a failure must not turn into waiting."""
    assert mapped("Notification", notification_type="idle_prompt") == []
    assert mapped("Notification", notification_type="something_new") == []
    for kind in ("permission_prompt", "elicitation_dialog"):
        (frame,) = mapped("Notification", notification_type=kind)
        assert (frame["phase"], frame["reason"], frame["agent"]) == (
            "needs_input",
            kind,
            "qwen-code",
        )
    failed = mapped("StopFailure", error="rate_limit")
    assert [(f["phase"], f["reason"]) for f in failed] == [("failed", "rate_limit")]


def test_every_turn_frame_names_qwen_code_and_its_conversation() -> None:
    turn = [
        *mapped("SessionStart", source="startup"),
        *mapped("UserPromptSubmit", prompt="go"),
        *mapped("PreToolUse", tool_name="run_shell_command"),
        *mapped("Stop"),
        *mapped("SessionEnd", reason="exit"),
    ]
    activity = [f for f in turn if f["type"] == "activity"]
    assert [f["phase"] for f in activity] == ["waiting", "working", "working", "waiting", "stopped"]
    assert {(f["agent"], f["native_session_id"]) for f in activity} == {
        ("qwen-code", "qwen-native-1")
    }


# ------------------------------------------------ the real hook and the control socket


@pytest.fixture
def pty() -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


def hook_under_control(
    control_socket: ControlSocket, pty: tuple[int, int], payload: dict[str, Any]
) -> tuple[bytes, list[dict[str, Any]]]:
    """Run the hook as Qwen does, in a session with the control socket: what it
    printed for Qwen, and the frames it wrote to the terminal."""
    master, slave = pty
    nonce = new_nonce()
    env = {**session_env(slave, nonce), decide.ENV_CONTROL: str(control_socket.path)}
    result = run_hook("qwen-code", payload, env)
    assert (result.returncode, result.stderr) == (0, b"")
    return result.stdout, read_frames(master, "s1", nonce)


def test_the_hook_holds_an_approval_and_answers_as_claude_does(
    serving: Callable[[Reply], ControlSocket], pty: tuple[int, int]
) -> None:
    control_socket = serving(answer(control.Decision("deny", message="not now").line()))
    request = event("PermissionRequest", tool_name="edit", tool_input={"file_path": "/a.py"})
    printed, frames = hook_under_control(control_socket, pty, request)
    (frame,) = frames
    assert frame["interaction"]["title"] == "Edit a file"
    assert json.loads(printed) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "not now"},
        }
    }
    (line,) = control_socket.received
    sent = control.read(json.loads(line), control.Request)
    assert sent.interaction == frame["interaction"], "what was framed is what is asked"


def test_the_hook_leaves_a_question_to_the_terminal(
    serving: Callable[[Reply], ControlSocket], pty: tuple[int, int]
) -> None:
    """Qwen ignores an allow for ask_user_question, so nobody is asked and nothing is
    printed: the question is framed for clients to see, and answered in Qwen."""
    control_socket = serving(answer(control.Decision("allow", answers={"q0": ["A"]}).line()))
    request = event("PermissionRequest", tool_name="ask_user_question", tool_input=QUESTIONS)
    printed, frames = hook_under_control(control_socket, pty, request)
    assert [f["interaction"]["kind"] for f in frames] == ["question"]
    assert (printed, control_socket.received) == (b"", [])


# ------------------------------------------------------------------ untrusted payloads


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(
        ["PermissionRequest", "PostToolUse", "UserPromptSubmit", "Notification", "Stop",
         "StopFailure", "SessionEnd", "SubagentStop", "PreToolUse", "Unknown"]
    ),
    tool=st.sampled_from(["ask_user_question", "run_shell_command", "edit"]) | JSON,
    tool_input=JSON,
    fields=st.dictionaries(
        st.sampled_from(["prompt", "notification_type", "error", "reason", "agent_id",
                         "session_id", "permission_suggestions"]),
        JSON,
    ),
)  # fmt: skip
def test_any_payload_maps_to_valid_frames_of_qwen_code(
    name: str, tool: object, tool_input: object, fields: dict[str, Any]
) -> None:
    """Whatever Qwen (or anything in its place) sends, the frames pass ptyvisor's model
    and speak for qwen-code, never for Claude."""
    fields.update(hook_event_name=name, tool_name=tool, tool_input=tool_input)
    for payload in qwen_code.map_event(fields, 1):
        report = FRAME_PAYLOAD.validate_python(payload)
        if isinstance(report, ActivityReport):
            assert report.agent == "qwen-code"
        elif isinstance(report, InteractionReport):
            assert report.interaction.agent == "qwen-code"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tool=st.sampled_from(["ask_user_question", "run_shell_command"]),
    tool_input=JSON
    | st.dictionaries(st.sampled_from(["questions", "command", "file_path"]), JSON, max_size=3),
    behavior=st.sampled_from(["allow", "deny"]),
    answers=st.none()
    | st.dictionaries(st.sampled_from(["q0", "q1"]), st.lists(st.text()) | st.text()),
)
@example(tool="run_shell_command", tool_input={"command": "x"}, behavior="allow", answers={})
@example(tool="run_shell_command", tool_input=["x"], behavior="allow", answers={"q0": ["A"]})
def test_any_request_and_decision_give_an_answer_or_none(
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    tool_input: object,
    behavior: str,
    answers: dict[str, list[str] | str] | None,
) -> None:
    """The hook prints a valid answer or nothing, never a traceback; a question is
    never put to a client."""
    held: list[dict[str, Any]] = []

    def decided(interaction: dict[str, Any], **_: object) -> control.Decision:
        held.append(interaction)
        return control.Decision(behavior, answers=answers)

    monkeypatch.setattr(claude_code, "request_decision", decided)
    request = event("PermissionRequest", tool_name=tool, tool_input=tool_input)
    result = qwen_code.decide(request, qwen_code.map_event(request, 1))
    if tool == "ask_user_question":
        assert (result, held) == (None, [])
        return
    assert len(held) == 1
    if result is not None:
        assert result["hookSpecificOutput"]["decision"]["behavior"] == behavior
