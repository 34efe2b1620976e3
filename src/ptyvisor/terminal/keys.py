"""tmux-style key names to the bytes a terminal sends for them (``send-keys``).

Each argument is a key name or text. Names (case-insensitive): ``Enter``, ``Esc``
(``Escape``), ``Tab``, ``BTab``, ``BSpace``, ``Space``, ``Up``, ``Down``, ``Left``,
``Right``, ``Home``, ``End``, ``PgUp`` (``PPage``), ``PgDn`` (``NPage``), ``DC``
(``Delete``), ``IC`` (``Insert``), ``F1`` to ``F12``; ``C-x`` is Control with a
character (``C-c``, ``C-]``, ``C-Space``), ``M-x`` is Meta (ESC first) with a
character or a name (``M-Enter``). Anything else is text, sent as it is.

What a key sends depends on the program's modes, as in a real terminal: the arrows,
Home and End use SS3 in application cursor mode (vim, less, most TUIs). Text with a
line break, or any text when pasting is asked for, goes as a paste: bracketed
(``ESC [200~ … ESC [201~``) when the program enabled bracketed paste, so an agent's
prompt box takes a multi-line text whole instead of submitting at the first line.
"""

from __future__ import annotations

from collections.abc import Sequence

PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"

_PLAIN = {
    "enter": b"\r",
    "esc": b"\x1b",
    "escape": b"\x1b",
    "tab": b"\t",
    "btab": b"\x1b[Z",
    "bspace": b"\x7f",
    "space": b" ",
    "pgup": b"\x1b[5~",
    "ppage": b"\x1b[5~",
    "pgdn": b"\x1b[6~",
    "npage": b"\x1b[6~",
    "dc": b"\x1b[3~",
    "delete": b"\x1b[3~",
    "ic": b"\x1b[2~",
    "insert": b"\x1b[2~",
    "f1": b"\x1bOP",
    "f2": b"\x1bOQ",
    "f3": b"\x1bOR",
    "f4": b"\x1bOS",
    "f5": b"\x1b[15~",
    "f6": b"\x1b[17~",
    "f7": b"\x1b[18~",
    "f8": b"\x1b[19~",
    "f9": b"\x1b[20~",
    "f10": b"\x1b[21~",
    "f11": b"\x1b[23~",
    "f12": b"\x1b[24~",
}
_CURSOR = {"up": b"A", "down": b"B", "right": b"C", "left": b"D", "home": b"H", "end": b"F"}
"""Keys that follow application cursor mode: ``ESC [ x`` normally, ``ESC O x`` in it."""

MAX_KEY_CHARS = 128 * 1024
"""Longest key (a name, or text such as a pasted prompt) a client may send."""
MAX_KEYS_CHARS = 512 * 1024
"""Most characters one ``send_keys`` may carry in all: each message is parsed and
encoded on the event loop, so both bounds keep it to a few milliseconds."""


def key_bytes(name: str, *, application_cursor: bool = False) -> bytes | None:
    """The bytes of one key name; None when ``name`` is not one (it is text).

    Linear in the name's length, whatever it holds: ``M-`` prefixes are counted, not
    parsed one inside another (a name of a thousand of them once exhausted the
    recursion, and copied the rest of the name at each level)."""
    metas = 0
    while len(name) > 2 * metas + 2 and name[2 * metas] in "Mm" and name[2 * metas + 1] == "-":
        metas += 1
    rest = name[2 * metas :] if metas else name
    inner = _unmodified(rest, application_cursor)
    if inner is None and metas and len(rest) == 1:
        inner = rest.encode()
    return None if inner is None else b"\x1b" * metas + inner


def _unmodified(name: str, application_cursor: bool) -> bytes | None:
    """A named key, or ``C-x``; None for anything else."""
    lower = name.lower()
    if lower in _PLAIN:
        return _PLAIN[lower]
    if lower in _CURSOR:
        return (b"\x1bO" if application_cursor else b"\x1b[") + _CURSOR[lower]
    if len(name) > 2 and name[0] in "Cc" and name[1] == "-":
        return _control(name[2:])
    return None


def _control(rest: str) -> bytes | None:
    """C-x: the control character of x (C-Space and C-@ are NUL, C-? is DEL)."""
    if rest.lower() == "space":
        return b"\x00"
    if len(rest) != 1:
        return None
    if rest == "?":
        return b"\x7f"
    code = ord(rest.upper())
    if 0x40 <= code <= 0x5F:
        return bytes([code & 0x1F])
    return None


def encode_keys(
    keys: Sequence[str],
    *,
    literal: bool = False,
    paste: bool = False,
    application_cursor: bool = False,
    bracketed_paste: bool = False,
) -> bytes:
    """Everything ``keys`` sends, in order (see the module's docstring)."""
    out = bytearray()
    for key in keys:
        encoded = None if literal else key_bytes(key, application_cursor=application_cursor)
        if encoded is not None:
            out += encoded
        elif paste or "\n" in key or "\r" in key:
            text = key.replace("\r\n", "\r").replace("\n", "\r").encode()
            out += PASTE_START + text + PASTE_END if bracketed_paste else text
        else:
            out += key.encode()
    return bytes(out)
