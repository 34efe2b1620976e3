"""ptyvisor: a supervisor for coding-agent terminals.

``ptyvisor.connect()`` is the async Python API for scripts (`ptyvisor.client.scripting`);
``ptyvisor.client.sync`` its blocking twin. Both are loaded only when used: agent hooks
import this package and must stay fast.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # not `typing.TYPE_CHECKING`: importing typing costs emit ~5 ms a hook
    from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "connect":
        from ptyvisor.client.scripting import connect

        return connect
    raise AttributeError(f"module 'ptyvisor' has no attribute {name!r}")
