"""Masking against the vectors shared with the JavaScript extensions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptyvisor.agents.masking import CLUES, IGNORECASE, apply_rules, mask, may_hold_secret

VECTORS = json.loads(
    (Path(__file__).parents[2] / "agent-extensions" / "masking-vectors.json").read_text()
)["cases"]


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_vector(case: dict[str, str]) -> None:
    assert mask(case["input"]) == case["output"]


def test_masking_is_idempotent() -> None:
    for case in VECTORS:
        assert mask(case["output"]) == case["output"]


@pytest.mark.parametrize("unit", ["x", "a-b ", "--", "--a-", "API_KEY", '"', "a://", "Bearer "])
def test_masking_is_linear_on_adversarial_input(unit: str) -> None:
    """16x the input must cost about 16x the time, not 256x: no quadratic
    backtracking. A ratio measured side by side, not a wall-clock limit, with a
    factor of 4 of room either way: a busy machine's noise (a linear run was seen
    at 8.4x for 4x the input under load) cannot pass for a quadratic one."""

    def cost(chars: int) -> float:
        text = unit * (chars // len(unit))
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            mask(text)
            best = min(best, time.perf_counter() - start)
        return best

    ratio = cost(160_000) / max(cost(10_000), 1e-6)
    assert ratio < 64, f"16x the input cost {ratio:.0f}x: linear is 16x, quadratic 256x"


PIECES = st.sampled_from(
    [*(c["input"] for c in VECTORS), *CLUES, *(c.upper() for c in CLUES), "=", '": "', " ", "-"]
)


@settings(max_examples=2000, deadline=None)
@given(
    text=st.one_of(
        st.lists(PIECES | st.text(max_size=12), max_size=8).map("".join),
        st.text(alphabet=st.characters(max_codepoint=0x2200), max_size=80),
    )
)
def test_text_without_a_clue_matches_no_rule(text: str) -> None:
    """`mask` skips the rules (and ``re``) for ASCII text holding none of `CLUES`:
    sound only if no rule could have matched it."""
    if apply_rules(text) != text:
        assert may_hold_secret(text), text
    assert mask(text) == apply_rules(text)


def test_the_fast_path_is_what_it_says() -> None:
    assert IGNORECASE == re.IGNORECASE
    long_s = "pa\u017f\u017fword=hunter2"  # the long s matches s under IGNORECASE
    assert may_hold_secret(long_s)  # not ASCII: the rules decide
    assert apply_rules(long_s) == "pa\u017f\u017fword=***"
    code = (
        f"import sys; sys.path[:0]={sys.path!r}; from ptyvisor.agents.masking import mask;"
        "mask('npm test -- --watch'); print('re' in sys.modules)"
    )
    shown = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert shown.stdout.strip() == "False"
