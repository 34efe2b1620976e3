"""Codex end to end under ptyvisor: the real TUI, our real hooks (``-c hooks.*``
overrides), the real server, a real WebSocket client.

The client sees Ready, a turn with an approval and a question answered by keystrokes in
the terminal, a failed turn (the provider's 400, which Codex reports through no hook:
the rollout watcher started by ``UserPromptSubmit`` reports it) and the exit. Keys and
timings: see ``tests/agents/test_agents_offline.py``.
"""

# ruff: noqa: RUF001  (the TUI draws its prompt mark with a non-ASCII arrow)
from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.agents.fake_model import FakeModelServer, Reply
from tests.agents.under_ptyvisor import FULL_TURN_PHASES, agent_session, row

pytestmark = pytest.mark.anyio

AGENT = "codex"
ENTER = "\r"
DOWN = "\x1b[B"
CTRL_C = "\x03"
SECRET = "sk-ant-api03-e2eSecretValue0123456789abcdefghijklmnop"
COMMAND = f"echo tool-ran {SECRET} > out.txt && cat out.txt"
SHOWN_COMMAND = "echo tool-ran sk-ant-*** > out.txt && cat out.txt"
QUESTION = "Which colour?"
OPTIONS = ["Red", "Blue", "Green"]
KEY_SETTLE = 0.3


def ready(screen: str) -> bool:
    return "›" in screen and "? for shortcuts" in screen


@pytest.mark.timeout(90, func_only=True)
async def test_codex_session_end_to_end(tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        # Codex 0.171 starts its thread lazily: SessionStart fires with the first
        # prompt, not when the TUI is up; ptyvisor calls it Ready when its screen
        # shows the composer (agents.READY_SCREEN).
        await run.wait_screen(ready, wait=30)
        await run.wait_phase("waiting", wait=15)

        # A turn: a shell command to approve, a question to answer, then a text answer.
        model.script(
            Reply.shell(AGENT, COMMAND, description="Write the marker file"),
            Reply.ask(AGENT, QUESTION, OPTIONS),
            Reply.text("All done DONE-1"),
        )
        mark = run.mark()
        await run.submit("Write the marker file")
        await run.wait_phase("working", since=mark)
        call = await model.wait_for_request(lambda r: r.outcome == "scripted")

        approval = await run.wait_interaction(since=mark)
        assert approval.kind == "approval"
        assert row(approval, "Command") == (SHOWN_COMMAND, True)
        assert SECRET not in approval.model_dump_json()
        assert run.changes[-1].activity.phase.value == "needs_input"
        await run.wait_screen("Would you like to run the following command?", wait=10)
        assert not (run.project / "out.txt").exists(), "ran before it was approved"
        mark = run.mark()
        await run.answer_with_keys("y", settle=KEY_SETTLE)
        asked, result = await model.answer_to(call)
        assert "tool-ran" in result.output, result

        question = await run.wait_interaction(since=mark)
        assert question.kind == "question"
        assert [q.question for q in question.questions] == [QUESTION]
        assert [o.label for o in question.questions[0].options] == OPTIONS
        await run.wait_screen("Question 1/1", wait=10)
        mark = run.mark()
        await run.answer_with_keys(DOWN, ENTER, settle=KEY_SETTLE)
        _, chosen = await model.answer_to(asked)
        assert '"answers":["Blue"]' in chosen.output.replace(" ", ""), chosen
        await run.wait_phase("waiting", since=mark)
        await run.wait_screen("DONE-1", wait=10)

        # A turn the provider fails at once (400: no retry).
        model.script(Reply.error(400, "fake model: prompt rejected E2E-400"))
        mark = run.mark()
        await run.submit("This one fails")
        failed = await run.wait_phase("failed", since=mark)
        assert failed.activity.reason is not None
        assert "E2E-400" in failed.activity.reason, failed.activity.reason
        # The provider's raw body, made one line: its message (Codex keeps no status).
        assert failed.activity.reason == "fake model: prompt rejected E2E-400"
        await run.wait_screen(ready, wait=10)

        # Quit: one Ctrl-C on an empty composer.
        await anyio.sleep(KEY_SETTLE)
        await run.type(CTRL_C)
        await run.wait_phase("stopped", wait=15)

        assert run.phases == FULL_TURN_PHASES
        await run.assert_clean()
    assert model.pending == 0
    assert (run.project / "out.txt").read_text().split()[0] == "tool-ran"
