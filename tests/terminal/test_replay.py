"""Replayed output loses its terminal queries (they were answered when live) and
nothing else; the same vectors check the page's copy in Chromium (tests/web)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from ptyvisor.terminal.replay import shown, without_queries

VECTORS = json.loads((Path(__file__).parent / "replay-queries.json").read_text())["vectors"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: repr(v["output"])[:40])
def test_vectors(vector: dict[str, str]) -> None:
    output = vector["output"].encode("latin-1")
    assert without_queries(output) == vector["shown"].encode("latin-1")


def test_only_the_replayed_part_loses_queries() -> None:
    data = b"a\x1b[cb|c\x1b[6nd"
    assert shown(100, data, live_seq=100) == data  # all live
    assert shown(100, data, live_seq=90) == data
    assert shown(100, data, live_seq=200) == b"ab|cd"  # all replayed
    assert shown(100, data, live_seq=105) == b"ab|c\x1b[6nd"  # split at the bar
    # A query cut by the live point is not a whole query in the replayed part.
    assert shown(100, data, live_seq=102) == data


def test_linear_time_on_hostile_input() -> None:
    def timed(data: bytes) -> float:
        """The best of five runs: a busy machine's pauses only ever add time."""
        best = math.inf
        for _ in range(5):
            start = time.perf_counter()
            without_queries(data)
            best = min(best, time.perf_counter() - start)
        return best

    for unit in (b"\x1b[" + b"1;" * 50, b"\x1bP$q" + b"x" * 300, b"\x1b]4;" + b"9" * 100):
        small, large = timed(unit * 1000), timed(unit * 10000)
        assert large < small * 30 + 0.05, (unit[:8], small, large)
