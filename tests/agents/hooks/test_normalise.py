"""The pieces every hook adapter builds its frames from (hooks/normalise.py), on
plain inputs: text masked before it is cut, questions and suggestions in the agents'
spellings and bounded, ids that name a request without keeping it, and frames that
always fit, whatever the payload holds."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ptyvisor.agents.digest import prompt_digest
from ptyvisor.agents.hooks import normalise
from ptyvisor.wire.frames import MAX_FRAME_BYTES, decode_frame, new_nonce
from ptyvisor.wire.scanner import FrameScanner

SECRET = "sk-ant-" + "A" * 40


def test_text_masks_before_it_cuts_so_no_secret_is_left_half_readable() -> None:
    limit = 100
    straddling = "x" * (limit - 20) + " " + SECRET  # the cut falls inside the secret
    shortened = normalise.text(straddling, limit)
    assert len(shortened) <= limit and "AAAA" not in shortened  # cut first, it would show
    long = normalise.text("y" * 500, limit)
    assert long == "y" * (limit - 1) + "…"
    assert normalise.text("short", limit) == "short"
    assert normalise.text(None) == ""
    assert normalise.text({"k": ["é", 1]}) == '{"k": ["é", 1]}', "JSON, not escaped"


def test_activity_keeps_a_string_native_id_bounded_and_masks_the_reason() -> None:
    payload = normalise.activity(
        "codex", "failed", 7, {"session_id": "n" * 300}, reason="401: Bearer abcdef123"
    )
    assert payload["native_session_id"] == "n" * 256
    assert "abcdef123" not in payload["reason"]
    for odd in (None, "", 42, ["x"]):
        assert "native_session_id" not in normalise.activity(
            "codex", "working", 1, {"session_id": odd}
        )


def test_a_submitted_prompt_rides_as_its_digest_only_when_there_is_one() -> None:
    typed = normalise.submitted("codex", 1, {"prompt": "fix  the\r\nbug "})
    assert typed["phase"] == "working" and typed["prompt"] == prompt_digest("fix the bug")
    assert "prompt" not in normalise.submitted("codex", 1, {"prompt": "  \n"})
    assert "prompt" not in normalise.submitted("codex", 1, {"prompt": ["not", "text"]})


def test_questions_in_every_spelling_bounded() -> None:
    raw = [
        {"question": "Pick", "header": "H", "options": [{"label": "A", "description": "a"}, "B"]},
        {"id": "size", "question": "Size?", "multi_select": True, "options": ["S", 3, None]},
        "not a mapping",
        {"question": "Many?", "multiple": 1},
        {"question": "Claude's", "multiSelect": True, "multiple": False},
    ]
    parsed = normalise.questions(raw)
    assert [q["id"] for q in parsed] == ["q0", "size", "q3", "q4"], "ids count every item"
    assert parsed[0]["options"] == [
        {"label": "A", "description": "a"},
        {"label": "B", "description": ""},
    ]
    assert parsed[1]["options"] == [{"label": "S", "description": ""}]
    assert [q["multi_select"] for q in parsed] == [False, True, True, True]
    many = normalise.questions([{"question": str(i), "options": ["o"] * 50} for i in range(20)])
    assert len(many) == normalise.MAX_QUESTIONS
    assert all(len(q["options"]) == normalise.MAX_OPTIONS for q in many)
    assert normalise.questions({"question": "a dict, not a list"}) == []


def test_suggestions_are_described_and_keep_their_raw_item_in_order() -> None:
    rules = {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "git:*"}, {"toolName": "Read"}, "junk"],
        "destination": "localSettings",
    }
    raw: list[Any] = [
        rules,
        7,  # skipped: its index must not shift the others
        {"type": "setMode", "mode": "acceptEdits"},
        {"type": "addDirectories", "directories": ["/a", "/b"]},
        "plain words",
        {"type": "someday"},
        {"no": "type"},
        "",
    ]
    sources = normalise.suggestion_sources(raw)
    assert [label for label, _ in sources] == [
        "Always allow Bash(git:*), Read (localSettings)",
        "Switch to acceptEdits mode",
        "Allow access to /a, /b",
        "plain words",
        "someday",
        '{"no": "type"}',
    ]
    assert sources[0][1] is rules and sources[1][1] is raw[2]
    assert normalise.suggestions(raw) == [label for label, _ in sources]
    assert normalise.suggestions("nope") == []
    assert len(normalise.suggestions(["s"] * 40)) == normalise.MAX_SUGGESTIONS


def test_a_request_digest_names_the_input_without_keeping_it() -> None:
    ident = normalise.request_digest("Bash", {"command": "ls", "cwd": "/secret-place"})
    assert ident.startswith("req-") and len(ident) == 4 + 24 and "secret" not in ident
    assert ident == normalise.request_digest("Bash", {"cwd": "/secret-place", "command": "ls"})
    assert ident != normalise.request_digest("Read", {"command": "ls", "cwd": "/secret-place"})
    # Two fields could not be shifted into one another: the tool ends at a NUL.
    assert normalise.request_digest("x1", 2) != normalise.request_digest("x", 12)


def test_rows_drop_empty_values_and_are_bounded() -> None:
    assert normalise.row("Command", "") is None and normalise.row("Command", None) is None
    built = normalise.rows(*(normalise.row("L" * 100, i + 1) for i in range(30)), None)
    assert len(built) == normalise.MAX_ROWS
    assert built[0] == {"label": "L" * 64, "value": "1", "monospace": False}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=30,
)


def decoded(frame: bytes, nonce: str) -> object:
    scanned = FrameScanner().feed(frame)
    assert scanned.output == b"" and len(scanned.frames) == 1
    return decode_frame(scanned.frames[0], "s1", nonce)


def test_a_big_interaction_is_shortened_to_fit_never_dropped() -> None:
    nonce = new_nonce()
    rows = [{"label": "Diff", "value": "é" * 20_000} for _ in range(8)]
    payload = {"type": "interaction", "at": 1, "interaction": {"id": "req-1", "rows": rows}}
    frame = normalise.fit("s1", nonce, payload)
    assert len(frame) <= MAX_FRAME_BYTES
    body = decoded(frame, nonce)
    assert isinstance(body, dict)
    kept = body["interaction"]["rows"]
    assert len(kept) == 8 and all(r["value"].endswith("…") for r in kept)
    assert body["interaction"]["id"] == "req-1"


@settings(max_examples=60, deadline=None)
@given(JSON)
def test_any_payload_that_can_fit_is_framed_within_the_limit(value: object) -> None:
    nonce = new_nonce()
    payload = {"type": "interaction", "at": 1, "value": value}
    try:
        frame = normalise.fit("s1", nonce, payload)
    except ValueError:
        # Only when even 16-character strings cannot fit (too many of them).
        assert len(json.dumps(value)) > 16_000
        return
    assert len(frame) <= MAX_FRAME_BYTES
    assert isinstance(decoded(frame, nonce), dict)
