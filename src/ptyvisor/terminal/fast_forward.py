"""Where a flood's screen can be rebuilt from: the bytes a terminal may leave unparsed.

A program that floods plain lines (logs, ``cat``, ``base64``) makes a screen and a
scrollback that depend only on its last lines: everything older scrolls out of the
bounded scrollback. Rendering the older lines is work thrown away, and it is most
of what a snapshot taken right after a flood costs.

`rebuild_point` finds, in a batch of output, a point ``p`` such that parsing
``data[:p]`` can be replaced by a few cheap effects with an *exact* result:

- ``data[:p]`` is plain: printable text (UTF-8, C1 controls excluded), CR, LF, TAB,
  BS and SGR sequences only, so it moves no cursor up, sets no mode, margin, title
  or charset, and raises no signal or reply;
- it holds at least ``rows`` line feeds, so the cursor ends on the bottom row, and
  ends with CR LF, so at column 0;
- what follows ``p`` is plain up to at least ``rows + scrollback`` more line feeds,
  each of which scrolls the whole screen, so every line on the screen or in the
  scrollback at ``p`` has left the scrollback by the end of those.

What ``data[:p]`` still leaves behind is its graphic rendition (replayed from its last
plain SGR reset on); REP repeats nothing after its line feed (as in xterm.js). The
terminal applies that and scrolls its screen blank, then parses ``data[p:]`` as usual
(`HeadlessTerminal.feed`). The result is cell for cell what parsing it all gives:
the differential tests in ``tests/terminal/test_fast_forward.py`` check it on random and real
streams. A full-screen program's output is never plain (it moves the cursor), so a
TUI redraw is never skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_BYTES = 64 * 1024
"""Smaller batches are parsed whole: finding a point would save too little."""

_NOT_PLAIN = re.compile(
    # One byte from a single class first, so the engine skips text at its fast
    # charset scan (2.5x the speed of three alternatives tried at every byte), then:
    rb"[\x00-\x07\x0b\x0c\x0e-\x1a\x1b\x1c-\x1f\x7f\xc2](?:"
    rb"(?<![\x1b\xc2])"  # a control but BS, TAB, LF, CR and ESC
    rb"|(?<=\xc2)[\x80-\x9f]"  # a C1 control, UTF-8 encoded
    rb"|(?<=\x1b)(?!\[[0-9:;]*m)"  # any escape sequence but SGR
    rb")"
)
_PLAIN_SGR = re.compile(rb"\x1b\[([0-9:;]*)m")
_RESETS = (b"\x1b[0m", b"\x1b[m")
CRLF_TRIES = 64
"""Line feeds without a CR before them tried before giving up."""


@dataclass(frozen=True, slots=True)
class RebuildPoint:
    start: int
    """Where the skipped part begins: ``data[:start]`` is parsed first, as usual."""
    offset: int
    """Where parsing resumes."""
    sgr: list[str]
    """The SGR parameters to apply, in order, for the rendition at ``offset``."""


def rebuild_point(data: bytes, *, rows: int, scrollback: int) -> RebuildPoint | None:
    """The longest stretch of ``data`` that may be left unparsed (see the module
    docstring), or None when there is none worth taking.

    The caller parses ``data[:start]``, and then must be at a clean boundary (no
    partial UTF-8 character or escape sequence pending, full-screen scrolling on
    the main screen) to apply the point; otherwise it parses everything."""
    if len(data) < MIN_BYTES or data.count(b"\n") <= 2 * rows + scrollback:
        return None  # too few lines (a TUI's output): not worth looking for a plain run
    begin, end = _longest_plain_run(data)
    if begin:  # the run starts inside whatever sequence ended before it
        begin = data.find(b"\n", begin, end) + 1
        if not begin:
            return None
    # The line feed that ends the skipped part has rows + scrollback more after it.
    lf = end
    for _ in range(rows + scrollback + 1):
        lf = data.rfind(b"\n", begin, lf)
        if lf < 0:
            return None
    for _ in range(CRLF_TRIES):
        if lf > begin and data[lf - 1] == 0x0D:
            break
        lf = data.rfind(b"\n", begin, lf)
        if lf < 0:
            return None
    else:
        return None
    offset = lf + 1
    if data.count(b"\n", begin, offset) < rows:
        return None
    reset = max(data.rfind(reset, begin, offset) for reset in _RESETS)
    sgr = [m.group(1).decode("ascii") for m in _PLAIN_SGR.finditer(data, max(reset, begin), offset)]
    return RebuildPoint(begin, offset, sgr)


def _longest_plain_run(data: bytes) -> tuple[int, int]:
    """[begin, end) of the longest stretch without a byte that starts anything but
    text or SGR; costs a regex step per such byte, far less than parsing it."""
    best = (0, 0)
    begin = 0
    for found in _NOT_PLAIN.finditer(data):
        if found.start() - begin > best[1] - best[0]:
            best = (begin, found.start())
        begin = found.end()
    if len(data) - begin > best[1] - best[0]:
        best = (begin, len(data))
    return best
