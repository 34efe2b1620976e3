"""GitHub Copilot CLI hook events → activity and interaction frames.

Copilot 1.0's payloads are camelCase (``sessionId``, ``toolName``, ``toolArgs``) and,
but for ``notification``, do not name their event: the plugin ptyvisor passes with
``--plugin-dir`` (agents.launch.copilot_plugin) runs this hook once per event with
the event's name as its argument, and ``__main__`` puts it in ``hook_event_name``.

What says the user is asked (checked against the real TUI, tests/agents/clis/
test_copilot_e2e.py):

- An approval: the ``notification`` of type ``permission_prompt`` ("Run command:
  touch made.txt"), sent as the dialog shows. ``permissionRequest`` is not it: it
  fires for commands Copilot then runs without asking (a read-only ``echo``), so
  reporting it would be a false alarm, and holding it would stall those.
- A question: ``preToolUse`` of the ``ask_user`` tool, whose arguments are an
  elicitation form (``message``, ``requestedSchema.properties``, each property a
  string with an ``enum`` of choices; the user may type another answer).

Neither can be answered from a client: Copilot's hooks that fire for them cannot
answer the dialog they announce. They end with the tool's ``postToolUse`` (or its
failure). A provider error is ``errorOccurred`` with ``errorContext: "model_call"``,
and no ``agentStop`` follows it. ``agentStop`` takes the session's queued message as
Claude's Stop does (the same ``stop_hook_active`` and block answer).
"""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.agents.hooks import normalise
from ptyvisor.agents.hooks.decide import continue_with_queued_message
from ptyvisor.agents.hooks.normalise import Payload, cleared, request_digest, row, rows, submitted
from ptyvisor.wire import cjson

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from typing import Any

AGENT = "copilot"
QUESTION_TOOL = "ask_user"
COMMAND_PREFIX = "Run command: "
"""How the ``permission_prompt`` notification names a shell command (1.0.102)."""
TURN_ERRORS = ("model_call",)
"""``errorContext`` values that end the turn (a tool's error is the model's to handle)."""


def _native(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload with Copilot's ``sessionId`` where `normalise` looks for the id."""
    return {"session_id": event.get("sessionId")}


def activity(phase: str, at: int, event: Mapping[str, Any], reason: str | None = None) -> Payload:
    return normalise.activity(AGENT, phase, at, _native(event), reason)


def map_event(event: Mapping[str, Any], at: int) -> list[Payload]:
    match event.get("hook_event_name"):
        case "userPromptSubmitted":
            prompt = {**_native(event), "prompt": event.get("prompt")}
            return [cleared(at, None, "prompt"), submitted(AGENT, at, prompt)]
        case "preToolUse" if event.get("toolName") == QUESTION_TOOL:
            return [question_frame(event, at)]
        case "preToolUse":
            return [activity("working", at, event)]
        case "postToolUse" | "postToolUseFailure":
            return [cleared(at, None, "answered"), activity("working", at, event)]
        case "notification" | "Notification":
            kind = event.get("notification_type", event.get("notificationType"))
            return [approval_frame(event, at)] if kind == "permission_prompt" else []
        case "errorOccurred":
            return failure(event, at)
        case "agentStop":
            return [activity("waiting", at, event)]
        case "sessionEnd":
            return [activity("stopped", at, event, reason=str(event.get("reason") or ""))]
        case _:
            return []


def approval_frame(event: Mapping[str, Any], at: int) -> Payload:
    """The dialog the notification announces. Its message is all Copilot says: a shell
    command is shown as one, anything else as the request."""
    message = str(event.get("message") or "")
    command = message[len(COMMAND_PREFIX) :] if message.startswith(COMMAND_PREFIX) else None
    tool = "bash" if command is not None else ""
    ident = request_digest("permission", [event.get("sessionId"), event.get("timestamp"), message])
    interaction = normalise.interaction(ident, AGENT, tool, at)
    interaction.update(
        kind="approval",
        title=normalise.text(
            "Run a shell command" if command is not None else event.get("title") or "Permission"
        ),
        rows=rows(
            row("Command", command, monospace=True)
            if command is not None
            else row("Request", message)
        ),
    )
    return {"type": "interaction", "at": at, "interaction": interaction}


def question_frame(event: Mapping[str, Any], at: int) -> Payload:
    """``ask_user``'s form as questions: one per property, its ``enum`` the choices."""
    raw = event.get("toolArgs")
    args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    schema = args.get("requestedSchema")
    found = schema.get("properties") if isinstance(schema, Mapping) else None
    fields: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    message = args.get("message")
    asked = []
    for name, spec in fields.items():
        if not isinstance(spec, Mapping):
            continue
        choices = spec.get("enum")
        labels = spec.get("enumNames") if isinstance(spec.get("enumNames"), list) else choices
        asked.append(
            {
                "id": name,
                "header": spec.get("title") or name,
                "question": message if len(fields) == 1 else spec.get("description") or name,
                "options": [str(label) for label in labels] if isinstance(labels, list) else [],
                "multiSelect": spec.get("type") == "array",
            }
        )
    if not asked:
        asked = [{"question": message}]
    ident = request_digest(QUESTION_TOOL, [event.get("sessionId"), event.get("timestamp"), args])
    interaction = normalise.interaction(ident, AGENT, QUESTION_TOOL, at)
    interaction.update(normalise.question("Copilot has a question", asked))
    return {"type": "interaction", "at": at, "interaction": interaction}


def failure(event: Mapping[str, Any], at: int) -> list[Payload]:
    """A failed model call ends the turn; its message is the provider's error body,
    whose own ``message`` is the part worth showing."""
    if event.get("errorContext") not in TURN_ERRORS:
        return []
    error = event.get("error")
    message = error.get("message") if isinstance(error, Mapping) else error
    reason = str(message or "model call failed")
    try:
        body = cjson.loads(reason)
    except ValueError:
        body = None
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        reason = body["message"]
    return [activity("failed", at, event, reason=reason)]


def decide(event: Mapping[str, Any], frames: list[Payload]) -> Payload | None:
    """For agentStop: hand Copilot the session's queued message, if any."""
    if event.get("hook_event_name") == "agentStop":
        continue_with_queued_message({**event, "session_id": event.get("sessionId")}, AGENT)
    return None
