"""JSON through the interpreter's own C codec, without importing :mod:`json`.

The hooks run on every tool call an agent makes, and ``import json`` was a third of
such a run: its decoder compiles regular expressions at import, which loads ``re``
and ``enum``. The C scanner and encoder that :mod:`json` itself uses (``_json``)
need neither. This module calls them with :mod:`json`'s own settings, so ``loads``
and ``dumps`` give what ``json.loads`` and ``json.dumps`` give (tested against them
with hypothesis), and falls back to :mod:`json` on an interpreter without them.
Stdlib only; for the hooks' path, not a general replacement.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    import _json
except ImportError:  # an interpreter without the C codec
    _json = None  # type: ignore[assignment]

_WHITESPACE = " \t\n\r"
"""What JSON allows around a value."""
_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _Context:
    """What the C scanner reads off :class:`json.JSONDecoder`: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


# typeshed types the context as a scanner; any object with those attributes will do.
_scan = _json.make_scanner(_Context()) if _json is not None else None  # type: ignore[arg-type]


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``; bytes are UTF-8. Raises ValueError for what is not
    one JSON value (``json.JSONDecodeError`` is one)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if _scan is None:
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        raise ValueError(f"expecting a JSON value at {stop.value}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after the JSON value at {end}")
    return value


def _no_default(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(
    value: object,
    *,
    ensure_ascii: bool = True,
    sort_keys: bool = False,
    separators: tuple[str, str] = (", ", ": "),
    default: Callable[[Any], object] | None = None,
    allow_nan: bool = True,
) -> str:
    """``json.dumps`` with these of its arguments (no indent)."""
    if _json is None:
        import json

        return json.dumps(
            value,
            ensure_ascii=ensure_ascii,
            sort_keys=sort_keys,
            separators=separators,
            default=default,
            allow_nan=allow_nan,
        )
    quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    item_separator, key_separator = separators
    encode = _json.make_encoder(
        {},  # check for cycles, as json.dumps does
        default or _no_default,
        quote,
        None,
        key_separator,
        item_separator,
        sort_keys,
        False,
        allow_nan,
    )
    return "".join(encode(value, 0))
