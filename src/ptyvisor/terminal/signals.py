"""Activity hints in a program's output: notifications, bells, progress and shell
integration marks (see `TerminalSignal`). They are only noticed: the sequences
themselves stay in the output, as any other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MAX_SIGNALS = 64
"""Signals kept between two `HeadlessTerminal.take_signals` (the newest)."""
SIGNAL_TEXT_CHARS = 256
"""A notification's text is cut to this many characters (controls removed)."""


CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""C0 and C1 control characters: never part of a title, a link or a notification."""


SignalKind = Literal["notification", "bell", "progress", "prompt", "command", "done"]


@dataclass(frozen=True, slots=True)
class TerminalSignal:
    """One activity hint in a program's output (see the module docstring).

    - ``notification``: OSC 9 text, OSC 777;notify;title;body, OSC 99; ``text``.
    - ``bell``: a BEL on its own.
    - ``progress``: OSC 9;4;state;progress; ``state`` 0 (done) to 4, ``value`` the
      percentage when given.
    - ``prompt`` (OSC 133;A or B), ``command`` (133;C), ``done`` (133;D, ``value``
      the exit status when given).
    """

    kind: SignalKind
    text: str = ""
    state: int = 0
    value: int | None = None


def _signal_text(text: str) -> str:
    return " ".join(CONTROLS.sub(" ", text).split())[:SIGNAL_TEXT_CHARS]


def _small_int(text: str) -> int | None:
    text = text.strip()
    digits = text[1:] if text[:1] == "-" else text
    # ASCII only: str.isdigit() takes superscripts ("²"), which int() refuses.
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9:
        return None
    return int(text)


def osc_signal(number: str, value: str) -> TerminalSignal | None:
    """The signal an OSC ``number;value`` carries, if any."""
    if number == "9":
        head, _, rest = value.partition(";")
        if head.isdigit():
            # ConEmu's OSC 9;N commands (9;4 progress, 9;9 working directory, ...):
            # only progress is a signal, never the others' text.
            if head != "4":
                return None
            fields = rest.split(";")
            state = _small_int(fields[0]) if fields[0] else 0
            if state is None or not 0 <= state <= 4:
                return None
            progress = _small_int(fields[1]) if len(fields) > 1 else None
            if progress is not None:
                progress = min(max(progress, 0), 100)
            return TerminalSignal("progress", state=state, value=progress)
        return TerminalSignal("notification", text=_signal_text(value))
    if number == "777":
        command, _, rest = value.partition(";")
        if command != "notify":
            return None
        title, _, body = rest.partition(";")
        title, body = _signal_text(title), _signal_text(body)
        text = f"{title}: {body}" if title and body else title or body
        return TerminalSignal("notification", text=text[:SIGNAL_TEXT_CHARS])
    if number == "99":
        # kitty: metadata;payload. A notification may come in several (each one is
        # a signal); one with no payload (a query, a close) is none.
        _metadata, _, payload = value.partition(";")
        text = _signal_text(payload)
        return TerminalSignal("notification", text=text) if text else None
    if number == "133":
        mark, _, rest = value.partition(";")
        if mark in ("A", "B"):
            return TerminalSignal("prompt")
        if mark == "C":
            return TerminalSignal("command")
        if mark == "D":
            status = rest.partition(";")[0]
            return TerminalSignal("done", value=_small_int(status) if status else None)
    return None
