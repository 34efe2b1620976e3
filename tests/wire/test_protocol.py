"""The wire messages themselves (protocol.py): what the server builds by other means
than pydantic is still exactly the typed message."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ptyvisor.wire.protocol import EXPORT_SLICE, SERVER_MESSAGE, Exported, exported_json


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
