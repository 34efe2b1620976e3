"""Fixtures shared with other tests: the keeper tests' environment (a fresh state
directory and the token) and the pinned TypeScript compiler."""

from ..keeper.conftest import env
from ..wire.test_typescript import tsc

__all__ = ["env", "tsc"]
