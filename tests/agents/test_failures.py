"""Failed turns' reasons: one short human line, whatever the provider sent."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.agents.failures import MAX_FAILURE_CHARS, failure_reason


def test_codex_style_status_and_json_body() -> None:
    body = {"error": {"message": "fake model: prompt rejected E2E-400", "type": "invalid"}}
    raw = f"unexpected status 400 Bad Request: {json.dumps(body)}"
    assert failure_reason(raw) == "400 Bad Request: fake model: prompt rejected E2E-400"


def test_claude_style_body_with_its_own_label() -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "too long"}}
    assert failure_reason(f"invalid_request: {json.dumps(body)}") == "invalid_request: too long"


def test_status_in_the_body_and_a_message_that_is_json_again() -> None:
    inner = json.dumps({"error": {"message": "quota exceeded", "code": 429}})
    raw = json.dumps({"status": 429, "message": inner})
    assert failure_reason(raw) == "429: quota exceeded"


def test_plain_text_stays_and_whitespace_collapses() -> None:
    assert failure_reason("Connection refused\n  (retrying)") == "Connection refused (retrying)"
    assert failure_reason("rate limited {not json") == "rate limited {not json"


def test_long_reasons_are_cut() -> None:
    body = json.dumps({"error": {"message": "x" * 5000}})
    reason = failure_reason("500 Internal Server Error: " + body)
    assert len(reason) == MAX_FAILURE_CHARS and reason.endswith("…")
    assert reason.startswith("500 Internal Server Error: xxx")


@given(st.text(max_size=600))
def test_any_text_gives_one_bounded_line(raw: str) -> None:
    reason = failure_reason(raw)
    assert len(reason) <= MAX_FAILURE_CHARS
    assert "\n" not in reason
