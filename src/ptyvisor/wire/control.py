"""The control socket's messages, shared by the hook (hooks/decide.py) and the server
(control.py): one JSON object per line, at most `MAX_LINE` bytes.

A hook sends `Request` (hold for a client's decision on this interaction) or
`TakeMessage` (a Stop hook takes the queued message); the server answers a request
with one `Decision` line, and a take with `QueuedMessage`, which the hook
acknowledges with `Delivered` once the agent has it.

Each message checks itself as it is read (`from_json` raises `BadControlMessage`), so
neither side handles a dictionary it has not validated. Stdlib only and cheap to
import — plain slotted classes, no ``dataclasses`` (15 ms): hooks run on every tool
call. The interaction itself is checked by the server (interaction.Interaction).
"""

from __future__ import annotations

from ptyvisor.errors import BadControlMessage
from ptyvisor.wire import cjson

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from typing import Any

MAX_LINE = 1024 * 1024
"""Longest control line, newline excluded; a longer one is refused."""
MAX_AGENT_ID = 256
BEHAVIORS = ("allow", "deny")


class _Message:
    __slots__: tuple[str, ...] = ()
    op = ""

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, **{name: getattr(self, name) for name in self.__slots__}}

    def line(self) -> bytes:
        """The message as one line (non-ASCII kept as UTF-8: the texts are the user's)."""
        return cjson.dumps(self.to_json(), ensure_ascii=False).encode() + b"\n"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Message)
            and type(other) is type(self)
            and self.to_json() == other.to_json()
        )

    def __hash__(self) -> int:
        return hash(self.line())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


def _text(data: dict[str, Any], name: str, *, optional: bool = False) -> Any:
    value = data.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise BadControlMessage(f"{name} is a text")
    return value


class Request(_Message):
    """Hold: a client may answer ``interaction`` (normalised, masked) of session
    ``session``; ``agent_id`` names the subagent that asked."""

    __slots__ = ("agent_id", "interaction", "nonce", "session")
    op = "request"

    def __init__(
        self, session: str, nonce: str, interaction: dict[str, Any], agent_id: str | None = None
    ) -> None:
        self.session, self.nonce = session, nonce
        self.interaction, self.agent_id = interaction, agent_id

    def to_json(self) -> dict[str, Any]:
        body = super().to_json()
        if self.agent_id is None:
            del body["agent_id"]
        return body

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Request:
        interaction = data.get("interaction")
        if not isinstance(interaction, dict):
            raise BadControlMessage("interaction is an object")
        agent_id = _text(data, "agent_id", optional=True)
        if agent_id is not None and not 0 < len(agent_id) <= MAX_AGENT_ID:
            raise BadControlMessage(f"agent_id is 1 to {MAX_AGENT_ID} characters")
        return cls(_text(data, "session"), _text(data, "nonce"), interaction, agent_id)


class TakeMessage(_Message):
    """A Stop hook takes the session's queued message."""

    __slots__ = ("nonce", "session")
    op = "take_message"

    def __init__(self, session: str, nonce: str) -> None:
        self.session, self.nonce = session, nonce

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TakeMessage:
        return cls(_text(data, "session"), _text(data, "nonce"))


class Decision(_Message):
    """A client's answer to a held request."""

    __slots__ = ("answers", "behavior", "message", "suggestion")
    op = "decision"

    def __init__(
        self,
        behavior: str,
        message: str | None = None,
        suggestion: int | None = None,
        answers: dict[str, list[str] | str] | None = None,
    ) -> None:
        self.behavior, self.message = behavior, message
        self.suggestion, self.answers = suggestion, answers

    def line(self) -> bytes:
        # ASCII with escapes: encodes whatever the texts hold.
        return cjson.dumps(self.to_json()).encode() + b"\n"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decision:
        behavior = data.get("behavior")
        if behavior not in BEHAVIORS:
            raise BadControlMessage("behavior is allow or deny")
        suggestion = data.get("suggestion")
        if suggestion is not None and (
            isinstance(suggestion, bool) or not isinstance(suggestion, int)
        ):
            raise BadControlMessage("suggestion is an integer")
        answers = data.get("answers")
        if answers is not None and not _answers(answers):
            raise BadControlMessage("answers map question ids to labels or a text")
        return cls(str(behavior), _text(data, "message", optional=True), suggestion, answers)


def _answers(answers: object) -> bool:
    if not isinstance(answers, dict):
        return False
    for value in answers.values():
        if isinstance(value, list):
            if not all(isinstance(label, str) for label in value):
                return False
        elif not isinstance(value, str):
            return False
    return True


class QueuedMessage(_Message):
    """The answer to `TakeMessage`: the queued text, or None when there is none."""

    __slots__ = ("text",)
    op = "message"

    def __init__(self, text: str | None) -> None:
        self.text = text

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueuedMessage:
        return cls(_text(data, "text", optional=True))


class Delivered(_Message):
    """The agent has the queued message: it is not put back."""

    __slots__ = ()
    op = "delivered"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Delivered:
        del data
        return cls()


def read(data: object, *expected: type[_Message]) -> Any:
    """``data`` (a parsed line) as one of the ``expected`` messages; raises
    `BadControlMessage`."""
    if not isinstance(data, dict):
        raise BadControlMessage("a control message is a JSON object")
    for kind in expected:
        if data.get("op") == kind.op:
            return kind.from_json(data)  # type: ignore[attr-defined]
    raise BadControlMessage(f"expected {' or '.join(kind.op for kind in expected)}")
