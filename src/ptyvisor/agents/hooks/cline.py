"""Cline CLI hook events → activity and interaction frames (checked on 3.0.65).

Cline runs one file per event from each of its hooks folders (launch.cline_dir puts
ours in the session's), the payload on stdin. Its payloads name the hook
(``hookName``: ``agent_start`` …) rather than the event, so each event's file passes
the event's name, and the session's id is ``sessionContext.rootSessionId`` (what
``cline --id`` resumes). What the real TUI does (tests/agents/clis/test_cline_e2e.py):

- ``TaskStart`` starts every turn, or ``TaskResume`` in a resumed TUI; neither carries
  the prompt, and ``UserPromptSubmit`` never fires. Cline writes the prompt it takes
  to its input history (``<data dir>/cache/user_input_history.jsonl``, the newest
  last) before the turn starts, so the turn's report reads it back from there to
  confirm a ``prompt`` request (`submitted_prompt`).
- No hook says that Cline asks for an approval: ``PreToolUse`` comes before it
  decides (auto-approve is on by default and covers every call). So ``PreToolUse``
  sends the approval its dialog would show, marked ``on_screen``: the session shows
  it only once Cline draws "Cline needs permission" (activity.DialogHold). The call's
  ``PostToolUse`` clears it by id, whether the user approved or denied it.
- Its question tool, ``ask_question``, always shows its dialog: that one is pending
  from ``PreToolUse``.
- ``TaskComplete`` ends a turn, ``TaskError`` a failed one (the provider's error in
  ``error.message``); Esc during a turn fires ``SessionShutdown`` with the TUI still
  open, and no ``TaskCancel``.
- Only ``PreToolUse`` and ``PostToolUse`` are awaited; the others run detached, so
  nothing can be handed back at a turn's end (no queued message), and no hook can
  answer a dialog: both are answered in the terminal.
"""

from __future__ import annotations

import os
from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.agents.hooks import normalise
from ptyvisor.agents.hooks.normalise import Payload, cleared, request_digest, row, rows
from ptyvisor.agents.hooks.transcript import last_records

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from typing import Any

AGENT = "cline"
QUESTION_TOOL = "ask_question"
HISTORY = ("cache", "user_input_history.jsonl")
"""Cline's input history under its data dir: its last 20 prompts, one JSON object a
line (``{"prompt", "ts"}``), rewritten whole as each prompt is submitted."""
HISTORY_TAIL = 256 * 1024
TITLES = {
    "run_commands": "Run shell commands",
    "editor": "Edit a file",
    "read_files": "Read files",
    "fetch_web_content": "Fetch web pages",
    "search_codebase": "Search the code",
}


def _native(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload with Cline's session id where `normalise` looks for it."""
    context = event.get("sessionContext")
    root = context.get("rootSessionId") if isinstance(context, Mapping) else None
    return {"session_id": root}


def activity(phase: str, at: int, event: Mapping[str, Any], reason: str | None = None) -> Payload:
    return normalise.activity(AGENT, phase, at, _native(event), reason)


def map_event(event: Mapping[str, Any], at: int) -> list[Payload]:
    """The frames one hook invocation sends, in order."""
    match event.get("hook_event_name"):
        case "TaskStart" | "TaskResume":
            prompt = submitted_prompt(os.environ.get("CLINE_DATA_DIR"))
            taken = {**_native(event), "prompt": prompt}
            return [cleared(at, None, "prompt"), normalise.submitted(AGENT, at, taken)]
        case "PreToolUse":
            return [call_frame(event, at)]
        case "PostToolUse":
            call = _call(event)
            ident = request_digest(*call) if call is not None else None
            return [cleared(at, ident, "answered"), activity("working", at, event)]
        case "TaskComplete" | "TaskCancel" | "SessionShutdown":
            return [activity("waiting", at, event)]
        case "TaskError":
            error = event.get("error")
            message = error.get("message") if isinstance(error, Mapping) else error
            return [activity("failed", at, event, reason=str(message or "the turn failed"))]
        case _:
            return []


def _call(event: Mapping[str, Any]) -> tuple[str, object] | None:
    """The tool call a ``PreToolUse`` or ``PostToolUse`` is about: its name and input."""
    key = "tool_call" if event.get("hook_event_name") == "PreToolUse" else "tool_result"
    call = event.get(key)
    if not isinstance(call, Mapping):
        return None
    return str(call.get("name", "")), call.get("input")


def call_frame(event: Mapping[str, Any], at: int) -> Payload:
    """The dialog this call may show: the question tool's always shows; an approval
    only if Cline asks (``on_screen``). Its id is the digest of tool and input, which
    the call's ``PostToolUse`` recomputes."""
    tool, tool_input = _call(event) or ("", None)
    fields: Mapping[str, Any] = tool_input if isinstance(tool_input, Mapping) else {}
    interaction = normalise.interaction(request_digest(tool, tool_input), AGENT, tool, at)
    frame: Payload = {"type": "interaction", "at": at, "interaction": interaction}
    if tool == QUESTION_TOOL:
        asked = {"question": fields.get("question"), "options": fields.get("options")}
        interaction.update(normalise.question("Cline has a question", [asked]))
        return frame
    commands = fields.get("commands")
    command = "\n".join(str(c) for c in commands) if isinstance(commands, list) else None
    interaction.update(
        kind="approval",
        title=normalise.text(TITLES.get(tool, f"Use {tool}")),
        rows=rows(
            row("Command", command, monospace=True),
            row("File", fields.get("path") or fields.get("file_path"), monospace=True),
            None if command is not None else row("Input", tool_input, monospace=True),
        ),
    )
    frame["on_screen"] = True
    return frame


def submitted_prompt(data_dir: str | None) -> str | None:
    """The prompt Cline took last: its input history's newest entry (None if there is
    no such file or entry). The data dir is the session's, so the file is untrusted:
    `last_records` reads a bounded tail of a regular file only."""
    if not data_dir:
        return None
    records = last_records(os.path.join(data_dir, *HISTORY), HISTORY_TAIL)
    prompt = records[-1].get("prompt") if records else None
    return prompt if isinstance(prompt, str) else None
