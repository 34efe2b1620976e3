"""Answering the real Codex TUI from a WebSocket client, under ptyvisor, with the fake
model server: with ``codex_remote_answers`` on, a shell approval allowed from the client
runs the command (its output reaches the model); one denied does not run. This pins
Codex's native PermissionRequest answer (``hooks.codex.native_answer``). A message
queued while Codex works reaches the model as the next user turn (its Stop hook)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptyvisor.config import Settings
from tests.agents.fake_model import FakeModelServer, Reply
from tests.agents.test_claude_code_answers import (
    acts_on_a_queued_message,
    answer,
    error_of,
    held,
)
from tests.agents.test_codex_e2e import ready
from tests.agents.under_ptyvisor import agent_session, row

pytestmark = pytest.mark.anyio

AGENT = "codex"
ALLOWED = "echo allowed-ran > allowed.txt && cat allowed.txt"
DENIED = "echo denied-ran > denied.txt"


@pytest.mark.timeout(90, func_only=True)
async def test_codex_answered_from_a_client(tmp_path: Path) -> None:
    settings = Settings(codex_remote_answers=True)
    async with (
        FakeModelServer() as model,
        agent_session(AGENT, tmp_path, model, settings=settings) as run,
    ):
        await run.wait_screen(ready, wait=30)
        await run.wait_phase("waiting", wait=15)
        model.script(
            Reply.shell(AGENT, ALLOWED, description="Write the allowed file"),
            Reply.shell(AGENT, DENIED, description="Write the denied file"),
            Reply.text("All done DONE-3"),
        )
        mark = run.mark()
        await run.submit("Answer me remotely")
        first = await model.wait_for_request(lambda r: r.outcome == "scripted")

        approval = await run.wait_interaction(since=mark)
        assert row(approval, "Command") == (ALLOWED, True)
        await held(run, approval.id)
        assert not (run.project / "allowed.txt").exists(), "ran before it was approved"
        mark = run.mark()
        await answer(run, approval.id, behavior="allow")
        second, result = await model.answer_to(first)
        assert "allowed-ran" in result.output, result
        assert (run.project / "allowed.txt").read_text().strip() == "allowed-ran"
        assert (await error_of(run, approval.id, behavior="deny")).code == "gone"

        denial = await run.wait_interaction(since=mark)
        assert row(denial, "Command") == (DENIED, True)
        await held(run, denial.id)
        await answer(run, denial.id, behavior="deny", message="not this one E2E-DENY")
        await model.answer_to(second)
        await run.wait_screen("DONE-3", wait=15)
        assert not (run.project / "denied.txt").exists(), "ran although denied"


@pytest.mark.timeout(90, func_only=True)
async def test_codex_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Codex works becomes its next instruction: Codex's Stop
    hook blocks the stop with it as the reason, and the model sees it as the next user
    turn. Queued messages do not depend on ``codex_remote_answers``."""
    queued = "Now say QUEUED-NEXT-8"
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_screen(ready, wait=30)
        await run.wait_phase("waiting", wait=15)
        later = await acts_on_a_queued_message(run, queued)
        # Codex wraps a Stop hook's reason as the next user message: <hook_prompt …>.
        *_, prompt, continued = later.user_texts()
        assert (prompt, queued in continued) == ("Start working", True), later.user_texts()
    assert model.pending == 0
