"""Claude Code hook events → activity and interaction frames.

Rules learned the hard way (see shared anchors), each pinned by a test:
- Subagent events (``agent_id`` set) never end or start the main turn.
- ``Notification`` is weak: it reports ``needs_input`` without an interaction, and
  the tracker keeps a richer pending interaction over it.
- ``Stop`` is a turn end: it clears whatever is pending, stale or not.
- ``PermissionRequest`` has no tool_use_id; its id is a digest of tool name and
  input, which ``PostToolUse`` recomputes to clear exactly that request. For
  ``AskUserQuestion`` the PostToolUse input also carries the user's ``answers`` and
  ``annotations`` (2.1.332), which are left out of the digest.
- Esc fires no hook; ptyvisor infers the interrupt from the keystroke.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ptyvisor.hooks import normalise
from ptyvisor.hooks.normalise import (
    Payload,
    cleared,
    questions,
    request_digest,
    row,
    rows,
    suggestions,
    text,
)

AGENT = "claude-code"
ASK_TOOL = "AskUserQuestion"
ASK_ANSWER_FIELDS = ("answers", "annotations")


def activity(phase: str, at: int, event: Mapping[str, Any], reason: str | None = None) -> Payload:
    return normalise.activity(AGENT, phase, at, event, reason)


def map_event(event: Mapping[str, Any], at: int) -> list[Payload]:
    """The frames one hook invocation sends, in order."""
    name = event.get("hook_event_name")
    subagent = bool(event.get("agent_id"))
    match name:
        case "SessionStart":
            return [activity("waiting", at, event)]
        case "UserPromptSubmit":
            return [cleared(at, None, "prompt"), activity("working", at, event)]
        case "PreToolUse" if not subagent:
            return [activity("working", at, event)]
        case "PermissionRequest":
            return [interaction_frame(event, at)]
        case "PostToolUse" | "PostToolUseFailure":
            tool = str(event.get("tool_name", ""))
            ident = request_digest(tool, _asked_input(tool, event.get("tool_input")))
            frames = [cleared(at, ident, "answered")]
            if not subagent:
                frames.append(activity("working", at, event))
            return frames
        case "Notification":
            kind = str(event.get("notification_type", ""))
            if kind == "idle_prompt":
                return [activity("waiting", at, event)]
            if kind == "permission_prompt" or kind.startswith("elicitation"):
                return [activity("needs_input", at, event, reason=kind)]
            return []
        case "Stop" if not subagent:
            return [activity("waiting", at, event)]
        case "StopFailure":
            error = event.get("error") or "unknown"
            # 2.1.332 sends ``error_details`` (the provider's status and body) when it has
            # them, else only its own ``last_assistant_message``; older builds: message.
            detail = (
                event.get("error_details")
                or event.get("error_message")
                or event.get("message")
                or event.get("last_assistant_message")
            )
            reason = f"{error}: {detail}" if detail else str(error)
            return [activity("failed", at, event, reason=reason)]
        case "SessionEnd":
            if event.get("reason") == "clear":
                return []  # /clear ends one conversation and starts another in place
            return [activity("stopped", at, event, reason=str(event.get("reason") or ""))]
        case _:
            return []


def _asked_input(tool: str, tool_input: object) -> object:
    """The tool input as PermissionRequest saw it: without the answers added since."""
    if tool == ASK_TOOL and isinstance(tool_input, Mapping):
        return {k: v for k, v in tool_input.items() if k not in ASK_ANSWER_FIELDS}
    return tool_input


def interaction_frame(event: Mapping[str, Any], at: int) -> Payload:
    tool = str(event.get("tool_name", ""))
    tool_input = event.get("tool_input")
    fields: Mapping[str, Any] = tool_input if isinstance(tool_input, Mapping) else {}
    interaction: Payload = {
        "id": request_digest(tool, tool_input),
        "agent": AGENT,
        "tool": text(tool, 256),
        "created_at": at,
    }
    if tool == ASK_TOOL:
        interaction.update(
            kind="question",
            title=text("Claude has a question"),
            questions=questions(fields.get("questions")),
            accepts_free_form=True,
        )
    else:
        interaction.update(
            kind="approval",
            title=text(_title(tool)),
            rows=rows(
                row("Command", fields.get("command"), monospace=True),
                row("File", fields.get("file_path") or fields.get("notebook_path"), monospace=True),
                row("URL", fields.get("url"), monospace=True),
                row("Pattern", fields.get("pattern"), monospace=True),
                row("Description", fields.get("description")),
                row("Prompt", fields.get("prompt")),
                row("Input", tool_input, monospace=True) if not _known(fields) else None,
            ),
            suggestions=suggestions(event.get("permission_suggestions")),
        )
    return {"type": "interaction", "at": at, "interaction": interaction}


_KNOWN_FIELDS = ("command", "file_path", "notebook_path", "url", "pattern", "description", "prompt")


def _known(fields: Mapping[str, Any]) -> bool:
    return any(key in fields for key in _KNOWN_FIELDS)


def _title(tool: str) -> str:
    return {
        "Bash": "Run a shell command",
        "Edit": "Edit a file",
        "MultiEdit": "Edit a file",
        "Write": "Write a file",
        "NotebookEdit": "Edit a notebook",
        "WebFetch": "Fetch a web page",
        "WebSearch": "Search the web",
    }.get(tool, f"Use {tool}")
