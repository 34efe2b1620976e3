"""Ready is safe to trust, for every agent: a client types its prompt the instant
``waiting`` arrives, and that prompt reaches the model (the fake server's log).

Five runs each: a Ready that comes before the TUI reads keys loses the prompt in some
runs only. Every run sees exactly starting, waiting, working, waiting, stopped, and
every frame accepted. How late Ready and the first ``working`` come is measured, not
asserted (machines are noisy): ``scripts/bench_ready.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.clis.installed import AGENTS
from tests.agents.clis.ready import READY_PHASES, typed_at_ready, with_startup

pytestmark = pytest.mark.anyio

RUNS = 5


@pytest.mark.timeout(120, func_only=True)
@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("agent", list(AGENTS))
async def test_prompt_typed_at_ready_reaches_the_model(
    agent: str, run: int, tmp_path: Path
) -> None:
    timing, phases = await typed_at_ready(agent, tmp_path)
    assert phases == with_startup(agent, READY_PHASES), phases
    assert timing.typed >= timing.ready
    if agent in ("opencode", "kilo"):
        # The TUI plugin reported the turn at Enter, before OpenCode's server had
        # the session whose id each of its own reports carries.
        assert timing.working_session is None, "the first working came from the server"
