"""Activity frame wire format, version 1: encoding and authentication.

A frame is the OSC sequence a hook writes into its session's PTY::

    ESC ] 7733 ; ptyvisor ; 1 ; <session-id> ; <nonce> ; <payload> BEL

(``ESC \\`` may replace BEL).  ``<session-id>`` matches ``[A-Za-z0-9_-]{1,64}``,
``<nonce>`` is the session's 32-lowercase-hex secret and ``<payload>`` is
unpadded base64url of a UTF-8 JSON object, so a frame body never contains
``;``, BEL or ESC.  A whole frame is at most :data:`MAX_FRAME_BYTES`.

The nonce proves the frame came from a process that was given the session's
environment: anything else able to write to the PTY (e.g. ``cat``-ing a file
that happens to contain a frame) cannot forge activity.  It is compared in
constant time and never appears in exception messages or reprs.

Stdlib only and cheap to import: the ``ptyvisor emit`` hook command imports
this on every agent event.  Schema validation (pydantic) is the caller's job.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from enum import StrEnum

# Writing frames is frame_encoding's (cheap to import, for the hooks); reading is here.
from ptyvisor.wire.frame_encoding import (
    FRAME_PREFIX,
    FRAME_TAG,
    FRAME_VERSION,
    MAX_FRAME_BYTES,
    encode_frame,
)

__all__ = [
    "FRAME_PREFIX",
    "FRAME_TAG",
    "FRAME_VERSION",
    "MAX_FRAME_BYTES",
    "NONCE_PATTERN",
    "SESSION_ID_PATTERN",
    "RejectReason",
    "Rejected",
    "decode_frame",
    "encode_frame",
    "new_nonce",
]


#: Use with ``fullmatch`` (``match``/``$`` would accept a trailing newline).
SESSION_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
NONCE_PATTERN = re.compile(r"[0-9a-f]{32}")

_B_TAG = FRAME_TAG.encode("ascii")
_B_VERSION = FRAME_VERSION.encode("ascii")
_B_SESSION_ID = re.compile(rb"[A-Za-z0-9_-]{1,64}")
_B_NONCE = re.compile(rb"[0-9a-f]{32}")
_B_VERSION_TOKEN = re.compile(rb"[0-9]{1,9}")
_B_PAYLOAD = re.compile(rb"[A-Za-z0-9_-]*")
# Smallest possible overhead around a body: prefix + BEL.
_MAX_BODY_BYTES = MAX_FRAME_BYTES - len(FRAME_PREFIX) - 1


class RejectReason(StrEnum):
    """Why a frame body was not accepted (stable strings, fit for metrics/logs)."""

    MALFORMED = "malformed"  # wrong field count, tag or id syntax
    VERSION = "version"  # well-formed but unsupported version
    SESSION = "session"  # addressed to another session
    NONCE = "nonce"  # wrong secret: not from this session's hooks
    ENCODING = "encoding"  # bad base64url, UTF-8, JSON, or not a JSON object
    OVERSIZED = "oversized"  # frame larger than MAX_FRAME_BYTES
    INVALID = "invalid"  # authentic, but the caller's schema validation failed
    FUTURE = "future"  # authentic, but stamped minutes ahead of the server's clock
    NATIVE_ID = "native_id"  # authentic, but its conversation id is not its agent's kind
    UNTERMINATED = "unterminated"  # scanner dropped it: no terminator within the limit, or cut


class Rejected:
    """A rejected frame.  Deliberately carries no frame data (it may hold secrets).

    A plain class, not a dataclass or NamedTuple: importing ``dataclasses`` or
    ``typing`` would add a third to the ``emit`` hook command's start-up time."""

    __slots__ = ("reason",)

    def __init__(self, reason: RejectReason) -> None:
        self.reason = reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rejected) and other.reason == self.reason

    def __hash__(self) -> int:
        return hash(self.reason)

    def __repr__(self) -> str:
        return f"Rejected(reason={self.reason!r})"


def new_nonce() -> str:
    """Fresh per-session secret (128 bits) in the form frames carry."""
    import secrets  # lazy: costs ~10 ms of import time that `emit` never needs

    return secrets.token_hex(16)


def decode_frame(body: bytes, session_id: str, nonce: str) -> dict[str, object] | Rejected:
    """Authenticate and decode a frame body as returned by the scanner.

    Checks, in order: size and syntax (MALFORMED), version, session, nonce,
    then payload encoding.  The version is read before the v1-specific field
    layout so a future version is reported as VERSION, not MALFORMED.  Never
    raises.
    """
    if len(body) > _MAX_BODY_BYTES:
        return Rejected(RejectReason.OVERSIZED)
    head = body.split(b";", 2)
    if len(head) != 3 or head[0] != _B_TAG or not _B_VERSION_TOKEN.fullmatch(head[1]):
        return Rejected(RejectReason.MALFORMED)
    fields = head[2].split(b";")
    if head[1] != _B_VERSION:
        return Rejected(RejectReason.VERSION)
    if (
        len(fields) != 3
        or not _B_SESSION_ID.fullmatch(fields[0])
        or not _B_NONCE.fullmatch(fields[1])
    ):
        return Rejected(RejectReason.MALFORMED)
    frame_session, frame_nonce, payload = fields

    from hmac import compare_digest  # lazy: pulls in OpenSSL, unneeded by `emit`

    # Both operands are bytes, so compare_digest cannot raise on non-ASCII input.
    if not compare_digest(frame_session, session_id.encode("utf-8", "replace")):
        return Rejected(RejectReason.SESSION)
    if not compare_digest(frame_nonce, nonce.encode("utf-8", "replace")):
        return Rejected(RejectReason.NONCE)
    decoded = _decode_payload(payload)
    return Rejected(RejectReason.ENCODING) if decoded is None else decoded


def _reject_constant(name: str) -> object:
    """json.loads hook: NaN/Infinity are not JSON, so refuse them."""
    raise ValueError(f"non-standard JSON constant {name}")


def _decode_payload(payload: bytes) -> dict[str, object] | None:
    """Strict unpadded-base64url -> UTF-8 -> JSON object, or None."""
    # b64decode silently skips characters outside its alphabet, so validate the
    # alphabet first; '=' padding is not part of the v1 format.
    if not _B_PAYLOAD.fullmatch(payload) or len(payload) % 4 == 1:
        return None
    padded = payload + b"=" * (-len(payload) % 4)
    try:
        raw = base64.urlsafe_b64decode(padded)
    except binascii.Error:
        return None
    # Reject non-canonical encodings (non-zero trailing bits): one payload, one encoding.
    if base64.urlsafe_b64encode(raw) != padded:
        return None
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):  # UnicodeDecodeError/JSONDecodeError are ValueErrors
        return None
    if not isinstance(value, dict):
        return None
    return value
