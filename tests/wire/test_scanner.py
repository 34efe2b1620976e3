"""Tests for the OSC 7733 frame scanner.

The core properties compare the incremental scanner, fed in arbitrary pieces,
against a deliberately naive whole-input reference model of the rules.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ptyvisor.wire.frames import FRAME_PREFIX, MAX_FRAME_BYTES
from ptyvisor.wire.scanner import FrameScanner, ScanResult, find_prefix

BEL = 0x07
ESC = 0x1B
FRAME_BODY = b"ptyvisor;1;sess;0123456789abcdef0123456789abcdef;eyJ0eXBlIjoiYWN0aXZpdHkifQ"


@dataclass
class Outcome:
    output: bytes
    frames: list[bytes]
    dropped: int
    held: int


def reference(data: bytes, max_frame: int, *, eof: bool) -> Outcome:
    """Byte-at-a-time model of the scanner rules over a complete input.

    With ``eof=False`` it reports what an incremental scanner must still hold
    after seeing ``data``; with ``eof=True`` it applies :meth:`FrameScanner.flush`
    semantics (partial prefix passed through, unfinished frame dropped).
    """
    out = bytearray()
    frames: list[bytes] = []
    dropped = 0
    n = len(data)
    i = 0
    while i < n:
        if not data.startswith(FRAME_PREFIX, i):
            if FRAME_PREFIX.startswith(data[i:]) and not eof:
                return Outcome(bytes(out), frames, dropped, n - i)
            out.append(data[i])
            i += 1
            continue
        j = i + len(FRAME_PREFIX)
        while True:
            size = j - i
            if size == max_frame:  # full without a terminator
                dropped += 1
                i = j
                break
            if j == n:  # unfinished frame at end of input
                if not eof:
                    return Outcome(bytes(out), frames, dropped, n - i)
                dropped += 1
                i = n
                break
            if data[j] == BEL:
                frames.append(data[i + len(FRAME_PREFIX) : j])
                i = j + 1
                break
            if data[j] == ESC:
                if size == max_frame - 1:  # no room for ST: drop, keep the ESC
                    dropped += 1
                    i = j
                    break
                if j + 1 == n:
                    if not eof:
                        return Outcome(bytes(out), frames, dropped, n - i)
                    dropped += 1
                    i = n
                    break
                if data[j + 1] == ord("\\"):
                    frames.append(data[i + len(FRAME_PREFIX) : j])
                    i = j + 2
                    break
                dropped += 1  # ESC + other aborts; rescan at the ESC
                i = j
                break
            j += 1
    return Outcome(bytes(out), frames, dropped, 0)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """Split ``data`` at the given offsets (any order, duplicates allowed)."""
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def scan_all(
    chunks: list[bytes], max_frame: int = MAX_FRAME_BYTES, *, flush: bool = True
) -> Outcome:
    scanner = FrameScanner(max_frame)
    out = bytearray()
    frames: list[bytes] = []
    dropped = 0
    results = [scanner.feed(c) for c in chunks]
    if flush:
        results.append(scanner.flush())
    for r in results:
        out += r.output
        frames += r.frames
        dropped += r.dropped
    return Outcome(bytes(out), frames, dropped, scanner.held)


def frame(body: bytes = FRAME_BODY, terminator: bytes = b"\x07") -> bytes:
    return FRAME_PREFIX + body + terminator


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


# -- strategies ---------------------------------------------------------------

# Tokens that make prefix lookalikes, terminators, aborts and UTF-8 likely.
TOKENS = [
    b"\x1b",
    b"]",
    b"7",
    b"3",
    b";",
    b"\x07",
    b"\\",
    b"\x1b\\",
    b"\x1b]",
    b"\x1b]77",
    b"\x1b]7733",
    FRAME_PREFIX,
    b"\x1b[31m",
    b"\xc3\xa9",
    b"\xe2\x82\xac",
    b"abc",
    b"\r\n",
]
tricky_bytes = st.lists(
    st.one_of(st.sampled_from(TOKENS), st.binary(max_size=12)), max_size=40
).map(b"".join)
frame_bodies = st.binary(max_size=60).map(lambda b: b.replace(b"\x07", b"").replace(b"\x1b", b""))
cut_lists = st.lists(st.integers(min_value=0, max_value=10_000), max_size=30)


# -- basic behaviour ----------------------------------------------------------


def test_plain_chunk_is_returned_as_is() -> None:
    data = b"hello \x1b[31mworld\x1b[0m\r\n" * 100
    result = FrameScanner().feed(data)
    assert result.output is data
    assert result.frames == []
    assert result.dropped == 0


def test_chunk_ending_in_unrelated_escape_passes_through() -> None:
    scanner = FrameScanner()
    assert scanner.feed(b"abc\x1b[0").output == b"abc\x1b[0"
    assert scanner.held == 0


@pytest.mark.parametrize("terminator", [b"\x07", b"\x1b\\"])
def test_single_frame_extracted(terminator: bytes) -> None:
    result = FrameScanner().feed(b"before" + frame(terminator=terminator) + b"after")
    assert result == ScanResult(b"beforeafter", [FRAME_BODY], 0)


def test_empty_body() -> None:
    assert FrameScanner().feed(b"a\x1b]7733;\x07b") == ScanResult(b"ab", [b""], 0)


def test_frame_inside_csi_sequence() -> None:
    result = FrameScanner().feed(b"\x1b[3" + frame() + b"1mX")
    assert result == ScanResult(b"\x1b[31mX", [FRAME_BODY], 0)


def test_frame_inside_utf8_character() -> None:
    euro = "€".encode()
    data = euro[:1] + frame() + euro[1:2] + frame(terminator=b"\x1b\\") + euro[2:]
    result = FrameScanner().feed(data)
    assert result == ScanResult(euro, [FRAME_BODY, FRAME_BODY], 0)


def test_adjacent_frames() -> None:
    data = frame(b"a") + frame(b"b", b"\x1b\\") + frame(b"c")
    assert FrameScanner().feed(data) == ScanResult(b"", [b"a", b"b", b"c"], 0)


def test_body_is_reported_whatever_it_contains() -> None:
    # Validation is frames.decode_frame's job; the scanner only strips.
    assert FrameScanner().feed(frame(b"\x00junk;;\xff")).frames == [b"\x00junk;;\xff"]


def test_non_bytes_input_is_accepted() -> None:
    result = FrameScanner().feed(bytearray(b"x" + frame() + b"y"))
    assert result.output == b"xy"
    assert type(result.output) is bytes


def test_too_small_max_frame_rejected() -> None:
    with pytest.raises(ValueError):
        FrameScanner(len(FRAME_PREFIX) + 1)
    assert FrameScanner(len(FRAME_PREFIX) + 2).max_frame == len(FRAME_PREFIX) + 2


# -- splitting ----------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"\x1b[3" + frame() + b"1mX",
        b"ab\x1b]77" + frame(terminator=b"\x1b\\") + b"\x1b]7733x",
        frame(b"x") + frame(b"y") + b"\x1b]7733;abc\x1b[0mtail",
        b"\x1b\x1b]\x1b]7\x1b]7733;\x1b]7733;ok\x07\x1b",
    ],
)
def test_one_byte_at_a_time_matches_whole_input(data: bytes) -> None:
    assert scan_all(bytewise(data)) == scan_all([data])


def test_frame_split_across_every_boundary() -> None:
    data = b"pre" + frame(terminator=b"\x1b\\") + b"post"
    for cut in range(len(data) + 1):
        got = scan_all([data[:cut], data[cut:]])
        assert got == Outcome(b"prepost", [FRAME_BODY], 0, 0), cut


def test_prefix_lookalike_is_held_then_released_in_order() -> None:
    scanner = FrameScanner()
    first = scanner.feed(b"ab\x1b]77")
    assert first.output == b"ab"
    assert scanner.held == 4
    second = scanner.feed(b"x")
    assert second.output == b"\x1b]77x"
    assert scanner.held == 0


def test_held_prefix_followed_by_real_frame() -> None:
    scanner = FrameScanner()
    assert scanner.feed(b"\x1b]").output == b""
    result = scanner.feed(frame())
    assert result == ScanResult(b"\x1b]", [FRAME_BODY], 0)


def test_partial_prefix_grows_across_reads() -> None:
    scanner = FrameScanner()
    for i, byte in enumerate(bytewise(FRAME_PREFIX[:-1])):
        assert scanner.feed(byte).output == b""
        assert scanner.held == i + 1
    assert scanner.feed(b";").output == b""
    assert scanner.held == len(FRAME_PREFIX)
    assert scanner.feed(b"body\x07z") == ScanResult(b"z", [b"body"], 0)


def test_flush_releases_partial_prefix() -> None:
    scanner = FrameScanner()
    scanner.feed(b"x\x1b]7")
    assert scanner.flush() == ScanResult(b"\x1b]7", [], 0)
    assert scanner.held == 0


def test_flush_drops_unfinished_frame() -> None:
    scanner = FrameScanner()
    assert scanner.feed(b"x\x1b]7733;abc").output == b"x"
    assert scanner.flush() == ScanResult(b"", [], 1)
    assert scanner.held == 0
    assert scanner.feed(b"next").output == b"next"


# -- aborts and oversize ------------------------------------------------------


def test_esc_abort_resumes_at_the_esc() -> None:
    result = FrameScanner().feed(b"x\x1b]7733;abc\x1b[31mred")
    assert result == ScanResult(b"x\x1b[31mred", [], 1)


def test_esc_abort_where_esc_starts_a_new_frame() -> None:
    result = FrameScanner().feed(b"\x1b]7733;torn" + frame() + b"!")
    assert result == ScanResult(b"!", [FRAME_BODY], 1)


def test_esc_at_end_of_read_then_backslash() -> None:
    scanner = FrameScanner()
    assert scanner.feed(b"a\x1b]7733;body\x1b") == ScanResult(b"a", [], 0)
    assert scanner.held == len(FRAME_PREFIX) + 5
    assert scanner.feed(b"\\b") == ScanResult(b"b", [b"body"], 0)


def test_esc_at_end_of_read_then_other_byte() -> None:
    scanner = FrameScanner()
    scanner.feed(b"a\x1b]7733;body\x1b")
    assert scanner.feed(b"[0m") == ScanResult(b"\x1b[0m", [], 1)
    assert scanner.held == 0


def test_esc_at_end_of_read_then_new_frame() -> None:
    scanner = FrameScanner()
    scanner.feed(b"\x1b]7733;body\x1b")
    assert scanner.feed(b"]7733;ok\x07") == ScanResult(b"", [b"ok"], 1)


def test_oversized_frame_dropped_and_later_output_intact() -> None:
    body = b"A" * (MAX_FRAME_BYTES + 100)
    data = b"head" + FRAME_PREFIX + body + b"\x07tail" + frame()
    whole = FrameScanner().feed(data)
    leftover = len(FRAME_PREFIX) + len(body) - MAX_FRAME_BYTES
    assert whole == ScanResult(b"head" + b"A" * leftover + b"\x07tail", [FRAME_BODY], 1)
    assert scan_all(split(data, list(range(0, len(data), 4093)))) == scan_all([data])


def test_frame_of_exactly_max_size_is_accepted() -> None:
    max_frame = 32
    for terminator in (b"\x07", b"\x1b\\"):
        body = b"b" * (max_frame - len(FRAME_PREFIX) - len(terminator))
        data = frame(body, terminator)
        assert len(data) == max_frame
        assert scan_all(bytewise(data), max_frame) == Outcome(b"", [body], 0, 0)
        too_big = frame(body + b"b", terminator)
        assert scan_all([too_big], max_frame).frames == []


def test_esc_at_last_allowed_byte_is_not_swallowed() -> None:
    max_frame = 20
    body = b"b" * (max_frame - len(FRAME_PREFIX) - 1)
    # The ST would end one byte past the limit: drop, but keep the ESC.
    data = FRAME_PREFIX + body + b"\x1b[0m"
    assert scan_all([data], max_frame) == Outcome(b"\x1b[0m", [], 1, 0)
    assert scan_all(bytewise(data), max_frame) == Outcome(b"\x1b[0m", [], 1, 0)


def test_held_is_bounded_by_max_frame() -> None:
    scanner = FrameScanner(100)
    scanner.feed(FRAME_PREFIX)
    for _ in range(500):
        scanner.feed(b"z")
        assert scanner.held <= 100


# -- properties ---------------------------------------------------------------


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(data=tricky_bytes, cuts=cut_lists, max_frame=st.integers(min_value=9, max_value=48))
def test_matches_reference_model_for_any_split(
    data: bytes, cuts: list[int], max_frame: int
) -> None:
    scanner = FrameScanner(max_frame)
    out = bytearray()
    frames: list[bytes] = []
    dropped = 0
    seen = 0
    for chunk in split(data, cuts):
        r = scanner.feed(chunk)
        out += r.output
        frames += r.frames
        dropped += r.dropped
        seen += len(chunk)
        # Exactly what the model says is undecidable so far is held, no more.
        expected = reference(data[:seen], max_frame, eof=False)
        assert Outcome(bytes(out), frames, dropped, scanner.held) == expected
        assert scanner.held <= max_frame
    r = scanner.flush()
    final = Outcome(bytes(out + r.output), frames + r.frames, dropped + r.dropped, scanner.held)
    assert final == reference(data, max_frame, eof=True)


@settings(max_examples=200)
@given(data=tricky_bytes, cuts=cut_lists)
def test_bytewise_equals_whole_equals_any_split(data: bytes, cuts: list[int]) -> None:
    whole = scan_all([data])
    assert scan_all(bytewise(data)) == whole
    assert scan_all(split(data, cuts)) == whole


@settings(max_examples=300)
@given(
    noise=st.binary(max_size=300),
    bodies=st.lists(st.tuples(frame_bodies, st.booleans(), st.integers(min_value=0)), max_size=6),
    cuts=cut_lists,
)
def test_frames_inserted_anywhere_are_removed_exactly(
    noise: bytes, bodies: list[tuple[bytes, bool, int]], cuts: list[int]
) -> None:
    assume(FRAME_PREFIX not in noise)
    # Insert frames at arbitrary offsets (inside escapes, UTF-8, anything).
    offsets = sorted((pos % (len(noise) + 1), k) for k, (_, _, pos) in enumerate(bodies))
    data = bytearray()
    expected_frames = []
    last = 0
    for offset, k in offsets:
        body, use_st, _ = bodies[k]
        data += noise[last:offset] + frame(body, b"\x1b\\" if use_st else b"\x07")
        expected_frames.append(body)
        last = offset
    data += noise[last:]

    got = scan_all(split(bytes(data), cuts))
    assert got.output == noise
    assert got.frames == expected_frames
    assert got.dropped == 0


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from([b"]", b"\x1b", b"\x1b]", FRAME_PREFIX, b"7733;", b"a", b"[1m"])).map(
        b"".join
    ),
    st.integers(min_value=0, max_value=40),
)
def test_find_prefix_is_bytes_find(data: bytes, pos: int) -> None:
    # Many brackets that start no frame (past the tries), frames anywhere, any start.
    data = b"x]" * 20 + data if pos % 3 == 0 else data
    assert find_prefix(data, pos) == data.find(FRAME_PREFIX, pos)
