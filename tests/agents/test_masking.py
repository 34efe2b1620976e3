"""Masking against the vectors shared with the JavaScript extensions."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ptyvisor.agents.masking import mask

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
