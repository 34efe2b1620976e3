"""Gemini CLI's hook adapter (hooks/gemini_cli.py) on its own: the transcript read
back for a failed turn (untrusted, possibly huge), the approval's id left between
hooks in the session's home, and the confirmation kinds an approval is made from.
The event mapping's main cases are in tests/agents/test_hooks.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptyvisor.agents.hooks import gemini_cli
from ptyvisor.agents.hooks.normalise import request_digest

from .payloads import JSON


def lines(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_the_last_turn_record_decides_whether_the_turn_failed(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"

    def error_of(text: str) -> str | None:
        transcript.write_text(text)
        return gemini_cli.turn_error(str(transcript))

    user = {"type": "user", "content": "hi"}
    assert error_of(lines(user, {"type": "error", "content": "quota"})) == "quota"
    assert error_of(lines(user, {"type": "error"})) == "error"
    # An error of an earlier turn, then this turn's answer: no failure.
    assert error_of(lines({"type": "error", "content": "old"}, user, {"type": "gemini"})) is None
    # Bookkeeping, hints, garbage and non-objects after the error do not hide it.
    after = ["{not json", "[1, 2]", '"text"', json.dumps({"type": "info"}), "", "{}"]
    assert error_of(lines({"type": "error", "content": "late"}) + "\n".join(after)) == "late"
    assert error_of("") is None


def test_only_the_transcripts_tail_is_read(tmp_path: Path) -> None:
    """A long conversation: the turn's last records are at the end; the tail may
    start in the middle of a record, which is skipped."""
    transcript = tmp_path / "t.jsonl"
    big = {"type": "gemini", "content": "x" * (gemini_cli.TRANSCRIPT_TAIL * 2)}
    transcript.write_text(lines(big, {"type": "error", "content": "at the end"}))
    assert gemini_cli.turn_error(str(transcript)) == "at the end"
    transcript.write_text(lines({"type": "error", "content": "cut off"}, big))
    assert gemini_cli.turn_error(str(transcript)) is None


def test_a_transcript_that_is_not_there_or_not_a_path_is_no_failure(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # read, it would hold the hook (and Gemini, which waits for it)
    for path in (None, "", 42, str(tmp_path / "gone.jsonl"), str(tmp_path), str(fifo)):
        assert gemini_cli.turn_error(path) is None


RECORD = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "gemini", "error", "info"]) | JSON},
    optional={"content": JSON},
).map(json.dumps)
TRANSCRIPT = st.lists(RECORD | st.text(max_size=20), max_size=8).map("\n".join).map(str.encode)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(TRANSCRIPT | st.binary(max_size=200))
def test_any_transcript_gives_text_or_none(tmp_path: Path, content: bytes) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(content)
    error = gemini_cli.turn_error(str(transcript))
    assert error is None or isinstance(error, str)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    return tmp_path


def test_the_approval_left_by_its_notification_is_cleared_by_the_next_after_tool(
    home: Path,
) -> None:
    details = {"type": "exec", "command": "make"}
    event = {"hook_event_name": "Notification", "notification_type": "ToolPermission"}
    (frame,) = gemini_cli.map_event({**event, "details": details}, 2)
    assert frame["interaction"]["id"] == request_digest("run_shell_command", details)
    after = {"hook_event_name": "AfterTool", "tool_name": "run_shell_command"}
    cleared, _ = gemini_cli.map_event({**after, "tool_input": {"command": "make"}}, 3)
    assert cleared["id"] == frame["interaction"]["id"]
    # Whatever else is in that file is no id, and nothing is cleared by it.
    for planted in ("../../etc/passwd", "req-", "req-" + "g" * 24, "req-" + "a" * 25):
        (home / gemini_cli.CALL_FILE).write_text(planted)
        assert gemini_cli.map_event(after, 4) == [
            {"type": "activity", "phase": "working", "at": 4, "agent": "gemini-cli"}
        ]


def test_what_the_session_plants_in_its_home_neither_holds_nor_redirects_the_hook(
    home: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The session's program can write the home: a FIFO there would hold the hook (and
    Gemini, which waits for it), a link would send the id to another file."""
    call = home / gemini_cli.CALL_FILE
    os.mkfifo(call)
    gemini_cli.remember_call(request_digest("t", {}))  # returns: no reader needed
    assert gemini_cli.answered_call() is None  # returns: no writer needed
    call.unlink(missing_ok=True)  # read (nothing) and taken away, or left
    elsewhere = tmp_path_factory.mktemp("user") / "profile"
    elsewhere.write_text("the user's own")
    call.symlink_to(elsewhere)
    gemini_cli.remember_call(request_digest("t", {}))
    assert elsewhere.read_text() == "the user's own"
    assert gemini_cli.answered_call() is None
    call.unlink()
    call.write_text(request_digest("t", {}) + "x" * 10_000_000)  # only the id's length is read
    assert gemini_cli.answered_call() is None


def test_without_a_home_nothing_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    gemini_cli.remember_call(request_digest("t", {}))
    assert gemini_cli.answered_call() is None


def approval(details: dict[str, Any]) -> dict[str, Any]:
    event = {"hook_event_name": "Notification", "notification_type": "ToolPermission"}
    (frame,) = gemini_cli.map_event({**event, "details": details}, 1)
    interaction: dict[str, Any] = frame["interaction"]
    return interaction


def test_each_confirmation_kind_names_its_tool(home: Path) -> None:
    assert approval({"type": "edit", "fileName": "a.py", "fileDiff": "+x"})["tool"] == "edit"
    fetched = approval({"type": "info", "urls": ["https://a", "https://b"], "prompt": "read"})
    assert fetched["tool"] == "web_fetch" and fetched["title"] == "Use web_fetch"
    assert [(r["label"], r["value"]) for r in fetched["rows"]] == [
        ("URL", "https://a\nhttps://b"),
        ("Prompt", "read"),
    ]
    mcp = approval({"type": "mcp", "toolName": "query", "serverName": "db", "title": "Allow?"})
    assert (mcp["tool"], mcp["title"]) == ("query", "Allow?")
    assert mcp["suggestions"] == [] and mcp["kind"] == "approval"


def test_other_notifications_say_nothing_and_details_that_are_no_object_need_input() -> None:
    event = {"hook_event_name": "Notification", "notification_type": "ToolPermission"}
    assert gemini_cli.map_event({**event, "notification_type": "Other"}, 1) == []
    details: object
    for details in ([], "exec", None, {"type": "exit_plan_mode"}):
        (frame,) = gemini_cli.map_event({**event, "details": details}, 1)
        assert (frame["phase"], frame["reason"]) == ("needs_input", "ToolPermission")
