"""Strict JSON for everything a peer sends: clients, hooks and frames.

``json.loads`` accepts more than the rest of the server can carry. Its escapes give
lone surrogates (``"\\ud800"``, half an emoji cut by a JS client), which no UTF-8
encoder takes: the first reply, log line or hook decision that repeats such a text
raises. Deep nesting raises ``RecursionError``, and ``NaN``/``Infinity`` are not JSON.
`loads` turns all of these into one `BadJSON` at the boundary, so nothing past it
has to defend itself.

Stdlib only and cheap to import: ``frames`` uses it, and hooks import that.
"""

from __future__ import annotations

import base64
import json
import re

from ptyvisor.errors import BadJSON

MAX_DEPTH = 64
"""Deepest nesting accepted; every real message is under ten levels deep."""


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def loads(data: str | bytes, *, max_depth: int = MAX_DEPTH) -> object:
    """Parse ``data`` (bytes must be UTF-8); raises `BadJSON`, nothing else."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise BadJSON(f"nested deeper than {max_depth} levels", syntax=True) from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, huge integers
        raise BadJSON(f"not JSON: {error}", syntax=True) from None
    check(value, max_depth=max_depth)
    return value


def check(value: object, *, max_depth: int = MAX_DEPTH) -> None:
    """Raise `BadJSON` if ``value`` nests deeper than ``max_depth`` or holds a text
    (key or value) that is not valid Unicode. Iterative: no recursion to exhaust."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not is_text(item):
                raise BadJSON("a text holds a lone surrogate (not valid Unicode)", syntax=False)
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                raise BadJSON(f"nested deeper than {max_depth} levels", syntax=True)
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)


def is_text(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8: no lone surrogates."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def display(text: str) -> str:
    """``text`` with every lone surrogate shown as U+FFFD, for display.

    A file name decoded with ``surrogateescape`` (``os.fsdecode``) holds each byte
    that is not UTF-8 as a lone surrogate; each becomes one replacement character.
    """
    return text if is_text(text) else _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def raw_bytes(name: str) -> str | None:
    """For a name decoded with ``surrogateescape`` (argv, a path) that is not valid
    UTF-8: its exact bytes, base64; None for a name that `display` shows exactly."""
    if is_text(name):
        return None
    return base64.b64encode(name.encode("utf-8", "surrogateescape")).decode("ascii")


def from_raw(data: bytes) -> str:
    """The name of exact bytes ``data``, as ``os.fsdecode`` gives it."""
    return data.decode("utf-8", "surrogateescape")
