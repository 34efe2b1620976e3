"""The hooks' side of the frame format: its id checks are the rules `frames` reads
with, written without ``re``; what it writes, `frames` reads back."""

from __future__ import annotations

import base64
import json

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.wire.frame_encoding import encode_frame, is_nonce, is_session_id
from ptyvisor.wire.frames import NONCE_PATTERN, SESSION_ID_PATTERN, decode_frame, new_nonce

NEAR_IDS = st.text(alphabet=st.sampled_from("aZ09_-f;\n é\x00"), max_size=70) | st.from_regex(
    SESSION_ID_PATTERN, fullmatch=True
)


@given(value=NEAR_IDS | st.text(max_size=70))
def test_the_id_checks_are_the_patterns(value: str) -> None:
    assert is_session_id(value) == (SESSION_ID_PATTERN.fullmatch(value) is not None)
    assert is_nonce(value) == (NONCE_PATTERN.fullmatch(value) is not None)


@given(
    value=st.text(alphabet="0123456789abcdefABCDEF\n", min_size=30, max_size=34)
    | st.from_regex(NONCE_PATTERN, fullmatch=True)
)
def test_the_nonce_check_is_the_pattern(value: str) -> None:
    assert is_nonce(value) == (NONCE_PATTERN.fullmatch(value) is not None)


@given(payload=st.dictionaries(st.text(max_size=8), st.text(max_size=300), max_size=6))
def test_what_it_writes_is_base64url_json_that_frames_reads(payload: dict[str, str]) -> None:
    nonce = new_nonce()
    frame = encode_frame("s-1", nonce, payload)
    body = frame[len(b"\x1b]7733;") : -1]
    encoded = body.rsplit(b";", 1)[1]
    assert b"=" not in encoded and b"+" not in encoded and b"/" not in encoded
    padded = encoded + b"=" * (-len(encoded) % 4)
    assert json.loads(base64.urlsafe_b64decode(padded)) == payload
    assert decode_frame(body, "s-1", nonce) == payload
