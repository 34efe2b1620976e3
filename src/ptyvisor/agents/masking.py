"""Mask secrets in text before it leaves an agent extension.

Hook payloads carry commands, file contents and environment snippets; anything
shown to a client must not carry credentials. Each rule keeps what tells the reader
*what* was there (a key's prefix, a variable or flag name) and replaces the secret
with ``***``. Stdlib only: hooks import this on every tool call.

The same rules exist in JavaScript for the in-process extensions
(``agent-extensions/shared/mask.mjs``); ``agent-extensions/masking-vectors.json``
holds the cases both must pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MASK = "***"


class _Pattern:
    """A rule's regular expression, compiled the first time it is used: most hook runs
    (a PreToolUse reports only ``working``) mask nothing and skip the 2 ms."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source, self._flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    def sub(self, replacement: str | Callable[[re.Match[str]], str], text: str) -> str:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled.sub(replacement, text)


_NAME = (
    r"[A-Za-z0-9_]{0,64}(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)"
    r"[A-Za-z0-9_]{0,64}"
)
"""A credential-looking name: API_KEY, GITHUB_TOKEN, DB_PASSWORD, client_secret …

Every repetition in these patterns is bounded: masking runs on untrusted payloads in
a hook on every tool call, and an unbounded run would make it quadratic."""

_RULES: list[tuple[_Pattern, str]] = [
    # Provider keys and tokens with a recognisable prefix: keep the prefix.
    (_Pattern(r"\b(sk-ant-|sk-proj-|sk-)[A-Za-z0-9_\-]{16,}"), r"\1" + MASK),
    (_Pattern(r"\b(AIza)[A-Za-z0-9_\-]{30,}"), r"\1" + MASK),
    (_Pattern(r"\b(gh[pousr]_)[A-Za-z0-9]{20,}"), r"\1" + MASK),
    (_Pattern(r"\b(github_pat_)[A-Za-z0-9_]{20,}"), r"\1" + MASK),
    (_Pattern(r"\b(glpat-)[A-Za-z0-9_\-]{16,}"), r"\1" + MASK),
    (_Pattern(r"\b(xox[abprs]-)[A-Za-z0-9\-]{8,}"), r"\1" + MASK),
    (_Pattern(r"\b(npm_)[A-Za-z0-9]{30,}"), r"\1" + MASK),
    (_Pattern(r"\b((?:AKIA|ASIA))[A-Z0-9]{16}\b"), r"\1" + MASK),
    # HTTP credentials.
    (_Pattern(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/\-]+=*", re.IGNORECASE), r"\1 " + MASK),
    # scheme://user:password@host
    (
        _Pattern(r"\b([a-zA-Z][a-zA-Z0-9+.\-]{0,31}://[^/\s:@]{1,256}:)[^@\s/]{1,256}@"),
        r"\1" + MASK + "@",
    ),
    # JSON keys: "api_key": "value"
    (
        _Pattern(r'("' + _NAME + r'"\s*:\s*")(?:[^"\\]|\\.)*(")', re.IGNORECASE),
        r"\1" + MASK + r"\2",
    ),
    # Flags: --token X, --password=X, --api-key X
    (
        _Pattern(
            r"(--(?:[a-z0-9]{1,32}-){0,4}(?:token|secret|password|passwd|api-key|apikey|auth|key)"
            r"(?:[=\s]+))(?!-)(\"[^\"]*\"|'[^']*'|\S+)",
            re.IGNORECASE,
        ),
        r"\1" + MASK,
    ),
]

_ASSIGNMENT = _Pattern(
    r"(\b" + _NAME + r"\s*=\s*)(?:\"([^\"]*)\"|'([^']*)'|[^\s\"']+)", re.IGNORECASE
)
"""API_KEY=x, export GITHUB_TOKEN="x", aws_secret_access_key = x, :_authToken=x"""


def _mask_assignment(match: re.Match[str]) -> str:
    """Keep the name and the quotes of ``NAME="value"``; only the value goes."""
    quote = '"' if match.group(2) is not None else "'" if match.group(3) is not None else ""
    return f"{match.group(1)}{quote}{MASK}{quote}"


def mask(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``***``.

    Linear in the length of ``text``; callers that only show a prefix should mask
    a little more than that prefix, not the whole input."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return _ASSIGNMENT.sub(_mask_assignment, text)
