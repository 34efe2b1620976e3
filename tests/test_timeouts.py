"""The tests' one timeout factor (`tests.timeouts`): run here with the factor this
run has, and again in a child pytest with a factor of 3."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.timeouts import ENV, FACTOR, scaled

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(7)
def test_a_tests_own_limit_grows_with_the_factor(request: pytest.FixtureRequest) -> None:
    mark = request.node.get_closest_marker("timeout")
    assert mark is not None and mark.args[0] == 7 * FACTOR


def test_the_default_limit_grows_with_the_factor(request: pytest.FixtureRequest) -> None:
    mark = request.node.get_closest_marker("timeout")
    if FACTOR == 1:
        assert mark is None  # pytest-timeout's configured default, untouched
    else:
        assert mark is not None
        assert mark.args[0] == float(request.config.getini("timeout")) * FACTOR
    assert scaled(2) == 2 * FACTOR


def run_here(factor: str, *tests: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=ROOT,
        env={**os.environ, ENV: factor},
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )


@pytest.mark.skipif(FACTOR == 3, reason="this run is the factor-3 run")
def test_a_factor_of_three_reaches_marks_defaults_and_waits() -> None:
    tests = [
        f"{__file__}::test_a_tests_own_limit_grows_with_the_factor",
        f"{__file__}::test_the_default_limit_grows_with_the_factor",
    ]
    done = run_here("3", *tests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout


def test_a_factor_that_is_not_a_number_is_refused() -> None:
    done = run_here("fast", f"{__file__}::test_the_default_limit_grows_with_the_factor")
    assert done.returncode != 0
    assert f"{ENV}='fast': not a number" in done.stdout + done.stderr
