"""Codex end to end under ptyvisor: the real TUI, our real hooks (``-c hooks.*``
overrides), the real server, a real WebSocket client.

The client sees Ready, a turn with an approval and a question answered by keystrokes in
the terminal, a failed turn (the provider's 400, which Codex reports through no hook:
the rollout watcher started by ``UserPromptSubmit`` reports it) and the exit. The flow:
tests/agents/clis/scenarios.py; keys and timings: see ``tests/agents/clis/test_agents_offline.py``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.agents.clis.fake_model import Reply
from tests.agents.clis.scenarios import (
    CTRL_C,
    ESC,
    Session,
    interrupted_by_esc,
    session_end_to_end,
    started,
)

pytestmark = pytest.mark.anyio

SESSION = Session(
    "codex",
    question_screen="Question 1/1",
    chosen=lambda output: '"answers":["Blue"]' in output.replace(" ", ""),
    failure_status=400,  # no retry
    # The provider's raw body, made one line: its message (Codex keeps no status).
    reason_ok=lambda reason: reason == "fake model: prompt rejected E2E-400",
)


@pytest.mark.timeout(90, func_only=True)
async def test_codex_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)


@pytest.mark.timeout(90, func_only=True)
@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["esc", "ctrl-c"])
async def test_codex_interrupt_end_to_end(tmp_path: Path, key: str) -> None:
    """Esc or Ctrl-C while Codex waits for a slow model ends the turn: ``waiting``,
    reason ``interrupted`` (from the key: Codex 0.171 fires no Stop hook for it), and
    no late hook brings ``working`` back."""
    busy = "esc to interrupt"
    async with started("codex", tmp_path) as run:
        run.model.script(replace(Reply.text("Too late LATE-1"), delay=20.0))
        await interrupted_by_esc(
            run, "Take your time", busy, lambda s: busy not in s, key=key, late=2
        )
        assert "LATE-1" not in await run.screen()
