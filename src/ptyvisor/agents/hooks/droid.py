"""Factory Droid hook events → activity and interaction frames (checked on 0.225.2).

Droid runs Claude Code's hooks (format, payload fields, ``sh -c``, awaited), so
`claude_code` maps them, with Droid's tool names. What differs, from the real TUI
(tests/agents/clis/test_droid_e2e.py):

- There is no ``PermissionRequest``: ``PreToolUse`` comes before Droid decides whether
  to ask (its autonomy level against the command's ``riskLevel``), and a
  ``Notification`` says that it asks — ``permission_prompt`` for an approval,
  ``elicitation_dialog`` for its question tool ``AskUser`` — with a message but not
  the call. The call is in the conversation's transcript (``transcript_path``, one
  JSON record a line), written before its ``PreToolUse``: `pending_call` reads it
  back, and the interaction's id is the digest of tool name and input, which the
  ``PostToolUse`` after the answer recomputes (as Claude's does). A refusal ends the
  turn with ``Stop``, which clears whatever is pending. So launch registers no
  ``PreToolUse``: one hook run per tool call.
- No hook can answer: an allow from ``PreToolUse`` would come before Droid knows
  whether it asks, so every approval would be an alarm. Approvals and questions are
  answered in the terminal.
- A failed turn (the provider's error) ends with a plain ``Stop``; its ``message_id``
  names the record the turn ended on, which is the error notice Droid showed (a
  ``user_only`` text of its own) instead of the model's answer: `turn_error`.
- Esc while the model thinks fires ``Notification`` ``idle_prompt`` and no ``Stop``:
  that is the turn's end (``idle_means_waiting``). Ctrl-C does not interrupt a turn.
- ``AskUser`` takes one text, ``questionnaire``: ``1. [question] Q`` (``(multi)`` at
  its end for several choices), then ``[topic] header`` and ``[option] label``
  lines (`questionnaire`).
"""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.agents.hooks import claude_code, normalise
from ptyvisor.agents.hooks.normalise import MAX_OPTIONS, MAX_QUESTIONS, Payload
from ptyvisor.agents.hooks.transcript import last_records

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from typing import Any

AGENT = "droid"
ASK_TOOL = "AskUser"
TRANSCRIPT_TAIL = 256 * 1024
"""How much of the transcript's end is read: the turn's last records (a tool call's
record holds its whole input, an edit's file content included)."""

DROID = claude_code.Dialect(
    agent=AGENT,
    ask_tool=ASK_TOOL,
    asker="Droid",
    titles={
        "Execute": "Run a shell command",
        "Edit": "Edit a file",
        "MultiEdit": "Edit a file",
        "ApplyPatch": "Edit files",
        "Create": "Write a file",
        "FetchUrl": "Fetch a web page",
        "WebSearch": "Search the web",
    },
    answers_questions=False,
)
ASKS = {"permission_prompt": False, "elicitation_dialog": True}
"""The notifications that mean a dialog shows, and whether it is the question tool's."""


def map_event(event: Mapping[str, Any], at: int) -> list[Payload]:
    """The frames one hook invocation sends, in order."""
    name = event.get("hook_event_name")
    kind = str(event.get("notification_type"))
    if name == "Notification" and kind in ASKS:
        call = pending_call(event.get("transcript_path"), question=ASKS[kind])
        if call is not None:
            tool, tool_input = call
            return [interaction_frame(tool, tool_input, at)]
    elif name == "Stop":
        error = turn_error(event.get("transcript_path"), event.get("message_id"))
        if error is not None:
            return [normalise.activity(AGENT, "failed", at, event, error)]
    return claude_code.map_event(event, at, DROID)


def decide(event: Mapping[str, Any], frames: list[Payload]) -> Payload | None:
    """At the end of a turn that did not fail: hand Droid the queued message, if any."""
    if any(f.get("phase") == "failed" for f in frames):
        return None
    return claude_code.decide(event, frames, DROID)


def interaction_frame(tool: str, tool_input: object, at: int) -> Payload:
    """The dialog Droid shows for this call, with Claude's id (so the call's
    PostToolUse clears it); the question tool's text read as its questions."""
    if tool != ASK_TOOL:
        fields = tool_input if isinstance(tool_input, Mapping) else {}
        event = {"tool_name": tool, "tool_input": tool_input}
        frame = claude_code.interaction_frame(event, at, DROID)
        why = normalise.row("Why", fields.get("riskLevelReason"))
        if why is not None:
            frame["interaction"]["rows"] = normalise.rows(*frame["interaction"]["rows"], why)
        return frame
    raw = tool_input.get("questionnaire") if isinstance(tool_input, Mapping) else None
    interaction = normalise.interaction(normalise.request_digest(tool, tool_input), AGENT, tool, at)
    interaction.update(normalise.question("Droid has a question", questionnaire(raw)))
    return {"type": "interaction", "at": at, "interaction": interaction}


QUESTION = "[question]"
MULTI = "(multi)"


def _asked(line: str) -> str | None:
    """The question of a ``N. [question] text`` line (no ``re``: its import costs a
    hook run milliseconds)."""
    number, dot, rest = line.partition(".")
    rest = rest.lstrip()
    if not (number.isdigit() and dot and rest.startswith(QUESTION)):
        return None
    return rest.removeprefix(QUESTION).strip()


def questionnaire(raw: object) -> list[dict[str, Any]]:
    """``AskUser``'s text as questions in Claude's shape (what `normalise.questions`
    reads); lines it does not know are skipped, as Droid rejects them."""
    found: list[dict[str, Any]] = []
    if not isinstance(raw, str):
        return found
    for raw_line in raw.splitlines():
        line = raw_line.strip()
        asked = _asked(line)
        if asked is not None:
            if len(found) == MAX_QUESTIONS:
                break
            multi = asked.endswith(MULTI)
            asked = asked.removesuffix(MULTI).rstrip() if multi else asked
            found.append({"question": asked, "options": [], "multiSelect": multi})
        elif found and line.startswith("[topic]"):
            found[-1]["header"] = line.removeprefix("[topic]").strip()
        elif found and line.startswith("[option]"):
            options = found[-1]["options"]
            if len(options) < MAX_OPTIONS:
                options.append({"label": line.removeprefix("[option]").strip()})
    return found


def _message(record: Mapping[str, Any]) -> Mapping[str, Any]:
    message = record.get("message") if record.get("type") == "message" else None
    return message if isinstance(message, Mapping) else {}


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def pending_call(transcript: object, *, question: bool) -> tuple[str, object] | None:
    """The tool call the dialog is for: the latest call with no result yet, the
    question tool's or (``question`` off) any other's; None if none is found."""
    answered: set[object] = set()
    for record in reversed(last_records(transcript, TRANSCRIPT_TAIL)):
        message = _message(record)
        for block in reversed(_blocks(message)):
            if block.get("type") == "tool_result":
                answered.add(block.get("tool_use_id"))
            elif block.get("type") == "tool_use" and block.get("id") not in answered:
                tool = str(block.get("name", ""))
                if (tool == ASK_TOOL) == question:
                    return tool, block.get("input")
    return None


def turn_error(transcript: object, message_id: object) -> str | None:
    """The error notice the turn ended on, if its last record (``message_id``) is
    one: a ``user_only`` text Droid wrote, not a hook's record nor the user's."""
    if not isinstance(message_id, str) or not message_id:
        return None
    for record in reversed(last_records(transcript, TRANSCRIPT_TAIL)):
        if record.get("id") != message_id:
            continue
        message = _message(record)
        if (
            message.get("role") != "user"
            or message.get("visibility") != "user_only"
            or "hookEventName" in message
        ):
            return None
        texts = [str(b.get("text", "")) for b in _blocks(message) if b.get("type") == "text"]
        notice = "\n".join(t for t in texts if t).strip()
        return notice or None
    return None
