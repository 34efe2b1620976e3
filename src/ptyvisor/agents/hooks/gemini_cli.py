"""Gemini CLI hook events → activity and interaction frames (checked on 0.61.0).

What its hooks can and cannot do, from the bundled source and the real TUI:
- ``SessionStart`` fires as the TUI comes up (Ready); ``SessionEnd`` as it quits, and
  around ``/clear`` (reason ``clear``: one conversation ends, another starts in place).
- ``BeforeAgent`` carries the prompt; ``AfterAgent`` ends the turn, also a failed
  one: a failure is not in the payload (``prompt_response`` is a placeholder), but
  the TUI has just written it to the session's transcript as an ``error`` record,
  which `turn_error` reads back.
- ``BeforeTool`` fires for every tool call, before the policy decides whether to ask;
  its answers are deny/block or "ask", never "allow", so no hook can grant an
  approval: approvals are typed in the TUI only (the interaction is not answerable).
- ``Notification`` (``ToolPermission``) announces the confirmation dialog with its
  details (command, file, MCP tool, URLs) but no tool name, input or call id; the
  interaction's id is the digest of those details, left in the session's home
  (`remember_call`). Gemini's scheduler (0.61: ``_processNextItem``) takes a call
  that may ask on its own, one after another, and executes a batch only once every
  call in it is approved or refused, so the next ``AfterTool`` means no dialog is
  up: it clears the id left there, exactly that request — never an id-less clear,
  which means "a new prompt" and would drop a queued message.
- ``ask_user`` (its question tool) always asks, and only its input has the questions:
  its ``BeforeTool`` raises the question, its ``AfterTool`` clears it. No other call
  needs ``BeforeTool`` (the turn is ``working`` since ``BeforeAgent``), so launch
  registers it for ``ask_user`` only (`launch.GEMINI_MATCHERS`): one hook run per
  tool call, not two.
- ``AfterAgent`` may refuse the stop like Claude's Stop hook (``{"decision": "block",
  "reason": text}``, the reason becomes the next request): the queued message.
"""

from __future__ import annotations

import os
from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.agents.hooks import normalise
from ptyvisor.agents.hooks.decide import continue_with_queued_message
from ptyvisor.agents.hooks.normalise import (
    Payload,
    cleared,
    request_digest,
    row,
    rows,
    submitted,
    text,
)
from ptyvisor.agents.hooks.transcript import last_records

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from typing import Any

AGENT = "gemini-cli"
TRANSCRIPT_TAIL = 64 * 1024
"""How much of the transcript's end `turn_error` reads: the turn's last records."""
CALL_FILE = "ptyvisor-tool-call"
"""In the session's ``GEMINI_CLI_HOME``: the id of the approval whose dialog shows."""
ASK_TOOL = "ask_user"
TOOLS = {
    "exec": "run_shell_command",
    "sandbox_expansion": "run_shell_command",
    "edit": "edit",
    "info": "web_fetch",
}
"""The tool behind each confirmation kind (MCP confirmations name their own)."""


def activity(phase: str, at: int, event: Mapping[str, Any], reason: str | None = None) -> Payload:
    return normalise.activity(AGENT, phase, at, event, reason)


def map_event(event: Mapping[str, Any], at: int) -> list[Payload]:
    """The frames one hook invocation sends, in order."""
    match event.get("hook_event_name"):
        case "SessionStart":
            return [activity("waiting", at, event)]
        case "BeforeAgent":
            return [cleared(at, None, "prompt"), submitted(AGENT, at, event)]
        case "BeforeTool" if event.get("tool_name") == ASK_TOOL:
            return [question_frame(event, at)]
        case "BeforeTool":
            return [activity("working", at, event)]  # registered for ask_user only
        case "AfterTool":
            asked = _call_digest(event) if event.get("tool_name") == ASK_TOOL else answered_call()
            done = [cleared(at, asked, "answered")] if asked else []
            return [*done, activity("working", at, event)]
        case "Notification":
            details = event.get("details")
            if event.get("notification_type") != "ToolPermission":
                return []
            if isinstance(details, Mapping) and details.get("type") == ASK_TOOL:
                return []  # the question is pending since its BeforeTool
            if not isinstance(details, Mapping) or details.get("type") not in (*TOOLS, "mcp"):
                return [activity("needs_input", at, event, reason="ToolPermission")]
            return [interaction_frame(details, at)]
        case "AfterAgent":
            error = turn_error(event.get("transcript_path"))
            if error is not None:
                return [activity("failed", at, event, reason=error)]
            return [activity("waiting", at, event)]
        case "SessionEnd":
            if event.get("reason") == "clear":
                return []
            return [activity("stopped", at, event, reason=str(event.get("reason") or ""))]
        case _:
            return []


def _call_digest(event: Mapping[str, Any]) -> str:
    return request_digest(str(event.get("tool_name", "")), event.get("tool_input"))


def _call_file() -> str | None:
    """Where Notification leaves its approval's id (a path as text: pathlib costs a
    hook run 4 ms of import)."""
    home = os.environ.get("GEMINI_CLI_HOME")
    return os.path.join(home, CALL_FILE) if home else None


CALL_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""The session's program can write its home: a link there is not followed and a FIFO
does not hold the hook (which Gemini waits for)."""


def remember_call(ident: str) -> None:
    path = _call_file()
    if path is None:
        return
    try:  # not contextlib.suppress: contextlib imports collections (2 ms a hook run)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | CALL_FILE_FLAGS, 0o600)
        try:
            os.write(fd, ident.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def answered_call() -> str | None:
    """The id `remember_call` left, taken away: the dialog it names is over. Only the
    id's length is read: whatever else is there is no id."""
    path = _call_file()
    try:
        if path is None:
            return None
        fd = os.open(path, os.O_RDONLY | CALL_FILE_FLAGS)
        try:
            ident = os.read(fd, 64).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        os.unlink(path)
    except OSError:
        return None
    return ident if normalise.is_request_id(ident) else None


def question_frame(event: Mapping[str, Any], at: int) -> Payload:
    """``ask_user`` always asks; its questions are in the call's input only (the
    ToolPermission details leave them out), so its BeforeTool raises the question."""
    tool_input = event.get("tool_input")
    fields: Mapping[str, Any] = tool_input if isinstance(tool_input, Mapping) else {}
    interaction = normalise.interaction(_call_digest(event), AGENT, ASK_TOOL, at)
    interaction.update(normalise.question("Gemini has a question", fields.get("questions")))
    return {"type": "interaction", "at": at, "interaction": interaction}


def interaction_frame(details: Mapping[str, Any], at: int) -> Payload:
    """The confirmation dialog Gemini is about to show, as an approval; its id is left
    for the ``AfterTool`` that follows the answer (`remember_call`)."""
    kind = str(details.get("type"))
    tool = str(details.get("toolName") or "") if kind == "mcp" else TOOLS[kind]
    urls = details.get("urls")
    ident = request_digest(tool, dict(details))
    remember_call(ident)
    interaction = normalise.interaction(ident, AGENT, tool, at)
    interaction.update(
        kind="approval",
        title=text(details.get("title") or f"Use {tool}"),
        rows=rows(
            row("Command", details.get("command"), monospace=True),
            row("File", details.get("filePath") or details.get("fileName"), monospace=True),
            row("Diff", details.get("fileDiff"), monospace=True),
            row("Server", details.get("serverName")),
            row("URL", "\n".join(map(str, urls)) if isinstance(urls, list) else None),
            row("Prompt", details.get("prompt")),
        ),
        suggestions=[],
    )
    return {"type": "interaction", "at": at, "interaction": interaction}


def turn_error(transcript: object) -> str | None:
    """The error the turn just ended with, if its transcript's last record is one.

    Gemini appends one JSON record a line; the turn's messages are ``user``,
    ``gemini`` (answers, tool calls) or ``error`` / ``info`` (what the TUI showed),
    the rest bookkeeping (``$set``). The last ``user``/``gemini``/``error`` record
    decides; an ``info`` after an error is its hint and does not."""
    for record in reversed(last_records(transcript, TRANSCRIPT_TAIL)):
        kind = record.get("type")
        if kind in ("user", "gemini"):
            return None
        if kind == "error":
            content = record.get("content")
            return str(content) if content else "error"
    return None


def decide(event: Mapping[str, Any], frames: list[Payload]) -> Payload | None:
    """At the end of a turn that did not fail: hand Gemini the queued message, if any."""
    if event.get("hook_event_name") == "AfterAgent" and not any(
        f.get("phase") == "failed" for f in frames
    ):
        continue_with_queued_message(event, AGENT)
    return None
