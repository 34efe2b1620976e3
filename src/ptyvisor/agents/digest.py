"""Digests that name things without keeping them: a request's input (an interaction
id), a prompt (which turn a confirmed prompt started). Stdlib only and cheap to
import: hooks use it on every tool call. ``agent-extensions/shared/digest.mjs``
computes the same prompt digest in the JavaScript extensions."""

from __future__ import annotations

try:  # the interpreter's own SHA-256: hashlib would load OpenSSL (3 ms per hook run)
    from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # a build without it
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]

PROMPT_DIGEST_CHARS = 16
_SPACES = str.maketrans("\t\n\r\f\v", "     ")
"""ASCII whitespace as spaces (not ``str.split()``'s Unicode whitespace: the JavaScript
extensions' rule is ASCII only); no ``re``, which a hook run would pay to import."""


def hex_digest(data: bytes) -> str:
    digest: str = sha256(data).hexdigest()
    return digest


def one_line(text: str) -> str:
    """``text`` with each run of ASCII whitespace as one space, trimmed: what a prompt's
    digest is of, and how a prompt is typed where a line break would submit it."""
    return " ".join(word for word in text.translate(_SPACES).split(" ") if word)


def prompt_digest(text: str) -> str:
    """A prompt's digest, equal for the text as typed and as the agent reports it:
    runs of ASCII whitespace count as one space and the ends are trimmed (agents trim
    a prompt, and a paste's line endings arrive as CR or LF)."""
    return hex_digest(one_line(text).encode("utf-8", "replace"))[:PROMPT_DIGEST_CHARS]
