"""Incremental scanner that strips ptyvisor activity frames from PTY output.

Agent hooks report activity *in-band*: they write a private OSC sequence
(``ESC ] 7733 ; ... BEL``) into the session's PTY.  The bytes come back to us
mixed into the TUI's own output, so every such sequence must be cut out before
the output reaches terminals, snapshots or recordings.  This module only
*finds* the sequences; authenticating their bodies is :mod:`ptyvisor.wire.frames`'
job.  It is a pure protocol core (bytes in, results out, no I/O) in the style
of h11/websockets, and it never raises on bad input.

Rules (the reference for anyone changing this file):

* A frame starts with ``frames.FRAME_PREFIX`` = ``b"\\x1b]7733;"`` *wherever* it
  appears: a hook writes from another process, so its bytes can land inside one
  of the TUI's escape sequences or UTF-8 characters.  ``b"\\x1b[3" + frame +
  b"1m"`` therefore yields ``b"\\x1b[31m"``.  Nothing else is interpreted.
* A frame ends at BEL (0x07) or ST (``ESC \\``).  The *body* reported in
  :attr:`ScanResult.frames` is everything between the prefix and the
  terminator, exclusive.
* An ESC inside a body that is not followed by ``\\`` aborts the frame: the
  partial frame is dropped (counted in :attr:`ScanResult.dropped`) and
  scanning resumes *at* that ESC, so a torn frame never swallows the TUI's
  following escape sequences.
* A frame must fit, terminator included, in ``max_frame`` bytes counted from
  its ESC.  Otherwise its first ``max_frame`` bytes are dropped (counted) and
  scanning resumes in normal mode right after them.  An ESC at the last
  allowed byte (no room left for the ``\\`` of ST) also drops the frame, but
  scanning resumes *at* that ESC: a dropped frame never swallows an ESC.
* Every sequence with the prefix is removed, valid or not; its body is reported
  whatever it contains.
* Frames may be split across any number of :meth:`FrameScanner.feed` calls.
  Only two things are ever held back: a trailing *proper* prefix of
  ``FRAME_PREFIX`` (at most 7 bytes), released as soon as the next read proves
  it is not a frame, and an in-progress frame (at most ``max_frame`` bytes).
  Passthrough bytes always come out in their original order.  At EOF,
  :meth:`FrameScanner.flush` passes a held partial prefix through and counts
  an unfinished frame as dropped.
* Speed: normal output is scanned with ``bytes.find``/``bytes.rfind`` only;
  a chunk with no frame start and no trailing partial prefix is returned as
  the very same object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptyvisor.wire.frames import FRAME_PREFIX, MAX_FRAME_BYTES

__all__ = ["FrameScanner", "ScanResult"]

_PREFIX_LEN = len(FRAME_PREFIX)
_BACKSLASH = 0x5C
_BRACKET_TRIES = 16


def find_prefix(data: bytes, pos: int = 0) -> int:
    """``data.find(FRAME_PREFIX, pos)``, faster on what programs print.

    ``bytes.find`` steps through coloured text about a byte at a time for this
    needle (its skip test lets ``[``, digits and ``s`` through): 40 us per 64 KiB of
    log lines, a seventh of the whole output path. The ``]`` after the ESC is rare in
    terminal output, and a one-byte search runs at memchr speed (1.5 us). After a
    few ``]`` that start no frame (text full of brackets), the plain search takes
    over, so no input costs much more than it did."""
    hit = data.find(b"]", pos + 1)
    for _ in range(_BRACKET_TRIES):
        if hit < 0:
            return -1
        if data.startswith(FRAME_PREFIX, hit - 1):
            return hit - 1
        hit = data.find(b"]", hit + 1)
    return data.find(FRAME_PREFIX, hit - 1) if hit >= 0 else -1


@dataclass(slots=True)
class ScanResult:
    """What one :meth:`FrameScanner.feed` produced."""

    #: Passthrough bytes: the input with every OSC 7733 sequence removed.
    output: bytes
    #: Bodies of complete OSC 7733 sequences, in stream order.
    frames: list[bytes] = field(default_factory=list)
    #: OSC 7733 sequences dropped without a body (oversized or aborted).
    dropped: int = 0


class FrameScanner:
    """Stateful splitter of a PTY byte stream into passthrough output and frames.

    One instance per PTY.  Feed every read in order; call :meth:`flush` at EOF
    to release a held partial prefix.
    """

    __slots__ = ("_body", "_esc_pending", "_in_frame", "_max_frame", "_partial")

    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        if max_frame < _PREFIX_LEN + 2:
            # Smaller limits could not hold even an empty ST-terminated frame.
            raise ValueError(f"max_frame must be at least {_PREFIX_LEN + 2}")
        self._max_frame = max_frame
        # Normal mode: trailing proper prefix of FRAME_PREFIX from the last read.
        self._partial = b""
        # Frame mode: body bytes so far (the prefix itself is not stored).
        self._in_frame = False
        self._body = bytearray()
        # Frame mode: the previous read ended with an ESC inside the body.
        self._esc_pending = False

    @property
    def max_frame(self) -> int:
        """Largest frame (prefix through terminator) that is accepted."""
        return self._max_frame

    @property
    def held(self) -> int:
        """Bytes currently held back (partial prefix or in-progress frame)."""
        if self._in_frame:
            return _PREFIX_LEN + len(self._body) + self._esc_pending
        return len(self._partial)

    def feed(self, data: bytes | bytearray | memoryview) -> ScanResult:
        """Consume one read; return passthrough output and completed frames."""
        if type(data) is not bytes:  # copied once so slices and the result are bytes
            data = bytes(data)
        if not self._in_frame and not self._partial and find_prefix(data) < 0:
            # Fast path: nothing held and no frame start in this chunk; only a
            # trailing partial prefix (its ESC is the chunk's last) would need work.
            tail = data.rfind(b"\x1b", -(_PREFIX_LEN - 1))
            if tail < 0 or not FRAME_PREFIX.startswith(data[tail:]):
                return ScanResult(data)
        return self._scan(data)

    def flush(self) -> ScanResult:
        """End of stream: release a held partial prefix, drop an unfinished frame.

        A partial prefix is the TUI's own output (it can no longer become a
        frame), so it is passed through; an unterminated frame counts as
        dropped.
        """
        if self._in_frame:
            self._reset_frame()
            return ScanResult(b"", [], 1)
        out, self._partial = self._partial, b""
        return ScanResult(out)

    # -- internals -----------------------------------------------------------

    def _reset_frame(self) -> None:
        self._in_frame = False
        if self._body:
            self._body = bytearray()  # also releases a large buffer's memory
        self._esc_pending = False

    def _scan(self, data: bytes) -> ScanResult:
        """General path: resumes held state, then alternates normal/frame mode."""
        out: list[bytes] = []
        frames: list[bytes] = []
        dropped = 0
        n = len(data)
        pos = 0
        max_frame = self._max_frame

        while True:
            if not self._in_frame:
                if self._partial:
                    # Does the held partial prefix continue into this read?
                    held = self._partial
                    need = FRAME_PREFIX[len(held) :]
                    avail = data[pos : pos + len(need)]
                    if not need.startswith(avail):
                        # Proven not a frame.  Only held[0] is an ESC, so no
                        # other frame can start inside the held bytes.
                        out.append(held)
                        self._partial = b""
                    elif len(avail) < len(need):
                        self._partial = held + avail  # still ambiguous
                        pos = n
                        break
                    else:
                        self._partial = b""
                        self._in_frame = True
                        pos += len(need)
                        continue

                start = find_prefix(data, pos)
                if start < 0:
                    # Hold a trailing proper prefix.  FRAME_PREFIX contains a
                    # single ESC (its first byte), so only the last ESC of the
                    # tail can begin one.
                    tail_esc = data.rfind(b"\x1b", max(pos, n - (_PREFIX_LEN - 1)))
                    if tail_esc >= 0 and FRAME_PREFIX.startswith(data[tail_esc:]):
                        out.append(data[pos:tail_esc])
                        self._partial = data[tail_esc:]
                    else:
                        out.append(data[pos:])
                    pos = n
                    break
                out.append(data[pos:start])
                self._in_frame = True
                pos = start + _PREFIX_LEN
                if pos == n:
                    break
                continue

            # Frame mode.  Held length so far (prefix + body) counts toward max_frame.
            length = _PREFIX_LEN + len(self._body)
            if self._esc_pending:
                if pos >= n:
                    break
                if data[pos] == _BACKSLASH:
                    frames.append(bytes(self._body))
                    self._reset_frame()
                    pos += 1
                else:
                    # Abort: resume scanning AT the held ESC.
                    dropped += 1
                    self._reset_frame()
                    self._partial = b"\x1b"
                continue

            # Bytes this frame may still take, terminator included.
            budget = max_frame - length
            end = min(n, pos + budget)
            bel = data.find(b"\x07", pos, end)
            esc = data.find(b"\x1b", pos, end if bel < 0 else bel)
            if esc >= 0:
                body_end = esc
                if esc - pos == budget - 1:
                    # No room left for the '\\' of ST: too big.  Keep the ESC.
                    dropped += 1
                    self._reset_frame()
                    pos = esc
                    continue
                if esc + 1 >= n:
                    self._body += data[pos:esc]
                    self._esc_pending = True
                    pos = n
                    break
                if data[esc + 1] != _BACKSLASH:
                    dropped += 1
                    self._reset_frame()
                    pos = esc
                    continue
                next_pos = esc + 2
            elif bel >= 0:
                body_end = bel
                next_pos = bel + 1
            else:
                if end - pos == budget:
                    # max_frame bytes without a terminator: drop them.
                    dropped += 1
                    self._reset_frame()
                    pos = end
                    continue
                self._body += data[pos:]
                pos = n
                break

            if self._body:
                self._body += data[pos:body_end]
                frames.append(bytes(self._body))
            else:
                frames.append(data[pos:body_end])
            self._reset_frame()
            pos = next_pos

        if len(out) == 1:
            return ScanResult(out[0], frames, dropped)
        return ScanResult(b"".join(out), frames, dropped)
