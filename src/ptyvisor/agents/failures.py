"""Why a turn failed, as a person would say it: the status and the message.

Agents report a failed turn with whatever their provider returned: Codex hands over
``unexpected status 400 Bad Request: {"error": {"message": …, "type": …}}``, Claude
Code the provider's error body, Pi and OpenCode their own wording. `failure_reason`
turns each into one short line (``400 Bad Request: prompt is too long``), bounded, for
every agent alike: the tracker applies it to every ``failed`` report.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_FAILURE_CHARS = 200
"""A reason longer than this is cut (with an ellipsis)."""
MAX_JSON_TRIES = 8
"""Candidate ``{`` positions tried as the start of an embedded JSON body."""

_STATUS = re.compile(r"\b([1-5]\d\d)\b(?:\s+([A-Z][A-Za-z]*(?:[ -][A-Z][A-Za-z]*)*))?")
_MESSAGE_KEYS = ("message", "detail", "error_description", "msg", "error", "title")
_STATUS_KEYS = ("status", "status_code", "statusCode", "code")


def failure_reason(raw: str) -> str:
    """One short line: ``[status: ]message``, from text that may embed a JSON body."""
    text = " ".join(raw.split())
    found = _embedded_json(text)
    if found is None:
        return _bounded(text)
    start, body = found
    message = _message(body) or ""
    head = text[:start].strip().rstrip(":").strip()
    status = _status(body, head)
    if status is not None:
        head = status
    if not message:
        return _bounded(text)
    return _bounded(f"{head}: {message}" if head and head not in message else message)


def _embedded_json(text: str) -> tuple[int, Any] | None:
    """The first JSON object in ``text`` that parses: (where it starts, its value)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    for _ in range(MAX_JSON_TRIES):
        if start < 0:
            return None
        try:
            value, _end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return start, value
        start = text.find("{", start + 1)
    return None


def _message(body: Any, depth: int = 0) -> str | None:
    """The human part of an error body: ``error.message``, ``message``, ``detail``…"""
    if depth > 4:
        return None
    if isinstance(body, str):
        inner = _embedded_json(body)  # a message that is itself a JSON body
        if inner is not None:
            return _message(inner[1], depth + 1) or body
        return body.strip() or None
    if isinstance(body, list):
        for item in body[:4]:
            found = _message(item, depth + 1)
            if found:
                return found
        return None
    if not isinstance(body, dict):
        return None
    for key in _MESSAGE_KEYS:
        if key in body:
            found = _message(body[key], depth + 1)
            if found:
                return found
    return None


def _status(body: Any, head: str) -> str | None:
    """``400 Bad Request`` from the text before the body, else ``400`` from the body."""
    match = _STATUS.search(head)
    if match is not None:
        return " ".join(part for part in match.groups() if part)
    for scope in (body, body.get("error") if isinstance(body, dict) else None):
        if not isinstance(scope, dict):
            continue
        for key in _STATUS_KEYS:
            value = scope.get(key)
            if isinstance(value, int) and 100 <= value <= 599:
                return str(value)
    return None


def _bounded(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_FAILURE_CHARS:
        return text
    return text[: MAX_FAILURE_CHARS - 1].rstrip() + "…"
