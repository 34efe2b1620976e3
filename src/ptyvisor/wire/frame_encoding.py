"""Writing an activity frame: the half of the wire format the hooks need.

`ptyvisor.wire.frames` documents the format and reads frames (in the server); this
module builds them, and is what a hook imports on every tool call. So it imports
neither ``re`` nor ``enum`` (through `frames`' patterns and reasons, or
:mod:`base64`) nor :mod:`json` (`cjson` instead): together those were a third of a
hook's run. Its checks of the
session id and nonce are the same rules as `frames`' patterns, written as set tests
(tests/wire/test_frames.py checks that they agree).
"""

from __future__ import annotations

import binascii

from ptyvisor.wire import cjson

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from collections.abc import Mapping

FRAME_PREFIX = b"\x1b]7733;"
FRAME_TAG = "ptyvisor"
FRAME_VERSION = "1"
MAX_FRAME_BYTES = 65536
MAX_SESSION_ID = 64
SESSION_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
NONCE_CHARS = frozenset("0123456789abcdef")
NONCE_LENGTH = 32
TERMINATORS = (b"\x07", b"\x1b\\")
_URLSAFE = bytes.maketrans(b"+/", b"-_")


def is_session_id(value: str) -> bool:
    """``[A-Za-z0-9_-]{1,64}``, as `frames.SESSION_ID_PATTERN` says."""
    return 0 < len(value) <= MAX_SESSION_ID and SESSION_ID_CHARS.issuperset(value)


def is_nonce(value: str) -> bool:
    """32 lowercase hex characters, as `frames.NONCE_PATTERN` says."""
    return len(value) == NONCE_LENGTH and NONCE_CHARS.issuperset(value)


def encode_frame(
    session_id: str,
    nonce: str,
    payload: Mapping[str, object],
    *,
    terminator: bytes = b"\x07",
) -> bytes:
    """Build a complete frame (prefix through terminator) for ``payload``.

    Raises ValueError for malformed ids, a bad terminator, a payload that is
    not JSON-serialisable, or a frame over MAX_FRAME_BYTES.  Messages never
    include the nonce.
    """
    if not is_session_id(session_id):
        raise ValueError("session id must match [A-Za-z0-9_-]{1,64}")
    if not is_nonce(nonce):
        raise ValueError("nonce must be 32 lowercase hex characters")
    if terminator not in TERMINATORS:
        raise ValueError("terminator must be BEL or ESC \\")
    try:
        text = cjson.dumps(
            dict(payload), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
        raw = text.encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise ValueError(f"payload is not encodable as JSON: {exc}") from None
    # base64url without padding; binascii, not base64 (which imports re).
    encoded = binascii.b2a_base64(raw, newline=False).translate(_URLSAFE).rstrip(b"=")
    frame = b";".join(
        (
            FRAME_PREFIX + FRAME_TAG.encode("ascii"),
            FRAME_VERSION.encode("ascii"),
            session_id.encode("ascii"),
            nonce.encode("ascii"),
            encoded + terminator,
        )
    )
    if len(frame) > MAX_FRAME_BYTES:
        raise ValueError(f"frame is {len(frame)} bytes, over the {MAX_FRAME_BYTES} limit")
    return frame
