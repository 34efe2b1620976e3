"""The wire messages themselves (protocol.py): what the server builds by other means
than pydantic is still exactly the typed message."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ptyvisor.wire.protocol import EXPORT_SLICE, SERVER_MESSAGE, Exported, Hello, exported_json


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.none(), st.integers(-(2**53) + 1, 2**53 - 1), st.text(max_size=128)),
    st.text(alphabet=st.characters(codec="utf-8")),
    st.integers(1, 5),
)
def test_an_export_encoded_in_slices_is_the_exported_message(
    req_id: str | int | None, cast: str, repeat: int
) -> None:
    """`exported_json` escapes the cast a slice at a time (to let the event loop run
    meanwhile): the text is the message pydantic would have made, whatever it holds."""
    long = cast * repeat + "\x01\x1b\u2028é" * (EXPORT_SLICE // 3)  # across slice ends
    text = exported_json(req_id, "s1", long)
    message = SERVER_MESSAGE.validate_json(text)
    assert message == Exported(req_id=req_id, session="s1", asciicast=long)
    assert json.loads(text) == json.loads(message.model_dump_json())


def test_a_greeting_naming_agents_this_client_does_not_know_is_read() -> None:
    """A newer server (over ssh:// on another machine) offers agents this version has
    never heard of: the greeting is still a Hello, with their names; a name shaped like
    no agent's is refused."""
    greeting = {"type": "hello", "server_version": "9.0", "agents": ["codex", "future-agent"]}
    hello = SERVER_MESSAGE.validate_json(json.dumps(greeting))
    assert isinstance(hello, Hello) and hello.agents == ["codex", "future-agent"]
    with pytest.raises(ValidationError):
        SERVER_MESSAGE.validate_json(json.dumps({**greeting, "agents": ["\x1b[31m"]}))
