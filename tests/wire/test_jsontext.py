"""Strict JSON at every boundary (wire/jsontext.py): anything a peer sends is a value
every later step can carry (encode, log, repeat) or one `BadJSON`, never another
exception; and names that are not UTF-8 survive as their exact bytes."""

from __future__ import annotations

import base64
import json
import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ptyvisor.errors import BadJSON
from ptyvisor.wire import jsontext

TEXT = st.text(st.characters(blacklist_categories=["Cs"]))
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@given(VALUES)
def test_json_with_valid_text_comes_back_as_it_went(value: object) -> None:
    assert jsontext.loads(json.dumps(value)) == value
    assert jsontext.loads(json.dumps(value, ensure_ascii=False).encode()) == value


@given(st.binary(max_size=64) | st.text(max_size=64))
@example(b'"\\ud800"')  # half a surrogate pair, as a JS client may cut an emoji
@example(b'{"\\udfff": 1}')  # in a key
@example(b"NaN")
@example(b"[Infinity]")
@example(b"\xff")
@example(b"1" * 5000)  # more digits than int() takes
@example(nested(10_000).encode())
def test_anything_else_is_bad_json_and_what_passes_encodes(data: bytes | str) -> None:
    try:
        value = jsontext.loads(data)
    except BadJSON:
        return
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # never raises past loads


@pytest.mark.parametrize(
    ("text", "syntax"),
    [
        ('"\\ud800"', False),
        ('{"\\udfff": "x"}', False),
        ('["ok", {"k": "\\udc80"}]', False),
        ("NaN", True),
        ("-Infinity", True),
        ("{", True),
        (nested(jsontext.MAX_DEPTH + 1), True),
        (nested(100_000), True),
    ],
)
def test_what_is_refused_and_whose_fault_it_reads_as(text: str, syntax: bool) -> None:
    with pytest.raises(BadJSON) as refused:
        jsontext.loads(text)
    assert refused.value.syntax is syntax


def test_the_depth_bound_is_exact() -> None:
    assert jsontext.loads(nested(jsontext.MAX_DEPTH)) is not None
    with pytest.raises(BadJSON):
        jsontext.loads(nested(jsontext.MAX_DEPTH + 1))
    assert jsontext.loads(nested(3), max_depth=3) == [[[]]]
    with pytest.raises(BadJSON):
        jsontext.loads('{"a": {"b": [1]}}', max_depth=2)


@given(st.binary(max_size=40))
def test_a_name_of_any_bytes_displays_as_text_and_keeps_its_exact_bytes(data: bytes) -> None:
    name = os.fsdecode(data)
    shown = jsontext.display(name)
    shown.encode("utf-8")
    raw = jsontext.raw_bytes(name)
    if raw is None:
        assert shown == name and data.decode("utf-8") == name
    else:
        assert base64.b64decode(raw) == data
        assert jsontext.from_raw(base64.b64decode(raw)) == name
        assert shown.count("\ufffd") >= 1
