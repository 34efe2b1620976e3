"""Turn raw hook payload pieces into the bounded, masked interaction contract."""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.agents.digest import hex_digest, prompt_digest
from ptyvisor.wire import cjson
from ptyvisor.wire.frame_encoding import encode_frame

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from typing import Any

MAX_TEXT = 4000
MAX_QUESTIONS = 8
MAX_OPTIONS = 16
MAX_SUGGESTIONS = 16
MAX_ROWS = 16

if TYPE_CHECKING:
    Payload = dict[str, Any]
else:
    Payload = dict


def text(value: object, limit: int = MAX_TEXT) -> str:
    """Any value as masked text, masked *before* truncating so no secret is cut in half
    and left readable."""
    if value is None:
        return ""
    raw = value if isinstance(value, str) else cjson.dumps(value, ensure_ascii=False)
    # Mask a margin beyond what is kept, so a secret that straddles the cut is still
    # recognised, without paying for megabytes nobody will see.
    from ptyvisor.agents.masking import mask  # its patterns load re: only for text

    masked = mask(raw[: limit + 512])
    return masked if len(masked) <= limit else masked[: limit - 1] + "…"


def activity(
    agent: str, phase: str, at: int, event: Mapping[str, Any], reason: str | None = None
) -> Payload:
    """An activity frame payload; the agent's own session id rides along for resume."""
    payload: Payload = {"type": "activity", "phase": phase, "at": at, "agent": agent}
    native = event.get("session_id")
    if isinstance(native, str) and native:
        payload["native_session_id"] = native[:256]
    if reason:
        payload["reason"] = text(reason)
    return payload


def submitted(agent: str, at: int, event: Mapping[str, Any]) -> Payload:
    """``working`` for a prompt the agent took, with the prompt's digest: a client that
    typed it (the ``prompt`` request) learns that it was taken."""
    payload = activity(agent, "working", at, event)
    prompt = event.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        payload["prompt"] = prompt_digest(prompt)
    return payload


def subagent(event: Mapping[str, Any]) -> str | None:
    """The id of the subagent a hook fired in (Claude Code's ``agent_id``), or None for
    the main thread; the same text wherever it is sent, so ids compare equal."""
    agent_id = event.get("agent_id")
    return text(agent_id, 256) if isinstance(agent_id, str) and agent_id else None


def cleared(at: int, ident: str | None, reason: str) -> Payload:
    """An interaction_cleared payload; no id means whatever is pending."""
    payload: Payload = {"type": "interaction_cleared", "at": at, "reason": reason}
    if ident:
        payload["id"] = ident
    return payload


def request_digest(tool: str, tool_input: object) -> str:
    """A stable id for a request without one: tool name + canonical input, hashed so
    the input itself is not kept."""
    canonical = cjson.dumps(tool_input, sort_keys=True, separators=(",", ":"), default=str)
    return "req-" + hex_digest(f"{tool}\0{canonical}".encode())[:24]


def is_request_id(ident: str) -> bool:
    """``ident`` has `request_digest`'s shape (an id read back from a file the
    session's program could write)."""
    digits = ident[4:]
    return ident[:4] == "req-" and len(digits) == 24 and digits.strip("0123456789abcdef") == ""


def interaction(ident: str, agent: str, tool: str, at: int) -> Payload:
    """The fields every interaction has; the caller adds ``question`` or approval ones."""
    return {"id": ident, "agent": agent, "tool": text(tool, 256), "created_at": at}


def question(title: str, raw_questions: object) -> Payload:
    """The fields of a question interaction (the agents' question tools take free text)."""
    return {
        "kind": "question",
        "title": text(title),
        "questions": questions(raw_questions),
        "accepts_free_form": True,
    }


def row(label: str, value: object, *, monospace: bool = False) -> Payload | None:
    rendered = text(value)
    if not rendered:
        return None
    return {"label": label[:64], "value": rendered, "monospace": monospace}


def rows(*candidates: Payload | None) -> list[Payload]:
    return [r for r in candidates if r is not None][:MAX_ROWS]


def questions(raw: object) -> list[Payload]:
    """``[{question, header, options: [{label, description}], multiSelect}]`` in any of
    the agents' spellings, bounded."""
    result: list[Payload] = []
    if not isinstance(raw, list):
        return result
    for index, item in enumerate(raw[:MAX_QUESTIONS]):
        if not isinstance(item, Mapping):
            continue
        options = []
        for option in (item.get("options") or [])[:MAX_OPTIONS]:
            if isinstance(option, Mapping):
                options.append(
                    {
                        "label": text(option.get("label")),
                        "description": text(option.get("description")),
                    }
                )
            elif isinstance(option, str):
                options.append({"label": text(option), "description": ""})
        multi = item.get("multiSelect", item.get("multi_select", item.get("multiple", False)))
        result.append(
            {
                "id": text(item.get("id") or f"q{index}", 256),
                "header": text(item.get("header")),
                "question": text(item.get("question")),
                "options": options,
                "multi_select": bool(multi),
            }
        )
    return result


def suggestions(raw: object) -> list[str]:
    """Labels for the agent's own permission suggestions."""
    return [label for label, _ in suggestion_sources(raw)]


def suggestion_sources(raw: object) -> list[tuple[str, object]]:
    """Each suggestion's label with the raw item it describes, in the order shown:
    the index a client answers with is an index into this list."""
    sources: list[tuple[str, object]] = []
    if not isinstance(raw, list):
        return sources
    for item in raw[:MAX_SUGGESTIONS]:
        if isinstance(item, str):
            label = text(item)
        elif isinstance(item, Mapping):
            label = text(_describe_suggestion(item))
        else:
            continue
        if label:
            sources.append((label, item))
    return sources


def _describe_suggestion(item: Mapping[str, Any]) -> str:
    kind = str(item.get("type", ""))
    if kind == "addRules":
        rules = item.get("rules") or []
        names = []
        for rule in rules if isinstance(rules, list) else []:
            if isinstance(rule, Mapping):
                tool = rule.get("toolName", "")
                content = rule.get("ruleContent")
                names.append(f"{tool}({content})" if content else str(tool))
        where = item.get("destination", "")
        return f"Always allow {', '.join(names)}" + (f" ({where})" if where else "")
    if kind == "setMode":
        return f"Switch to {item.get('mode', '')} mode"
    if kind == "addDirectories":
        dirs = item.get("directories") or []
        return "Allow access to " + ", ".join(str(d) for d in dirs)
    return kind or cjson.dumps(item, ensure_ascii=False)


def fit(session_id: str, nonce: str, payload: Mapping[str, object]) -> bytes:
    """Encode a frame, shortening the longest strings until it fits the frame limit:
    a big interaction is shortened, never dropped."""
    limit = MAX_TEXT
    while True:
        try:
            return encode_frame(session_id, nonce, payload)
        except ValueError:
            limit //= 2
            if limit < 16:
                raise
            payload = _shorten(dict(payload), limit)


def _shorten(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if isinstance(value, list):
        return [_shorten(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: _shorten(v, limit) for k, v in value.items()}
    return value
