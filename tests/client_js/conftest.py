"""The keeper tests' environment fixture: a fresh state directory and the token."""

from ..keeper.conftest import env

__all__ = ["env"]
