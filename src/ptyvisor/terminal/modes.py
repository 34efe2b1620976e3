"""The modes a program sets for how its input is encoded: cursor keys, keypad, paste,
mouse and focus reports.

One record, the private-mode numbers that change it as one table, and the sequences
that set it again in a fresh terminal. The screen changes it, the snapshot replays it
and the session's typed input reads it, so a mode added here is known to all three.
Modes that change how the screen is drawn (auto-wrap, origin, reverse video, the
alternate screen) stay with the screen: they move the cursor or swap buffers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

MouseTracking = Literal["off", "x10", "normal", "button", "any"]
MouseEncoding = Literal["default", "utf8", "sgr", "urxvt", "sgr_pixels"]

KEYPAD = 66
"""DECNKM: the mode ``ESC =`` and ``ESC >`` set and reset."""

_FLAGS: dict[int, str] = {
    1: "application_cursor_keys",
    KEYPAD: "application_keypad",
    1004: "focus_events",
    2004: "bracketed_paste",
}
_TRACKING: dict[int, MouseTracking] = {9: "x10", 1000: "normal", 1002: "button", 1003: "any"}
_ENCODING: dict[int, MouseEncoding] = {1005: "utf8", 1006: "sgr", 1015: "urxvt", 1016: "sgr_pixels"}
_TRACKING_MODE = {name: mode for mode, name in _TRACKING.items()}
_ENCODING_MODE = {name: mode for mode, name in _ENCODING.items()}


def private_mode(number: int, on: bool) -> str:
    """DECSET (``on``) or DECRST of one private mode."""
    return f"\x1b[?{number}{'h' if on else 'l'}"


@dataclass(frozen=True, slots=True)
class InputModes:
    """What a client must mirror to type into the program as its terminal would."""

    application_cursor_keys: bool = False
    application_keypad: bool = False
    bracketed_paste: bool = False
    mouse_tracking: MouseTracking = "off"
    mouse_encoding: MouseEncoding = "default"
    focus_events: bool = False

    def changed(self, mode: int, on: bool) -> InputModes | None:
        """The modes after DECSET/DECRST of private ``mode``; None if it is not one of
        these (the screen's own, or one nobody tracks)."""
        if mode in _FLAGS:
            flag: dict[str, Any] = {_FLAGS[mode]: on}
            return dataclasses.replace(self, **flag)
        if mode in _TRACKING:
            # As xterm, xterm.js and tmux: one tracking mode; resetting any turns it off.
            return dataclasses.replace(self, mouse_tracking=_TRACKING[mode] if on else "off")
        if mode in _ENCODING:
            if on:
                return dataclasses.replace(self, mouse_encoding=_ENCODING[mode])
            if self.mouse_encoding == _ENCODING[mode]:
                return dataclasses.replace(self, mouse_encoding="default")
            return self
        return None

    def replay(self) -> str:
        """The sequences that give a terminal in any state exactly these modes."""
        out = [
            private_mode(1, self.application_cursor_keys),
            "\x1b=" if self.application_keypad else "\x1b>",
            private_mode(2004, self.bracketed_paste),
            private_mode(1004, self.focus_events),
            # Mouse: everything off, then the encoding *and* the tracking mode.
            *(private_mode(mode, False) for mode in (1000, 1006, 1005, 1015, 1016)),
        ]
        if self.mouse_encoding != "default":
            out.append(private_mode(_ENCODING_MODE[self.mouse_encoding], True))
        if self.mouse_tracking != "off":
            out.append(private_mode(_TRACKING_MODE[self.mouse_tracking], True))
        return "".join(out)
