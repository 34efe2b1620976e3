"""Claude Code hook events → activity and interaction frames.

Rules learned the hard way (see shared anchors), each pinned by a test:
- Subagent events (``agent_id`` set) never end or start the main turn. A subagent's
  request carries its ``agent_id`` (frame and control request), and its
  ``SubagentStop`` (same ``agent_id``, 2.1.332) sends ``subagent_stopped``, which
  ends that subagent's own requests only.
- ``Notification`` is weak: it reports ``needs_input`` without an interaction, and
  the tracker keeps a richer pending interaction over it.
- ``Stop`` is a turn end: it clears whatever the main thread has pending, stale or
  not. A subagent's request outlives it: 2.1.332 runs every subagent in the
  background (the Stop payload lists them in ``background_tasks``).
- ``PermissionRequest`` has no tool_use_id; its id is a digest of tool name and
  input, which ``PostToolUse`` recomputes to clear exactly that request. For
  ``AskUserQuestion`` the PostToolUse input also carries the user's ``answers`` and
  ``annotations`` (2.1.332), which are left out of the digest.
- Esc fires no hook; ptyvisor infers the interrupt from the keystroke.
- ``PermissionRequest`` then holds on the control socket (`decide`) for a client's
  decision and answers Claude natively; with no decision it prints nothing.

Qwen Code sends the same events with the same payloads and reads the same answers,
so `qwen_code` maps them with this module, through a `Dialect` (its agent name,
tool names, and which requests its hook can answer).
"""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.agents.hooks import normalise
from ptyvisor.agents.hooks.decide import continue_with_queued_message, request_decision
from ptyvisor.agents.hooks.normalise import (
    MAX_OPTIONS,
    MAX_QUESTIONS,
    Payload,
    cleared,
    request_digest,
    row,
    rows,
    submitted,
    suggestion_sources,
    suggestions,
    text,
)
from ptyvisor.wire.control import Decision

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

AGENT = "claude-code"
ASK_TOOL = "AskUserQuestion"
ASK_ANSWER_FIELDS = ("answers", "annotations")
DEFAULT_DENY_MESSAGE = "Denied from ptyvisor"


class Dialect:
    """What differs between agents that speak Claude Code's hook protocol. A plain
    slotted class: ``dataclasses`` costs 15 ms of import on every hook run.

    ``asker``: who asks, in a question's title. ``titles``: an approval's title per
    tool name (else ``Use <tool>``). ``answers_questions``: whether an allow from the
    hook can carry a question's answers. ``submits_tool_results``: whether
    ``UserPromptSubmit`` also fires, with an empty ``prompt``, for the model request
    that carries tool results: that one is no new prompt (reason ``tool_results``: what
    the main thread asked is over, a queued message stays). ``idle_means_waiting``:
    whether an ``idle_prompt`` notification reports ``waiting`` (else it is left to
    Stop / StopFailure, which already ended the turn). ``asks_before_pre_tool_use``:
    whether the approval comes before ``PreToolUse`` (Qwen) rather than after it
    (Claude): then ``PreToolUse`` clears the approval its call had, as soon as the
    tool starts, and ``PostToolUse`` is needed for questions only (`launch`
    registers it for the ask tool alone: a hook fewer per tool call)."""

    __slots__ = (
        "agent",
        "answers_questions",
        "ask_tool",
        "asker",
        "asks_before_pre_tool_use",
        "idle_means_waiting",
        "submits_tool_results",
        "titles",
    )

    def __init__(
        self,
        *,
        agent: str,
        ask_tool: str,
        asker: str,
        titles: Mapping[str, str] | None = None,
        answers_questions: bool = True,
        submits_tool_results: bool = False,
        idle_means_waiting: bool = True,
        asks_before_pre_tool_use: bool = False,
    ) -> None:
        self.agent, self.ask_tool, self.asker = agent, ask_tool, asker
        self.titles: Mapping[str, str] = titles or {}
        self.answers_questions = answers_questions
        self.submits_tool_results = submits_tool_results
        self.idle_means_waiting = idle_means_waiting
        self.asks_before_pre_tool_use = asks_before_pre_tool_use


CLAUDE = Dialect(
    agent=AGENT,
    ask_tool=ASK_TOOL,
    asker="Claude",
    titles={
        "Bash": "Run a shell command",
        "Edit": "Edit a file",
        "MultiEdit": "Edit a file",
        "Write": "Write a file",
        "NotebookEdit": "Edit a notebook",
        "WebFetch": "Fetch a web page",
        "WebSearch": "Search the web",
    },
)


def map_event(event: Mapping[str, Any], at: int, dialect: Dialect = CLAUDE) -> list[Payload]:
    """The frames one hook invocation sends, in order."""
    name = event.get("hook_event_name")
    agent_id = normalise.subagent(event)
    subagent = agent_id is not None

    def activity(phase: str, reason: str | None = None) -> Payload:
        return normalise.activity(dialect.agent, phase, at, event, reason)

    match name:
        case "SessionStart":
            return [activity("waiting")]
        case "UserPromptSubmit":
            continued = dialect.submits_tool_results and not str(event.get("prompt") or "").strip()
            return [
                cleared(at, None, "tool_results" if continued else "prompt"),
                activity("working") if continued else submitted(dialect.agent, at, event),
            ]
        case "PreToolUse" if dialect.asks_before_pre_tool_use and not _asks(event, dialect):
            return _call_answered(event, at, dialect, activity)
        case "PreToolUse" if not subagent:
            return [activity("working")]
        case "PermissionRequest":
            return [interaction_frame(event, at, dialect)]
        case "PostToolUse" | "PostToolUseFailure":
            return _call_answered(event, at, dialect, activity)
        case "Notification":
            kind = str(event.get("notification_type", ""))
            if kind == "idle_prompt":
                return [activity("waiting")] if dialect.idle_means_waiting else []
            if kind == "permission_prompt" or kind.startswith("elicitation"):
                return [activity("needs_input", reason=kind)]
            return []
        case "Stop" if not subagent:
            return [activity("waiting")]
        case "SubagentStop" if agent_id is not None:
            return [{"type": "subagent_stopped", "at": at, "agent_id": agent_id}]
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
            return [activity("failed", reason=reason)]
        case "SessionEnd":
            if event.get("reason") == "clear":
                return []  # /clear ends one conversation and starts another in place
            return [activity("stopped", reason=str(event.get("reason") or ""))]
        case _:
            return []


def _asks(event: Mapping[str, Any], dialect: Dialect) -> bool:
    """The call is the question tool, whose dialog shows while it runs."""
    return event.get("tool_name") == dialect.ask_tool


def _call_answered(
    event: Mapping[str, Any], at: int, dialect: Dialect, activity: Callable[[str], Payload]
) -> list[Payload]:
    """The call's approval or question is over (by its digest) and, in the main
    thread, the agent works on."""
    tool = str(event.get("tool_name", ""))
    ident = request_digest(tool, _asked_input(tool, event.get("tool_input"), dialect))
    frames = [cleared(at, ident, "answered")]
    if normalise.subagent(event) is None:
        frames.append(activity("working"))
    return frames


def _asked_input(tool: str, tool_input: object, dialect: Dialect) -> object:
    """The tool input as PermissionRequest saw it: without the answers added since."""
    if tool == dialect.ask_tool and isinstance(tool_input, Mapping):
        return {k: v for k, v in tool_input.items() if k not in ASK_ANSWER_FIELDS}
    return tool_input


def interaction_frame(event: Mapping[str, Any], at: int, dialect: Dialect = CLAUDE) -> Payload:
    tool = str(event.get("tool_name", ""))
    tool_input = event.get("tool_input")
    fields: Mapping[str, Any] = tool_input if isinstance(tool_input, Mapping) else {}
    interaction = normalise.interaction(request_digest(tool, tool_input), dialect.agent, tool, at)
    if tool == dialect.ask_tool:
        title = f"{dialect.asker} has a question"
        interaction.update(normalise.question(title, fields.get("questions")))
    else:
        interaction.update(
            kind="approval",
            title=text(dialect.titles.get(tool, f"Use {tool}")),
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
    frame: Payload = {"type": "interaction", "at": at, "interaction": interaction}
    agent_id = normalise.subagent(event)
    if agent_id is not None:
        frame["agent_id"] = agent_id
    return frame


_KNOWN_FIELDS = ("command", "file_path", "notebook_path", "url", "pattern", "description", "prompt")


def _known(fields: Mapping[str, Any]) -> bool:
    return any(key in fields for key in _KNOWN_FIELDS)


# --------------------------------------------------------------------------- answering


def decide(
    event: Mapping[str, Any], frames: list[Payload], dialect: Dialect = CLAUDE
) -> Payload | None:
    """For a PermissionRequest: wait for a client's decision on the control socket and
    return Claude's native answer, or None (print nothing: Claude shows its prompt).
    For the main turn's Stop: hand Claude the session's queued message, if any."""
    if event.get("hook_event_name") == "Stop":
        continue_with_queued_message(event, dialect.agent)
        return None
    if event.get("hook_event_name") != "PermissionRequest":
        return None
    framed = [f for f in frames if f.get("type") == "interaction"]
    if not framed:
        return None
    if not dialect.answers_questions and framed[0]["interaction"].get("kind") != "approval":
        return None  # not held: the agent would ignore the answers
    decision = request_decision(framed[0]["interaction"], agent_id=framed[0].get("agent_id"))
    return native_answer(event, decision) if decision is not None else None


def native_answer(event: Mapping[str, Any], decision: Decision) -> Payload | None:
    """Claude Code's PermissionRequest hook output for ``decision``.

    Verified against shared/agents.md (observed on Claude Code 2.1.197/2.1.332): the
    hook prints ``{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
    "decision": {...}}}`` and exits 0; the decision is ``{"behavior": "allow"}``,
    optionally with ``updatedPermissions`` / ``updatedInput``, or ``{"behavior":
    "deny", "message": ...}``; an allow of AskUserQuestion carries the answers in
    ``updatedInput``. The ``answers`` form — question text → chosen label — is the
    one Claude itself puts in the PostToolUse input (pinned in test_hooks.py); several
    labels of a multi-select question are joined with ``", "``, as Claude's own input
    schema joins a list of labels (2.1.332; the model then gets ``"Q"="A, C"``, pinned
    against the real TUI in tests/agents/clis/test_claude_code_answers.py).

    The decision's suggestion index and labels refer to the masked interaction; they
    are mapped back, by position, to the raw payload, which never left this process.
    """
    if decision.behavior == "deny":
        verdict: Payload = {
            "behavior": "deny",
            "message": decision.message or DEFAULT_DENY_MESSAGE,
        }
    else:
        verdict = {"behavior": "allow"}
        index = decision.suggestion
        if index is not None:
            sources = suggestion_sources(event.get("permission_suggestions"))
            if not 0 <= index < len(sources):
                return None
            verdict["updatedPermissions"] = [sources[index][1]]
        chosen = decision.answers
        if chosen is not None:
            tool_input = event.get("tool_input")
            if not isinstance(tool_input, Mapping):
                return None
            answers = _native_answers(tool_input.get("questions"), chosen)
            if answers is None:
                return None
            verdict["updatedInput"] = {**tool_input, "answers": answers}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": verdict}}


def _native_answers(raw: object, chosen: Mapping[str, Any]) -> dict[str, str] | None:
    """Per raw question text, the raw label(s) or the free text; None if anything is off."""
    if not isinstance(raw, list):
        return None
    answers: dict[str, str] = {}
    for index, item in enumerate(raw[:MAX_QUESTIONS]):
        if not isinstance(item, Mapping):
            continue
        ident = text(item.get("id") or f"q{index}", 256)
        if ident not in chosen:
            continue
        answer = chosen[ident]
        if isinstance(answer, str):
            answers[str(item.get("question", ""))] = answer
            continue
        raw_labels: dict[str, str] = {}
        for option in (item.get("options") or [])[:MAX_OPTIONS]:
            label = option.get("label") if isinstance(option, Mapping) else option
            if isinstance(label, str):
                raw_labels.setdefault(text(label), label)
        try:
            picked = [raw_labels[label] for label in answer]
        except KeyError:
            return None
        answers[str(item.get("question", ""))] = ", ".join(picked)
    return answers
