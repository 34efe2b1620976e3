"""A headless terminal per session: parses program output, snapshots the screen.

Built on pyte 0.8.2's `Screen` (subclassed) with our own parser. pyte faults
fixed here, each with a test in ``tests/terminal/`` (``test_screen.py``, ``test_parser.py``):

1. **Zero-width non-combining characters drop the rest of the run.** pyte's
   ``draw`` stops at any zero-width character that is not a Unicode combining
   mark (ZWJ U+200D, VS16 U+FE0F in "⚠️", ...). Our ``draw`` attaches every
   zero-width character to the previous cell (skipping a wide character's right
   half) and carries on; non-printable characters are skipped, not fatal.
2. **No alternate screen.** ``CSI ?47/1047/1049 h/l`` now swap in a separate,
   fresh buffer and back, leaving the main screen untouched; 1049 also saves and
   restores the cursor (xterm semantics: one DECSC slot per buffer). Scrollback
   is collected from the main screen only.
3. **OSC misparsed and unbounded.** pyte keys OSC on its first character (so
   ``OSC 133;A`` set the title) and an unterminated OSC swallowed all later
   output. We read the number up to ``;``, accept BEL, ``ESC \\`` and C1 ST as
   terminators, set the title only for 0 and 2 (1, the icon name, and all other
   numbers are ignored), and abandon an unterminated string on the next ESC, CAN
   or SUB, or once it exceeds a bound (4096 characters; 8 Mi for the big
   payloads of OSC 52 clipboard and of DCS/APC graphics), so later output shows.
4. **DCS, APC, PM and SOS payloads drawn as text.** They are consumed silently
   (same terminators and bounds as OSC).

Signals (`TerminalSignal`, taken with `HeadlessTerminal.take_signals`): what any
program's output says about its activity, which the session turns into inferred
activity (see `activity`). Notifications (OSC 9 text, OSC 777;notify, OSC 99) and a
bare BEL (one that ends an OSC is not a bell), progress (OSC 9;4), and shell
integration marks (OSC 133 A/B prompt, C command, D done). They are only noticed:
the sequences themselves stay in the output, as any other.

Also handled: colon SGR sub-parameters (``38:2::r:g:b``, ``4:3``) and dim,
hidden and overline; 256-colour indices kept apart from truecolor;
``CSI S``/``CSI T`` scroll (SU feeds scrollback like a line feed does);
``CSI s``/``CSI u`` save/restore; kitty keyboard ``CSI >u``/``<u``/``=u``/``?u``
and xterm ``CSI >...m`` ignored instead of misread as SGR; REP (``CSI b``, used by
ncurses); CHT/CBT; DEC special graphics (``ESC ( 0``, SO/SI) in UTF-8 mode;
DECSTR; title push/pop (``CSI 22/23 t``, used by vim); DECSCUSR; ED 3 clears
scrollback instead of the screen; DECCOLM is ignored (as xterm does by default)
instead of resizing the screen to 132 columns; xterm's pending-wrap rules (a
wide character that does not fit wraps whole; LF and vertical moves disarm the
pending wrap); overwriting half of a wide character blanks the other half;
erasing uses only the background colour (BCE, as xterm/tmux/xterm.js); cursor
movement outside the scrolling region is bounded by the screen, not the
region; DECRC clamps into the region only in origin mode and no longer restores
visibility; ``delete_lines`` no longer keeps a line that should have moved up;
ICH/DCH/DECALN keep wide characters whole; reverse video (DECSCNM) is a flag
restored by the snapshot instead of being baked into every cell; VPA in origin
mode without margins no longer trips an assertion.

The page draws with xterm.js, so where xterm.js and xterm differ this terminal does
as xterm.js does, and a cold attach shows what the live view showed (issue 25; the
differential test in ``tests/terminal/xterm/`` draws both into xterm.js itself, and
the screen's, parser's and snapshot's tests pin each rule): combining marks keep the
program's code points; ``38:2:a:r:g`` reads ``a`` as the colour space; in the
pending-wrap state EL/ED 0, tabs, ``?7l`` and DECSC keep it (and the last character)
while ICH, DCH and ECH leave it; after any control or sequence REP repeats nothing
and a combining mark takes a cell of its own; rows that scroll in (LF, RI, IL, DL, a
new alternate screen, but not SU/SD) take the background colour; a scrolling region
at the top of the main screen feeds the scrollback; tab stops include column 0 and a
wider screen gets stops from the last one left of its edge; each screen keeps its own
region and tab stops; the main screen's saved cursor row moves up with the text as
lines scroll into the scrollback (while it has room); a taller screen takes rows back
from the scrollback only with the cursor on the bottom row; DECRC leaves origin mode,
and CUP past the region in origin mode stops at its edge; with autowrap off, printing
in the last column leaves the cursor past it, as the pending wrap does, and a wide
character that does not fit is dropped. What still differs:
xterm.js's DECRC restores the character set in use but not the G0/G1 designations;
and xterm.js reflows wrapped lines when the width changes, which this terminal does
not (``resize``).

Speed: instead of pyte's per-character generator, complete escape sequences are
matched with one regular expression and printable runs go to ``draw`` whole; a
run of one-cell characters (found with a regex built from the width table) is
stored with a single ``dict.update`` of cached cells. Only a
sequence that is split across feeds or has controls embedded takes a slower
per-character path. Scrollback lines are captured in ``index`` (full-screen
region, main screen) into a bounded deque instead of pyte's slow HistoryScreen.
Whole lines of printable ASCII and SGR after a CR LF (a log, a build, a flood) go
to `plain_lines.draw` together: each line that starts on the blank bottom row is
built as one row and the screen scrolls once per batch, not once per line feed; a
row that goes straight into the scrollback is kept as its runs (`PlainRow`).
A big batch of plain lines is fast-forwarded: what would only scroll out of the
scrollback is not parsed at all (`ptyvisor.terminal.fast_forward`, exact).

How far speed can go in Python: ``scripts/bench_all.py`` row 5 prints a floor, the
parser's own regexes tokenising the bytes with one empty call per token and no
screen at all. On a TUI-like stream that floor is under half of @xterm/headless's
rate (JIT-compiled JavaScript), and this terminal is a tenth of it: dispatch and
cell work cost far more than tokenising. What is left to win is parsing less (the
fast-forward above, the renderer's skipping of floods), not drawing faster.

The package, one concept per module, data flowing down the list:

- `parser`: decoded output to screen calls (and replies to queries);
- `screen`: the grid: cells, cursor, modes, the alternate screen;
- `rows`: what rows are made of (sparse cells, runs, the pens that make cells);
- `scrollback`: the bounded history above the screen, each row drawn once;
- `plain_lines`: the fast path that draws a flood's lines a batch at a time;
- `sgr`: graphic rendition parameters applied to a pen;
- `signals`: the activity hints read from OSC strings and BEL;
- `headless`: `HeadlessTerminal`, the face: bytes in, snapshots and text out.
"""

from ptyvisor.terminal.headless import HeadlessTerminal, TerminalModes, TerminalSnapshot
from ptyvisor.terminal.modes import MouseEncoding, MouseTracking
from ptyvisor.terminal.signals import (
    MAX_SIGNALS,
    SIGNAL_TEXT_CHARS,
    SignalKind,
    TerminalSignal,
    osc_signal,
)
from ptyvisor.terminal.snapshot import Cell

__all__ = [
    "MAX_SIGNALS",
    "SIGNAL_TEXT_CHARS",
    "Cell",
    "HeadlessTerminal",
    "MouseEncoding",
    "MouseTracking",
    "SignalKind",
    "TerminalModes",
    "TerminalSignal",
    "TerminalSnapshot",
    "osc_signal",
]
