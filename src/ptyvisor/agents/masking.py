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

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    import re
    from collections.abc import Callable

MASK = "***"
IGNORECASE = 2
"""``re.IGNORECASE``, whose value Python fixes: ``re`` itself (8 ms with ``enum``,
``functools`` and ``collections``) is imported only by a text that may hold a secret
(`may_hold_secret`)."""

CLUES = (
    *("sk-", "aiza", "gh", "github_pat_", "glpat-", "xox", "npm_", "akia", "asia"),
    *("bearer", "basic", "://", "key", "token", "secret", "pass", "credential", "auth"),
)
"""Lower-case text every rule below needs: a key's prefix, an HTTP scheme, a URL, or
a part of every credential-looking name. ASCII text without any of them matches no
rule (tests/agents/test_masking.py checks that against the rules)."""


def may_hold_secret(text: str) -> bool:
    """Whether any rule could match ``text``. Only for ASCII text is the answer no
    when no clue is in it: under ``IGNORECASE`` some other letters match ASCII ones
    (the Kelvin sign matches ``k``)."""
    if not text.isascii():
        return True
    lowered = text.lower()
    return any(clue in lowered for clue in CLUES)


class _Pattern:
    """A rule's regular expression, compiled the first time it is used: most hook runs
    (a PreToolUse reports only ``working``) mask nothing and skip the 2 ms."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source, self._flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    def sub(self, replacement: str | Callable[[re.Match[str]], str], text: str) -> str:
        if self._compiled is None:
            import re

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
    (_Pattern(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/\-]+=*", IGNORECASE), r"\1 " + MASK),
    # scheme://user:password@host
    (
        _Pattern(r"\b([a-zA-Z][a-zA-Z0-9+.\-]{0,31}://[^/\s:@]{1,256}:)[^@\s/]{1,256}@"),
        r"\1" + MASK + "@",
    ),
    # JSON keys: "api_key": "value"
    (
        _Pattern(r'("' + _NAME + r'"\s*:\s*")(?:[^"\\]|\\.)*(")', IGNORECASE),
        r"\1" + MASK + r"\2",
    ),
    # Flags: --token X, --password=X, --api-key X
    (
        _Pattern(
            r"(--(?:[a-z0-9]{1,32}-){0,4}(?:token|secret|password|passwd|api-key|apikey|auth|key)"
            r"(?:[=\s]+))(?!-)(\"[^\"]*\"|'[^']*'|\S+)",
            IGNORECASE,
        ),
        r"\1" + MASK,
    ),
]

_ASSIGNMENT = _Pattern(r"(\b" + _NAME + r"\s*=\s*)(?:\"([^\"]*)\"|'([^']*)'|[^\s\"']+)", IGNORECASE)
"""API_KEY=x, export GITHUB_TOKEN="x", aws_secret_access_key = x, :_authToken=x"""


def _mask_assignment(match: re.Match[str]) -> str:
    """Keep the name and the quotes of ``NAME="value"``; only the value goes."""
    quote = '"' if match.group(2) is not None else "'" if match.group(3) is not None else ""
    return f"{match.group(1)}{quote}{MASK}{quote}"


def mask(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``***``.

    Linear in the length of ``text``; callers that only show a prefix should mask
    a little more than that prefix, not the whole input."""
    if not may_hold_secret(text):
        return text  # most commands: no rule is even compiled
    return apply_rules(text)


def apply_rules(text: str) -> str:
    """Every rule on ``text``, whatever `may_hold_secret` says (what `mask` does)."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return _ASSIGNMENT.sub(_mask_assignment, text)
