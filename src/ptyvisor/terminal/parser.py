"""Turns decoded program output into `Screen` calls.

Instead of pyte's per-character generator, complete escape sequences are matched
with one regular expression and printable runs go to ``Screen.draw`` whole; whole
lines of printable ASCII and plain SGR after a CR LF go to ``plain_lines.draw``
together. Only a sequence split across feeds, or with controls embedded in it,
takes the slower per-character path. Control strings (OSC, DCS, APC, PM, SOS) are
consumed with bounds, so an unterminated one never swallows later output; OSC
titles, links and signals are read from them. Queries (DA1, DA2, DSR, CPR, window
reports) are answered through ``reply``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable

from ptyvisor.terminal import plain_lines
from ptyvisor.terminal.modes import KEYPAD
from ptyvisor.terminal.screen import DECOM, Screen
from ptyvisor.terminal.sgr import int_params
from ptyvisor.terminal.signals import CONTROLS, MAX_SIGNALS, TerminalSignal, osc_signal

DA1_REPLY = "\x1b[?1;2c"
"""VT100 with advanced video: what xterm.js and tmux answer, and no graphics claims."""
DA2_REPLY = "\x1b[>0;276;0c"
"""xterm.js's secondary DA: VT100-class, xterm patch 276."""

OSC_LIMIT = 4096
"""Characters after which an unterminated OSC is abandoned (and payload kept)."""
BIG_STRING_LIMIT = 8 * 1024 * 1024
"""The same bound for OSC 52 and DCS/APC/PM/SOS, whose payloads can be large."""
TITLE_STACK_LIMIT = 10
"""Titles kept by CSI 22 t (push) for CSI 23 t (pop)."""
MAX_PARAMS = 256
"""A control sequence longer than this is dropped; the rest is ordinary output."""


TEXT = re.compile(r"[^\x00-\x1f\x7f-\x9f]+")
SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)([<=>?]?)([0-9:;]*)([ -/]*)([@-~])"  # CSI: groups 1-4
    r"|\x1b([\]P_^X])|([\x90\x98\x9d\x9e\x9f])"  # string start: 5 (7-bit), 6 (C1)
    r"|\x1b([ -/]*)([0-Z\\-~])"  # other escape: 7, 8
)
_CSI_BODY = re.compile(r"([<=>?]?)([0-9:;]*)([ -/]*)")
_OSC_END = re.compile(r"[\x07\x18\x1a\x1b\x9c]")
_STRING_END = re.compile(r"[\x18\x1a\x1b\x9c]")
_SIGNAL_OSCS = frozenset({"9", "99", "133", "777"})
_BELL = TerminalSignal("bell")
_STRING_INTRODUCERS = {
    "osc": "\x1b]",
    "dcs": "\x1bP",
    "apc": "\x1b_",
    "pm": "\x1b^",
    "sos": "\x1bX",
}
_STRING_KINDS = {
    "]": "osc",
    "P": "dcs",
    "_": "apc",
    "^": "pm",
    "X": "sos",
    "\x9d": "osc",
    "\x90": "dcs",
    "\x9f": "apc",
    "\x9e": "pm",
    "\x98": "sos",
}
_SEQUENCE_START = frozenset("\x1b\x9b\x90\x98\x9d\x9e\x9f")
_PLAIN_BLOCK = re.compile(r"\r\n(?:[ -~]*(?:\x1b\[[0-9;]{0,64}m[ -~]*)*\r\n)+")
"""CR LF, then whole lines of printable ASCII and plain SGR, each ending in CR LF:
what logs and floods are made of, handed to `plain_lines.draw` in one call."""


_COUNTED: dict[str, Callable[[Screen, int], None]] = {
    "@": Screen.insert_characters,
    "A": Screen.cursor_up,
    "B": Screen.cursor_down,
    "C": Screen.cursor_forward,
    "D": Screen.cursor_back,
    "E": Screen.cursor_down1,
    "F": Screen.cursor_up1,
    "G": Screen.cursor_to_column,
    "`": Screen.cursor_to_column,
    "I": Screen.forward_tab,
    "J": Screen.erase_in_display,
    "K": Screen.erase_in_line,
    "L": Screen.insert_lines,
    "M": Screen.delete_lines,
    "P": Screen.delete_characters,
    "S": Screen.scroll_up,
    "T": Screen.scroll_down,
    "X": Screen.erase_characters,
    "Z": Screen.back_tab,
    "a": Screen.cursor_forward,
    "b": Screen.repeat,
    "d": Screen.cursor_to_line,
    "e": Screen.cursor_down,
    "g": Screen.clear_tab_stop,
}
"""CSI finals that take one count (0 when absent). The tables are the module's, not
each parser's: a session's parser would otherwise carry ~40 closures (~7 KiB)."""
_PAIRED: dict[str, Callable[..., None]] = {
    "H": Screen.cursor_position,
    "f": Screen.cursor_position,
    "r": Screen.set_margins,
}
"""CSI finals that take their first two parameters."""
_SCREEN_ESCAPES: dict[str, Callable[[Screen], None]] = {
    "7": Screen.save_cursor,
    "8": Screen.restore_cursor,
    "D": Screen.index,
    "M": Screen.reverse_index,
    "H": Screen.set_tab_stop,
    "c": Screen.reset,
}


class Parser:
    """Turns decoded output into screen calls; see the module docstring."""

    def __init__(self, screen: Screen, reply: Callable[[bytes], None] | None) -> None:
        self.screen = screen
        self._reply = reply
        self._pending = ""  # an incomplete escape sequence from the previous feed
        self._string = ""  # kind of control string being consumed, "" when none
        self._string_len = 0
        self._string_limit = OSC_LIMIT
        self._string_kept: list[str] = []
        self._string_kept_len = 0
        self.signals: deque[TerminalSignal] = deque(maxlen=MAX_SIGNALS)
        s = screen
        # Bound once: the hot loop calls one per control character.
        self._controls: dict[str, Callable[[], None]] = {
            "\x07": self._bell,
            "\x08": s.backspace,
            "\t": s.tab,
            "\n": s.linefeed,
            "\x0b": s.linefeed,
            "\x0c": s.linefeed,
            "\r": s.carriage_return,
            "\x0e": s.shift_out,
            "\x0f": s.shift_in,
            "\x84": s.index,
            "\x85": self._next_line,
            "\x88": s.set_tab_stop,
            "\x8d": s.reverse_index,
        }

    # -- entry points --------------------------------------------------------

    def reset(self) -> None:
        """Forget any partial sequence or control string (after skipped output)."""
        self._pending = ""
        self._string = ""

    def feed(self, text: str) -> None:
        if self._pending:
            text = self._pending + text
            self._pending = ""
        n = len(text)
        i = self._consume_string(text, 0) if self._string else 0
        screen = self.screen
        draw = screen.draw
        match_text = TEXT.match
        match_lines = _PLAIN_BLOCK.match
        match_sequence = SEQUENCE.match
        controls = self._controls
        while i < n:
            m = match_text(text, i)
            if m is not None:
                draw(m.group())
                i = m.end()
                continue
            char = text[i]
            if char in _SEQUENCE_START:
                m = match_sequence(text, i)
                if m is None:
                    i = self._slow_sequence(text, i)
                    if not self._pending:
                        screen.last_graphic = ""
                    continue
                i = m.end()
                last = m.lastindex
                if last == 4:
                    self._csi(*m.group(1, 2, 3, 4))
                elif last == 8:
                    self._esc(*m.group(7, 8))
                else:
                    self._start_string(m.group(last or 0))
                    i = self._consume_string(text, i)
            elif char == "\r" and (m := match_lines(text, i)) is not None:
                screen.carriage_return()
                screen.linefeed()
                plain_lines.draw(screen, m.group()[2:-2].split("\r\n"))
                i = m.end()
            else:
                handler = controls.get(char)
                if handler is not None:
                    handler()
                i += 1
            # As in xterm.js: after any control or sequence (REP too), REP repeats
            # nothing and a combining mark joins no character (it takes a cell).
            screen.last_graphic = ""

    # -- escape sequences ----------------------------------------------------

    def _slow_sequence(self, text: str, i: int) -> int:
        """An escape sequence the regex did not match whole: incomplete, with embedded
        controls (executed, as a VT500 does) or malformed. Returns where to go on."""
        n = len(text)
        if text[i] == "\x9b":
            return self._slow_csi(text, i + 1)
        intermediates = ""
        j = i + 1
        while j < n:
            char = text[j]
            if char == "[" and not intermediates:
                return self._slow_csi(text, j + 1)
            if char == "\x1b":
                return j  # abandoned: the new ESC starts over
            if char in "\x18\x1a":
                return j + 1  # CAN/SUB cancel
            if char < " ":
                self._control(char)
            elif char == "\x7f":
                pass
            elif char <= "/":
                intermediates += char
                if len(intermediates) > 16:
                    return j + 1
            elif char <= "~":
                if not intermediates and char in _STRING_KINDS:
                    self._start_string(char)
                    return self._consume_string(text, j + 1)
                self._esc(intermediates, char)
                return j + 1
            else:
                return j  # not ASCII: abandoned, the character is text
            j += 1
        self._pending = "\x1b" + intermediates
        return n

    def _slow_csi(self, text: str, j: int) -> int:
        n = len(text)
        body = ""
        while j < n:
            char = text[j]
            if "0" <= char <= "?" or " " <= char <= "/":
                body += char
                if len(body) > MAX_PARAMS:
                    return j + 1
            elif "@" <= char <= "~":
                m = _CSI_BODY.fullmatch(body)
                if m is not None:  # else malformed (e.g. parameters after intermediates)
                    marker, params, intermediates = m.group(1, 2, 3)
                    self._csi(marker, params, intermediates, char)
                return j + 1
            elif char == "\x1b":
                return j
            elif char in "\x18\x1a":
                return j + 1
            elif char < " ":
                self._control(char)
            elif char != "\x7f":
                return j
            j += 1
        self._pending = "\x1b[" + body
        return n

    def _control(self, char: str) -> None:
        handler = self._controls.get(char)
        if handler is not None:
            handler()

    def _esc(self, intermediates: str, final: str) -> None:
        screen = self.screen
        if not intermediates:
            if (step := _SCREEN_ESCAPES.get(final)) is not None:
                step(screen)
            elif final == "E":
                self._next_line()
            elif final in "=>":  # DECKPAM, DECKPNM
                (screen.set_mode if final == "=" else screen.reset_mode)(KEYPAD, private=True)
        elif intermediates in "()":
            screen.define_charset(final, intermediates)
        elif intermediates == "#" and final == "8":
            screen.alignment_display()
        # G2/G3 designation, ESC % (charset coding system), ESC SP F ...: ignored.

    def _bell(self) -> None:
        self.signals.append(_BELL)

    def _next_line(self) -> None:
        """NEL."""
        self.screen.carriage_return()
        self.screen.index()

    def _csi(self, marker: str, params: str, intermediates: str, final: str) -> None:
        screen = self.screen
        if final == "m" and not marker and not intermediates:
            screen.apply_sgr(params)
            return
        args = int_params(params)
        if intermediates:
            if intermediates == " " and final == "q":
                screen.cursor_style = args[0] if args and 0 <= args[0] <= 6 else 0
            elif intermediates == "!" and final == "p":
                screen.soft_reset()
            return
        if marker:
            if marker == "?":
                if final == "h":
                    screen.set_mode(*args, private=True)
                elif final == "l":
                    screen.reset_mode(*args, private=True)
                elif final == "J":
                    screen.erase_in_display(args[0] if args else 0)
                elif final == "K":
                    screen.erase_in_line(args[0] if args else 0)
            elif marker == ">" and final == "c" and (not args or args[0] == 0):
                self._send(DA2_REPLY)
            # kitty keyboard (>u <u =u ?u), xterm >m (modifyOtherKeys), >q, DA3: ignored.
            return
        if (counted := _COUNTED.get(final)) is not None:
            if final != "T" or len(args) <= 1:  # CSI > 1 params T: xterm's mouse tracking
                counted(screen, args[0] if args else 0)
        elif (paired := _PAIRED.get(final)) is not None:
            paired(screen, *args[:2])
        elif final == "h":
            screen.set_mode(*args)
        elif final == "l":
            screen.reset_mode(*args)
        elif final == "s":
            screen.save_cursor()
        elif final == "u":
            screen.restore_cursor()
        elif final == "c":
            self._device_attributes(args)
        elif final == "n":
            self._device_status(args)
        elif final == "t":
            self._window_ops(args)

    def _send(self, reply: str) -> None:
        if self._reply is not None:
            self._reply(reply.encode())

    def _device_attributes(self, args: tuple[int, ...]) -> None:
        if not args or args[0] == 0:
            self._send(DA1_REPLY)

    def _device_status(self, args: tuple[int, ...]) -> None:
        code = args[0] if args else 0
        if code == 5:
            self._send("\x1b[0n")
        elif code == 6:
            screen = self.screen
            row = screen.cursor.y + 1
            if DECOM in screen.mode and screen.margins is not None:
                row -= int(screen.margins.top)
            col = min(screen.cursor.x, screen.columns - 1) + 1
            self._send(f"\x1b[{row};{col}R")

    def _window_ops(self, args: tuple[int, ...]) -> None:
        """XTWINOPS: only the title stack (22/23; 0 = both, 2 = title)."""
        if not args or args[0] not in (22, 23) or (len(args) > 1 and args[1] not in (0, 2)):
            return
        screen = self.screen
        if args[0] == 22:
            screen.title_stack.append(screen.title)
            del screen.title_stack[:-TITLE_STACK_LIMIT]
        elif screen.title_stack:
            screen.title = screen.title_stack.pop()

    # -- control strings -----------------------------------------------------

    def _start_string(self, introducer: str) -> None:
        kind = _STRING_KINDS[introducer]
        self._string = kind
        self._string_len = 0
        self._string_limit = OSC_LIMIT if kind == "osc" else BIG_STRING_LIMIT
        self._string_kept = []
        self._string_kept_len = 0

    def _keep(self, chunk: str) -> None:
        self._string_len += len(chunk)
        if self._string == "osc" and self._string_kept_len < OSC_LIMIT:
            chunk = chunk[: OSC_LIMIT - self._string_kept_len]
            self._string_kept.append(chunk)
            self._string_kept_len += len(chunk)

    def _consume_string(self, text: str, i: int) -> int:
        """Swallow a control string's payload from ``i``; returns where to go on."""
        n = len(text)
        m = (_OSC_END if self._string == "osc" else _STRING_END).search(text, i)
        end = n if m is None else m.start()
        if end - i > self._string_limit - self._string_len and self._string == "osc":
            prefix = "".join(self._string_kept) + text[i : i + 3]
            if prefix.startswith("52;"):  # clipboard: big by design
                self._string_limit = BIG_STRING_LIMIT
        room = self._string_limit - self._string_len
        if end - i > room:
            self._keep(text[i : i + room])
            self._string = ""  # unterminated for too long: the rest is output again
            return i + room
        self._keep(text[i:end])
        if m is None:
            return n
        char = text[end]
        if char == "\x1b":
            if end + 1 >= n:
                self._pending = "\x1b"  # ST or a new sequence: decided by the next feed
                return n
            if text[end + 1] == "\\":
                self._finish_string()
                return end + 2
            self._string = ""  # any other ESC abandons the string and starts anew
            return end
        if char in "\x07\x9c":
            self._finish_string()
        else:
            self._string = ""  # CAN/SUB cancel
        return end + 1

    def unfinished(self) -> str:
        """The sequence this parser is in the middle of, as text that puts a fresh
        parser in the same state: a control string's introducer (an OSC with what it
        kept, when that is all of it so far), then any incomplete escape sequence."""
        carried = ""
        if self._string:
            introducer = _STRING_INTRODUCERS[self._string]
            complete = self._string_len == self._string_kept_len
            carried = introducer + ("".join(self._string_kept) if complete else "")
        return carried + self._pending

    def _finish_string(self) -> None:
        if self._string == "osc":
            number, sep, value = "".join(self._string_kept).partition(";")
            if sep and number in ("0", "2"):
                self.screen.title = CONTROLS.sub("", value)
            elif sep and number == "8":
                self.screen.set_link(value)
            elif sep and number in _SIGNAL_OSCS:
                signal = osc_signal(number, value)
                if signal is not None:
                    self.signals.append(signal)
        self._string = ""
