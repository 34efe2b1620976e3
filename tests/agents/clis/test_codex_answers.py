"""Answering the real Codex TUI from a WebSocket client, under ptyvisor, with the fake
model server: with ``codex_remote_answers`` on, a shell approval allowed from the client
runs the command (its output reaches the model); one denied does not run. This pins
Codex's native PermissionRequest answer (``hooks.codex.native_answer``). A message
queued while Codex works reaches the model as the next user turn (its Stop hook). The
flows: tests/agents/clis/scenarios.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptyvisor.config import Settings
from tests.agents.clis.fake_model import Reply, Request
from tests.agents.clis.scenarios import allow_then_deny, queued_message_reaches_model, started
from tests.agents.clis.under_ptyvisor import AgentRun

pytestmark = pytest.mark.anyio

AGENT = "codex"


@pytest.mark.timeout(90, func_only=True)
async def test_codex_answered_from_a_client(tmp_path: Path) -> None:
    settings = Settings(codex_remote_answers=True)
    async with started(AGENT, tmp_path, settings=settings) as run:
        then = Reply.text("All done DONE-3")
        await allow_then_deny(run, AGENT, then, denial_reaches_model=False)
        await run.wait_screen("DONE-3", wait=15)
        assert not (run.project / "denied.txt").exists(), "ran although denied"


async def next_user_turn(run: AgentRun, later: Request, queued: str) -> None:
    """Codex wraps a Stop hook's reason as the next user message: <hook_prompt …>."""
    *_, prompt, continued = later.user_texts()
    assert (prompt, queued in continued) == ("Start working", True), later.user_texts()


@pytest.mark.timeout(90, func_only=True)
async def test_codex_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Codex works becomes its next instruction: Codex's Stop
    hook blocks the stop with it as the reason, and the model sees it as the next user
    turn. Queued messages do not depend on ``codex_remote_answers``."""
    await queued_message_reaches_model(AGENT, tmp_path, "Now say QUEUED-NEXT-8", next_user_turn)
