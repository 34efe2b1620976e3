"""Strings from inside a session, made inert at the boundary they cross.

Everything a session produces is untrusted: frame payloads (reasons, native ids,
agent names, interaction text), session names any client may set, commands, working
directories, window titles, a provider's error body. Anything holding the nonce can
write a frame (the agent, a tool it runs, a ``printf`` a prompt injection asked
for), and any client can ``rename``. So before such a string reaches

- **a terminal or a log line** (the CLI's output, ``serve``'s log through
  `logs.InertFormatter`, an asciicast's title and markers): `printable` shows
  every control character visibly, as coreutils ``ls`` shows them with ``?``:
  ``ESC ] 52`` (a clipboard write), ``CSI 2 J``, OSC 8 and C1 controls reach
  nobody's terminal;
- **an argument vector** (a resume's ``--resume=<id>``): `native_id_problem` accepts
  only an id shaped like the agent's real ones, never one starting with ``-``, and
  the launcher passes it as one ``--option=value`` word where the CLI takes that;
- **HTML**: the page sets text with ``textContent`` only, never markup;

and nowhere else. The program's own output (the terminal stream, ``capture``) is
what a terminal is for, and stays as it is.

Stdlib only and cheap to import (``re``): hooks and the keeper's log use it.
"""

from __future__ import annotations

import re

__all__ = [
    "GENERIC_NATIVE_ID",
    "NATIVE_ID_SHAPES",
    "native_id_problem",
    "printable",
]

_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL, C1 (U+009B is a one-character CSI)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional controls
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff]"  # lone surrogates (undecodable bytes of a file name)
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"  # as `jsontext.display` shows an undecodable byte
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``,
    ``\\x9b``, ``\\u202e``, ``\\n``): nothing in it acts on a terminal, and it stays
    on its line. ``newlines``: keep line feeds (a multi-line text the caller built,
    whose parts were made printable first). Idempotent."""
    if _UNSAFE.search(text) is None:
        return text
    if newlines:
        return "\n".join(_UNSAFE.sub(_shown, line) for line in text.split("\n"))
    return _UNSAFE.sub(_shown, text)


_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
NATIVE_ID_SHAPES: dict[str, re.Pattern[str]] = {
    "claude-code": re.compile(_UUID),
    "codex": re.compile(_UUID),  # a thread id (UUIDv7)
    "gemini-cli": re.compile(_UUID),
    "qwen-code": re.compile(_UUID),
    "pi": re.compile(_UUID),
    "oh-my-pi": re.compile(_UUID),  # Bun.randomUUIDv7()
    "copilot": re.compile(_UUID),
    "droid": re.compile(_UUID),
    "opencode": re.compile(r"ses_[A-Za-z0-9]{1,64}"),
    "kilo": re.compile(r"ses_[A-Za-z0-9]{1,64}"),
    "cline": re.compile(r"[0-9]{10,16}_[a-z0-9]{1,16}"),
}
"""The conversation ids each agent reports (use with ``fullmatch``), as the pinned
versions make them: Claude Code, Gemini CLI, Qwen Code, Pi, oh-my-pi, Copilot and Droid
a session UUID, Codex its thread's UUID, OpenCode ``ses_`` and base62, Cline the start's
Unix milliseconds, ``_`` and a few base-36 letters."""

GENERIC_NATIVE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+@-]{0,255}")
"""What any agent's id may look like (an agent ptyvisor does not launch, or a frame
from a script): a letter or digit first (never ``-``: no option), then no space,
quote, slash or control character."""


def native_id_problem(agent: str | None, value: str) -> str | None:
    """Why ``value`` cannot be ``agent``'s conversation id, or None when it can: the
    agent's own shape when ptyvisor knows it, else `GENERIC_NATIVE_ID`."""
    shape = NATIVE_ID_SHAPES.get(agent or "", GENERIC_NATIVE_ID)
    if shape.fullmatch(value) is not None:
        return None
    what = f"a {agent} conversation id" if agent in NATIVE_ID_SHAPES else "a conversation id"
    return f"{value[:80]!r} is not {what}"
