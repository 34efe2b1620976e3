"""`ptyvisor.wire.cjson` against :mod:`json` itself: the same text out, the same value
in, the same refusals, with the C codec and without it."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.wire import cjson

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)
OPTIONS = st.fixed_dictionaries(
    {
        "ensure_ascii": st.booleans(),
        "sort_keys": st.booleans(),
        "separators": st.sampled_from([(", ", ": "), (",", ":")]),
    }
)


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (which json round-trips)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    )


@pytest.fixture(params=["C codec", "fallback"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs with the interpreter's C codec and as if it had none."""
    if request.param == "fallback":
        monkeypatch.setattr(cjson, "_json", None)
        monkeypatch.setattr(cjson, "_scan", None)
    return str(request.param)


@given(value=VALUES, options=OPTIONS)
def test_dumps_writes_what_json_writes(value: Any, options: dict[str, Any]) -> None:
    assert cjson.dumps(value, **options) == json.dumps(value, **options)


@given(value=VALUES)
def test_loads_reads_what_json_reads(value: Any) -> None:
    text = json.dumps(value)
    assert same(cjson.loads(text), json.loads(text))
    assert same(cjson.loads(f" \n\t{text}\r "), value)
    assert same(cjson.loads(text.encode()), value)


@given(text=st.text(alphabet='{}[]",:0123456789.eE+-truefalsnNIy \t\n\\ua', max_size=20))
def test_what_json_refuses_is_refused(text: str) -> None:
    """Fuzzed near-JSON: either both read the same value or both raise ValueError."""
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            cjson.loads(text)
    else:
        assert same(cjson.loads(text), expected)


def test_the_options_the_hooks_use(codec: str) -> None:
    value = {"b": [1, 2.5, None, True], "a": "é\u2028", "c": float("inf")}
    hooks_options: list[dict[str, Any]] = [
        {"ensure_ascii": False, "separators": (",", ":")},
        {"sort_keys": True, "separators": (",", ":"), "default": str},
        {},
    ]
    for options in hooks_options:
        assert cjson.dumps(value, **options) == json.dumps(value, **options), codec
    assert cjson.dumps({"x": object()}, default=lambda _: "o") == '{"x": "o"}'
    with pytest.raises(TypeError):
        cjson.dumps({"x": object()})
    with pytest.raises(ValueError):
        cjson.dumps({"x": math.nan}, allow_nan=False)
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError):
        cjson.dumps(loop)
    assert cjson.loads('{"a": [1, "\\u00e9"]}') == {"a": [1, "é"]}
    for bad in ("", " ", "[1,", "[1] [2]", "{'a': 1}", '"\x01"', b"\xff"):
        with pytest.raises(ValueError):
            cjson.loads(bad)
