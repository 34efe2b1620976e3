"""Digests that name without keeping (agents/digest.py): a request's id and the
prompt a turn started with. A prompt's digest must come out equal for the text a
client typed and the text the agent reports back, so only what a terminal or an
agent changes (ASCII whitespace) is normalised; the text is untrusted, lone
surrogates and all. The interpreter's own SHA-256 is used when it has one, hashlib
(OpenSSL, slower to import) only when not."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ptyvisor.agents.digest import PROMPT_DIGEST_CHARS, hex_digest, prompt_digest

from ..conftest import env_without_ptyvisor

ASCII_SPACE = " \t\n\r\f\v"


def test_hex_digest_is_sha256() -> None:
    assert hex_digest(b"") == ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    assert hex_digest(b"abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


@given(st.binary(max_size=300))
def test_hex_digest_of_any_bytes_is_hashlibs(data: bytes) -> None:
    assert hex_digest(data) == hashlib.sha256(data).hexdigest()


def test_a_prompt_digest_is_the_start_of_the_texts_sha256() -> None:
    assert PROMPT_DIGEST_CHARS == 16  # the frame's pattern: activity.ActivityReport.prompt
    assert prompt_digest("Fix the failing test") == "caedf2c0a1b485cb"
    assert prompt_digest("") == prompt_digest(" \r\n") == "e3b0c44298fc1c14"


@pytest.mark.parametrize(
    ("typed", "reported"),
    [
        ("Fix it\r\n  now ", "Fix it now"),  # a paste's line ending, the agent's trim
        ("\t\v\fFix", "Fix"),
        ("one\rtwo\nthree", "one two three"),
        ("日本語  テスト", "日本語 テスト"),
    ],
)
def test_ascii_whitespace_runs_and_ends_do_not_count(typed: str, reported: str) -> None:
    assert prompt_digest(typed) == prompt_digest(reported)


@pytest.mark.parametrize(
    ("text", "other"),
    [
        ("Fix it", "fix it"),
        ("Fix it", "Fixit"),
        # Only ASCII whitespace is whitespace: the JavaScript extensions' rule (their
        # digest.mjs), not str.split()'s, which also splits at these.
        ("a\u00a0b", "a b"),
        ("a\u2028b", "a b"),
        ("a\x85b", "a b"),
        ("a\x1cb", "a b"),
        ("a\u3000b", "a b"),
    ],
)
def test_anything_else_tells_prompts_apart(text: str, other: str) -> None:
    assert prompt_digest(text) != prompt_digest(other)


WORD = st.text(min_size=1).filter(lambda t: not any(c in ASCII_SPACE for c in t))
SPACE = st.text(alphabet=ASCII_SPACE, min_size=1, max_size=4)


@given(
    words=st.lists(WORD, min_size=1, max_size=6),
    spaces=st.lists(SPACE, min_size=6, max_size=6),
    ends=st.tuples(SPACE | st.just(""), SPACE | st.just("")),
)
def test_any_spacing_of_the_same_words_is_one_prompt(
    words: list[str], spaces: list[str], ends: tuple[str, str]
) -> None:
    spaced = "".join(word + space for word, space in zip(words, spaces, strict=False))
    spaced = ends[0] + spaced.rstrip(ASCII_SPACE) + ends[1]
    assert prompt_digest(spaced) == prompt_digest(" ".join(words))


@settings(max_examples=300)
@given(st.text())
@example("\ud800")  # a lone surrogate, as JSON's "\ud800" decodes
@example("ok \udcff\ud83d then")
def test_any_text_has_a_digest_the_frame_accepts(text: str) -> None:
    """An agent's hook payload may hold any string: a digest, never an exception."""
    digest = prompt_digest(text)
    assert re.fullmatch(r"[0-9a-f]{16}", digest)
    assert prompt_digest(text) == digest


TEXTS = ["", "abc", "Fix it\r\n now", "ünï 🙂"]
PROBE = """
import json, sys
for blocked in sys.argv[1:]:
    sys.modules[blocked] = None  # its import fails, as where it is not built
from ptyvisor.agents import digest
texts = json.load(sys.stdin)
print(json.dumps({
    "module": digest.sha256.__module__,
    "hashlib": "hashlib" in sys.modules,
    "hex": [digest.hex_digest(text.encode()) for text in texts],
    "prompt": [digest.prompt_digest(text) for text in texts],
}))
"""


def probe(*blocked: str) -> dict[str, object]:
    """What a fresh interpreter without the modules ``blocked`` computes."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *blocked],
        input=json.dumps(TEXTS),
        env=env_without_ptyvisor(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_the_builtin_sha256_and_hashlibs_give_the_same_digests() -> None:
    """The builtin (``_sha2`` from 3.12, ``_sha256`` before) spares a hook run
    OpenSSL's import; without it, hashlib's."""
    expected = {
        "hex": [hashlib.sha256(text.encode()).hexdigest() for text in TEXTS],
        "prompt": [prompt_digest(text) for text in TEXTS],
    }
    builtin = probe()
    assert builtin["module"] in ("_sha2", "_sha256") and builtin["hashlib"] is False
    without = probe("_sha2", "_sha256")
    assert without["module"] == "_hashlib"
    for found in (builtin, without):
        assert {key: found[key] for key in expected} == expected
