"""Tests for the v1 activity frame wire format."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.wire.frames import (
    FRAME_PREFIX,
    MAX_FRAME_BYTES,
    NONCE_PATTERN,
    SESSION_ID_PATTERN,
    Rejected,
    RejectReason,
    decode_frame,
    encode_frame,
    new_nonce,
)
from ptyvisor.wire.scanner import FrameScanner

SID = "sess-01_A"
NONCE = "0123456789abcdef0123456789abcdef"
OTHER_NONCE = "fedcba9876543210fedcba9876543210"
PAYLOAD: dict[str, object] = {"type": "activity", "phase": "working", "at": 1_700_000_000_000}


def b64(raw: bytes) -> bytes:
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


def body(
    payload: bytes | None = None,
    *,
    tag: bytes = b"ptyvisor",
    version: bytes = b"1",
    sid: bytes = SID.encode(),
    nonce: bytes = NONCE.encode(),
) -> bytes:
    """A hand-built frame body; ``payload`` is the already-encoded field."""
    if payload is None:
        payload = b64(json.dumps(PAYLOAD).encode())
    return b";".join((tag, version, sid, nonce, payload))


def body_of(frame: bytes) -> bytes:
    """Extract the body the way ptyvisor does: through the scanner."""
    result = FrameScanner().feed(frame)
    assert result.output == b""
    assert len(result.frames) == 1
    return result.frames[0]


# -- round trips ---------------------------------------------------------------


@pytest.mark.parametrize("terminator", [b"\x07", b"\x1b\\"])
def test_round_trip(terminator: bytes) -> None:
    frame = encode_frame(SID, NONCE, PAYLOAD, terminator=terminator)
    assert frame.startswith(FRAME_PREFIX + b"ptyvisor;1;" + SID.encode() + b";")
    assert frame.endswith(terminator)
    assert decode_frame(body_of(frame), SID, NONCE) == PAYLOAD


def test_encoding_is_compact_unpadded_base64url_of_utf8_json() -> None:
    payload = {"reason": "café ✓", "n": [1, 2]}
    frame = encode_frame(SID, NONCE, payload)
    encoded = frame[len(FRAME_PREFIX) :].split(b";")[4][:-1]
    assert b"=" not in encoded
    raw = base64.urlsafe_b64decode(encoded + b"=" * (-len(encoded) % 4))
    assert raw == '{"reason":"café ✓","n":[1,2]}'.encode()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(
    sid=st.from_regex(SESSION_ID_PATTERN, fullmatch=True),
    payload=st.dictionaries(st.text(), json_values, max_size=6),
)
def test_round_trip_property(sid: str, payload: dict[str, object]) -> None:
    frame = encode_frame(sid, NONCE, payload)
    assert b"\x07" not in frame[:-1]
    assert b"\x1b" not in frame[1:]
    assert decode_frame(body_of(frame), sid, NONCE) == payload


@given(st.binary(max_size=200))
def test_decode_never_raises(data: bytes) -> None:
    result = decode_frame(data, SID, NONCE)
    assert isinstance(result, Rejected)


@given(st.binary(max_size=200))
def test_decode_never_raises_on_authentic_garbage_payload(data: bytes) -> None:
    result = decode_frame(body(data), SID, NONCE)
    assert isinstance(result, Rejected | dict)


def test_new_nonce() -> None:
    a, b = new_nonce(), new_nonce()
    assert NONCE_PATTERN.fullmatch(a)
    assert a != b


# -- rejection reasons ---------------------------------------------------------


@pytest.mark.parametrize(
    ("frame_body", "reason"),
    [
        (body(nonce=OTHER_NONCE.encode()), RejectReason.NONCE),
        (body(sid=b"other-session"), RejectReason.SESSION),
        (body(version=b"2"), RejectReason.VERSION),
        (body(version=b"10"), RejectReason.VERSION),
        (body(version=b"x"), RejectReason.MALFORMED),
        (body(version=b""), RejectReason.MALFORMED),
        (body(tag=b"notours"), RejectReason.MALFORMED),
        (body() + b";extra", RejectReason.MALFORMED),
        (b";".join(body().split(b";")[:4]), RejectReason.MALFORMED),
        (b"ptyvisor", RejectReason.MALFORMED),
        (b"", RejectReason.MALFORMED),
        (body(sid=b"bad id"), RejectReason.MALFORMED),
        (body(sid=b"x" * 65), RejectReason.MALFORMED),
        (body(sid=b""), RejectReason.MALFORMED),
        (body(nonce=NONCE.upper().encode()), RejectReason.MALFORMED),
        (body(nonce=NONCE[:-1].encode()), RejectReason.MALFORMED),
        (body(b"not base64!"), RejectReason.ENCODING),
        (body(b"eyJhIjox+Q"), RejectReason.ENCODING),  # standard (not url) alphabet
        (body(b"eyJhIjoxfQ=="), RejectReason.ENCODING),  # padded
        (body(b"eyJhIjoxfQ="), RejectReason.ENCODING),
        (body(b"eyJhIjoxfQa"), RejectReason.ENCODING),  # impossible length
        (body(b"eyJhIjoxfR"), RejectReason.ENCODING),  # non-canonical trailing bits
        (body(b64(b'{"a":"\xff"}')), RejectReason.ENCODING),  # not UTF-8
        (body(b64(b'{"a":1')), RejectReason.ENCODING),  # bad JSON
        (body(b64(b"[1,2]")), RejectReason.ENCODING),  # not an object
        (body(b64(b'"text"')), RejectReason.ENCODING),
        (body(b64(b'{"a":NaN}')), RejectReason.ENCODING),
        (body(b64(b"[" * 20000 + b"]" * 20000)), RejectReason.ENCODING),  # recursion
        (body(b""), RejectReason.ENCODING),
        (b"x" * MAX_FRAME_BYTES, RejectReason.OVERSIZED),
    ],
)
def test_rejections(frame_body: bytes, reason: RejectReason) -> None:
    assert decode_frame(frame_body, SID, NONCE) == Rejected(reason)


def test_valid_reference_body() -> None:
    assert decode_frame(body(b"eyJhIjoxfQ"), SID, NONCE) == {"a": 1}


@pytest.mark.parametrize(
    ("frame_body", "reason"),
    [
        # Version is checked before the session, the session before the nonce,
        # and nothing about the payload is looked at without the right nonce.
        (body(version=b"2", sid=b"other", nonce=OTHER_NONCE.encode()), RejectReason.VERSION),
        (body(sid=b"other", nonce=OTHER_NONCE.encode()), RejectReason.SESSION),
        (body(b"!!", nonce=OTHER_NONCE.encode()), RejectReason.NONCE),
        (body(b"!!", tag=b"x", version=b"2"), RejectReason.MALFORMED),
    ],
)
def test_check_order(frame_body: bytes, reason: RejectReason) -> None:
    assert decode_frame(frame_body, SID, NONCE) == Rejected(reason)


def test_decode_with_unusual_expected_values_does_not_raise() -> None:
    assert decode_frame(body(), "sess-é", NONCE) == Rejected(RejectReason.SESSION)
    assert decode_frame(body(), SID, "\udcff") == Rejected(RejectReason.NONCE)


def test_rejected_repr_and_reasons_leak_no_frame_data() -> None:
    result = decode_frame(body(nonce=OTHER_NONCE.encode()), SID, NONCE)
    assert isinstance(result, Rejected)
    for text in (repr(result), str(result)):
        assert NONCE not in text
        assert OTHER_NONCE not in text
    assert str(RejectReason.NONCE) == "nonce"
    assert {r.value for r in RejectReason} == {
        "malformed",
        "version",
        "session",
        "nonce",
        "encoding",
        "oversized",
        "invalid",
        "future",
        "native_id",
        "unterminated",
    }


# -- encode errors -------------------------------------------------------------


def test_encode_oversized_raises_without_leaking_nonce() -> None:
    with pytest.raises(ValueError, match="limit") as info:
        encode_frame(SID, NONCE, {"reason": "x" * MAX_FRAME_BYTES})
    assert NONCE not in str(info.value)
    assert NONCE not in repr(info.value)


def test_encode_largest_frame_fits_exactly() -> None:
    overhead = len(encode_frame(SID, NONCE, {"r": ""}))
    # base64 grows 3 -> 4; pick a length whose encoding lands exactly on the limit.
    room = (MAX_FRAME_BYTES - overhead) // 4 * 3
    frame = encode_frame(SID, NONCE, {"r": "x" * room})
    assert len(frame) <= MAX_FRAME_BYTES
    assert decode_frame(body_of(frame), SID, NONCE) == {"r": "x" * room}


@pytest.mark.parametrize(
    ("sid", "nonce", "payload", "terminator"),
    [
        ("bad id", NONCE, PAYLOAD, b"\x07"),
        ("", NONCE, PAYLOAD, b"\x07"),
        ("x" * 65, NONCE, PAYLOAD, b"\x07"),
        ("ok\n", NONCE, PAYLOAD, b"\x07"),
        (SID, NONCE.upper(), PAYLOAD, b"\x07"),
        (SID, NONCE + "\n", PAYLOAD, b"\x07"),
        (SID, NONCE, PAYLOAD, b"\x1b"),
        (SID, NONCE, {"x": object()}, b"\x07"),
        (SID, NONCE, {"x": float("nan")}, b"\x07"),
        (SID, NONCE, {"x": "\ud800"}, b"\x07"),
    ],
)
def test_encode_rejects_bad_input(
    sid: str, nonce: str, payload: dict[str, object], terminator: bytes
) -> None:
    with pytest.raises(ValueError) as info:
        encode_frame(sid, nonce, payload, terminator=terminator)
    assert NONCE not in str(info.value)
