"""Character sets: what ``ESC ( F`` and ``ESC ) F`` designate into G0 and G1, which
of the two SI and SO put in use, and what that does to the ASCII a program prints.

The sets are the ones xterm.js knows, with its rules, so that a snapshot draws what
the page drew live: DEC Special Graphics (``0``, ncurses' line drawing) and the
VT220's national replacement sets (``A`` British, ``K`` German, ...), each of which
swaps a few ASCII characters for others. A final character xterm.js does not know
designates US ASCII, as it does there. Where a national set's table in the VT220
manual gives two characters for one (Dutch ``ij``), xterm.js draws the first, and so
does this. G2 and G3 are not tracked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

ASCII = "B"


def _table(ascii_chars: str, drawn: str) -> dict[int, str]:
    return {ord(a): d for a, d in zip(ascii_chars, drawn, strict=True)}


_DEC_GRAPHICS = _table("`abcdefghijklmnopqrstuvwxyz{|}~", "◆▒␉␌␍␊°±␤␋┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£·")
_FINNISH = _table("[\\]^`{|}~", "ÄÖÅÜéäöåü")
_NORWEGIAN = _table("@[\\]^`{|}~", "ÄÆØÅÜäæøåü")
_SWEDISH = _table("@[\\]^`{|}~", "ÉÄÖÅÜéäöåü")

TABLES: dict[str, dict[int, str]] = {
    "0": _DEC_GRAPHICS,
    "A": _table("#", "£"),
    "4": _table("#@[\\]{|}~", "£¾i½|¨f¼\u00b4"),
    "C": _FINNISH,
    "5": _FINNISH,
    "R": _table("#@[\\]{|}~", "£à°ç§éùè¨"),
    "Q": _table("@[\\]^`{|}~", "àâçêîôéùèû"),
    "K": _table("@[\\]{|}~", "§ÄÖÜäöüß"),
    "Y": _table("#@[\\]`{|}~", "£§°çéùàòèì"),
    "E": _NORWEGIAN,
    "6": _NORWEGIAN,
    "Z": _table("#@[\\]{|}", "£§¡Ñ¿°ñç"),
    "H": _SWEDISH,
    "7": _SWEDISH,
    "=": _table("#@[\\]^_`{|}~", "ùàéçêîèôäöüû"),
}
"""What each set draws instead of ASCII, by its final character (ASCII: none)."""

Slot = Literal["(", ")"]
"""The intermediate that designates into G0 (``(``) or G1 (``)``)."""

RESET = "\x1b(B\x1b)B\x0f"
"""ASCII in G0 and G1, G0 in use: what a fresh terminal has."""


@dataclass(frozen=True, slots=True)
class Charsets:
    """G0 and G1 by final character, and whether SO put G1 in use."""

    g0: str = ASCII
    g1: str = ASCII
    shifted: bool = False

    @property
    def table(self) -> dict[int, str] | None:
        """What drawing translates ASCII with now; None: nothing (the fast path)."""
        return TABLES.get(self.g1 if self.shifted else self.g0)

    def designate(self, slot: str, final: str) -> Charsets:
        """``ESC <slot> <final>``; a slot other than G0's or G1's changes nothing."""
        code = final if final in TABLES else ASCII
        if slot == "(":
            return replace(self, g0=code)
        if slot == ")":
            return replace(self, g1=code)
        return self

    def replay(self) -> str:
        """The sequences that give a terminal in the `RESET` state these sets."""
        out = ""
        if self.g1 != ASCII:
            out += f"\x1b){self.g1}"
        if self.g0 != ASCII:
            out += f"\x1b({self.g0}"
        return out + ("\x0e" if self.shifted else "")
