"""The one factor every test timeout scales by.

Tests wait for conditions, never for fixed times; what bounds a wait is a timeout
that should never be reached. On a machine slower or busier than CI's 2 cores, set
``PTYVISOR_TEST_TIMEOUT_FACTOR`` (2, 3, …) and every bound grows together: the waits'
deadlines (`scaled`) and pytest-timeout's limit for each test (``conftest.py``).
"""

from __future__ import annotations

import os

ENV = "PTYVISOR_TEST_TIMEOUT_FACTOR"


def _factor() -> float:
    text = os.environ.get(ENV, "1")
    try:
        factor = float(text)
    except ValueError:
        raise SystemExit(f"{ENV}={text!r}: not a number") from None
    if not 1 <= factor <= 100:
        raise SystemExit(f"{ENV}={text!r}: give a factor from 1 to 100")
    return factor


FACTOR = _factor()


def scaled(seconds: float) -> float:
    """A timeout of ``seconds`` on CI's machine, on this one."""
    return seconds * FACTOR
