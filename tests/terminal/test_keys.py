"""tmux-style key names (keynames.py): what each sends, in every mode, and that any
name, however long or hostile, is parsed in one pass."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.terminal.keys import PASTE_END, PASTE_START, encode_keys, key_bytes


@pytest.mark.parametrize(
    ("name", "normal", "application"),
    [
        ("Enter", b"\r", b"\r"),
        ("escape", b"\x1b", b"\x1b"),
        ("BTab", b"\x1b[Z", b"\x1b[Z"),
        ("Up", b"\x1b[A", b"\x1bOA"),
        ("home", b"\x1b[H", b"\x1bOH"),
        ("F5", b"\x1b[15~", b"\x1b[15~"),
        ("C-c", b"\x03", b"\x03"),
        ("c-]", b"\x1d", b"\x1d"),
        ("C-Space", b"\x00", b"\x00"),
        ("C-?", b"\x7f", b"\x7f"),
        ("M-x", b"\x1bx", b"\x1bx"),
        ("M-Enter", b"\x1b\r", b"\x1b\r"),
        ("M-Up", b"\x1b\x1b[A", b"\x1b\x1bOA"),
        ("M-C-c", b"\x1b\x03", b"\x1b\x03"),
        ("M-M-x", b"\x1b\x1bx", b"\x1b\x1bx"),
        ("M--", b"\x1b-", b"\x1b-"),
    ],
)
def test_names(name: str, normal: bytes, application: bytes) -> None:
    assert key_bytes(name) == normal
    assert key_bytes(name, application_cursor=True) == application


@pytest.mark.parametrize("text", ["M-", "C-", "C-xy", "M-xy", "hello", "M-C-", "Upx", ""])
def test_anything_else_is_text(text: str) -> None:
    assert key_bytes(text) is None
    assert encode_keys([text]) == text.encode()


def test_a_thousand_meta_prefixes_are_counted_not_recursed() -> None:
    """``"M-"*999 + "x"`` once raised RecursionError (the connection closed with 1011)."""
    assert key_bytes("M-" * 999 + "x") == b"\x1b" * 999 + b"x"
    long = "M-" * 400_000 + "Up"
    assert key_bytes(long) == b"\x1b" * 400_000 + b"\x1b[A"


def reference(name: str, application: bool) -> bytes | None:
    """The rules as tmux states them, recursively (fine for short names)."""
    modified = re.fullmatch(r"([CcMm])-(.+)", name, re.DOTALL)
    plain = key_bytes(name, application_cursor=application) if not modified else None
    if modified is None:
        return plain
    modifier, rest = modified.group(1).upper(), modified.group(2)
    if modifier == "M":
        inner = reference(rest, application)
        if inner is None and len(rest) == 1:
            inner = rest.encode()
        return None if inner is None else b"\x1b" + inner
    return key_bytes(name, application_cursor=application)


names = st.lists(
    st.sampled_from(["M-", "m-", "C-", "c-", "Up", "x", "-", "Enter", "?", "Space", "é"]),
    max_size=8,
).map("".join)


@given(names | st.text(max_size=30), st.booleans())
def test_parsing_in_one_pass_agrees_with_the_recursive_rules(name: str, application: bool) -> None:
    assert key_bytes(name, application_cursor=application) == reference(name, application)


def test_text_with_a_line_break_is_pasted_when_the_program_asked() -> None:
    assert encode_keys(["two\nlines"], bracketed_paste=True) == (
        PASTE_START + b"two\rlines" + PASTE_END
    )
    assert encode_keys(["two\nlines"]) == b"two\rlines"
    assert encode_keys(["Enter"], literal=True) == b"Enter"
