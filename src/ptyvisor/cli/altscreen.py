"""Keep an attached program inside the one alternate screen ``attach`` draws on.

``ptyvisor attach`` (and ``run``) switch the user's terminal to its alternate screen and
leave it on detach, so the shell's screen and scrollback come back untouched, as with
tmux. The program's bytes pass through to that terminal, so three things in them
would break out of it, and `AltScreenGuard` takes them out of the stream:

- the program's own screen switches (``CSI ?47/1047/1049 h/l``): leaving its alternate
  screen would show the user's shell screen and draw over it. The switch is cut out
  and reported, so the caller redraws the screen the program now shows from a server
  snapshot (the server's headless terminal keeps both of the program's screens);
- a full reset (``ESC c``), which also leaves the alternate screen and wipes the
  shell's screen: a soft reset and a clear do the same to the program's view;
- erase-scrollback (``CSI 3 J``), which would erase the shell's own scrollback.

Sequences can be split across reads: an unfinished one at the end of a chunk is held
back (at most `HOLD_LIMIT` bytes) until the next chunk completes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SWITCH_MODES = frozenset({47, 1047, 1049})
SOFT_RESET = b"\x1b[!p\x1b[H\x1b[2J"
"""What a program's full reset becomes: DECSTR, home, clear."""
HOLD_LIMIT = 64
"""An escape sequence longer than this is not one of ours: it is passed on unheld."""

_SEQUENCE = re.compile(rb"\x1b\[\?([0-9;]*)([hl])|\x1bc|\x1b\[3J")
_UNFINISHED = re.compile(rb"\x1b(?:\[\??[0-9;]*)?\Z")


@dataclass(frozen=True)
class ScreenSwitch:
    """The program switched screens here: what follows needs a redraw from the server."""

    enter: bool


class AltScreenGuard:
    def __init__(self) -> None:
        self._held = b""

    def reset(self) -> None:
        """Forget a held partial sequence (the screen is being redrawn from a snapshot)."""
        self._held = b""

    def feed(self, data: bytes) -> tuple[bytes, ScreenSwitch | None]:
        """The bytes to write, and the first screen switch if there is one: bytes after
        it are dropped, as the redraw that must follow covers them."""
        data, self._held = self._held + data, b""
        unfinished = _UNFINISHED.search(data, max(0, len(data) - HOLD_LIMIT))
        if unfinished is not None:
            data, self._held = data[: unfinished.start()], data[unfinished.start() :]
        out = bytearray()
        at = 0
        for match in _SEQUENCE.finditer(data):
            out += data[at : match.start()]
            at = match.end()
            if match.group(2) is None:  # ESC c, or CSI 3 J
                if match.group(0) == b"\x1bc":
                    out += SOFT_RESET
                continue
            params = match.group(1).split(b";")
            switches = [p for p in params if p.isdigit() and int(p) in SWITCH_MODES]
            kept = [p for p in params if p not in switches]
            if kept:
                out += b"\x1b[?" + b";".join(kept) + match.group(2)
            if switches:
                self._held = b""
                return bytes(out), ScreenSwitch(enter=match.group(2) == b"h")
        out += data[at:]
        return bytes(out), None

    @staticmethod
    def redraw(ansi: bytes) -> bytes:
        """A snapshot's drawing for a terminal already on the alternate screen: its
        switches become a clear (the snapshot draws the screen it shows last), and it
        starts from a soft reset rather than ``ESC c``, which would leave that screen."""

        def switch(match: re.Match[bytes]) -> bytes:
            if match.group(2) is None:
                return SOFT_RESET if match.group(0) == b"\x1bc" else b""
            params = match.group(1).split(b";")
            kept = [p for p in params if not (p.isdigit() and int(p) in SWITCH_MODES)]
            cleared = b"\x1b[H\x1b[2J" if len(kept) < len(params) else b""
            return cleared + (b"\x1b[?" + b";".join(kept) + match.group(2) if kept else b"")

        return SOFT_RESET + _SEQUENCE.sub(switch, ansi)
