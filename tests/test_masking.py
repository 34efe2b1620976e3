"""Masking against the vectors shared with the JavaScript extensions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptyvisor.masking import mask

VECTORS = json.loads(
    (Path(__file__).parent.parent / "agent-extensions" / "masking-vectors.json").read_text()
)["cases"]


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_vector(case: dict[str, str]) -> None:
    assert mask(case["input"]) == case["output"]


def test_masking_is_idempotent() -> None:
    for case in VECTORS:
        assert mask(case["output"]) == case["output"]
