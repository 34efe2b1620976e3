"""Claude Code end to end under ptyvisor: the real TUI, our real hooks, the real server,
a real WebSocket client.

The client sees every phase of a session: Ready, a turn with an approval and a question
answered by keystrokes in the terminal, a failed turn (the provider's 400, reported by
the ``StopFailure`` hook), an interrupt (Esc, inferred by ptyvisor from the keystroke)
and the exit. Keys and timings: see ``tests/agents/test_agents_offline.py``.
"""

# ruff: noqa: RUF001  (the TUI draws its prompt mark with a non-ASCII arrow)
from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.agents.fake_model import FakeModelServer, Reply
from tests.agents.under_ptyvisor import FULL_TURN_PHASES, agent_session, row

pytestmark = pytest.mark.anyio

AGENT = "claude-code"
ENTER = "\r"
ESC = "\x1b"
DOWN = "\x1b[B"
CTRL_C = "\x03"
SECRET = "sk-ant-api03-e2eSecretValue0123456789abcdefghijklmnop"
COMMAND = f"echo tool-ran {SECRET} > out.txt && cat out.txt"
SHOWN_COMMAND = "echo tool-ran sk-ant-*** > out.txt && cat out.txt"
QUESTION = "Which colour?"
OPTIONS = ["Red", "Blue", "Green"]
SLOW = "python3 -c 'import time; time.sleep(30)'"
"""A long command (2.1.332 refuses a bare ``sleep``); allowed, so it runs at once."""
KEY_SETTLE = 0.6
"""Claude drops keys arriving within ~0.1-0.2 s of a dialog's first frame."""


def ready(screen: str) -> bool:
    return "❯" in screen and "manual mode on" in screen


@pytest.mark.timeout(90, func_only=True)
async def test_claude_code_session_end_to_end(tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=30)
        await run.wait_screen(ready, wait=30)

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
        assert approval.tool == "Bash"
        assert row(approval, "Command") == (SHOWN_COMMAND, True)
        assert SECRET not in approval.model_dump_json()
        assert run.changes[-1].activity.phase.value == "needs_input"
        await run.wait_screen("Do you want to proceed?", wait=10)
        assert not (run.project / "out.txt").exists(), "ran before it was approved"
        mark = run.mark()
        await run.answer_with_keys(ENTER, settle=KEY_SETTLE)
        asked, result = await model.answer_to(call)
        assert "tool-ran" in result.output, result

        question = await run.wait_interaction(since=mark)
        assert question.kind == "question"
        assert [q.question for q in question.questions] == [QUESTION]
        assert [o.label for o in question.questions[0].options] == OPTIONS
        await run.wait_screen("Type something", wait=10)
        mark = run.mark()
        await run.answer_with_keys(DOWN, ENTER, settle=KEY_SETTLE)
        _, chosen = await model.answer_to(asked)
        assert f'"{QUESTION}"="Blue"' in chosen.output, chosen
        await run.wait_phase("waiting", since=mark)
        await run.wait_screen("DONE-1", wait=10)

        # A turn the provider fails at once. Not a 400: 2.1.332 retries a plain 400 (up to
        # 10 attempts with backoff), and a 413 with a history starts a compaction; a 403
        # fails the turn at once, through StopFailure ("authentication_failed").
        model.script(Reply.error(403, "fake model: prompt rejected E2E-403"))
        mark = run.mark()
        await run.submit("This one fails")
        failed = await run.wait_phase("failed", since=mark)
        assert failed.activity.reason is not None
        assert "E2E-403" in failed.activity.reason, failed.activity.reason
        assert "{" not in failed.activity.reason  # one human line, not a JSON body
        await run.wait_screen(ready, wait=10)

        # Quit: Ctrl-C twice on an empty prompt.
        await anyio.sleep(KEY_SETTLE)
        await run.type(CTRL_C)
        await run.wait_screen("Press Ctrl-C again to exit", wait=10)
        await run.type(CTRL_C)
        await run.wait_phase("stopped", wait=15)

        assert run.phases == FULL_TURN_PHASES
        await run.assert_clean()
    assert model.pending == 0
    assert (run.project / "out.txt").read_text().split()[0] == "tool-ran"


@pytest.mark.timeout(90, func_only=True)
async def test_claude_code_interrupt_end_to_end(tmp_path: Path) -> None:
    """Esc during a working turn (a long allowed command) ends the turn: ``waiting``,
    reason ``interrupted``, and no late hook brings ``working`` back."""
    settings = tmp_path / "project" / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(python3:*)"]}}))
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=30)
        await run.wait_screen(ready, wait=30)
        model.script(Reply.shell(AGENT, SLOW, description="Wait a while"))
        mark = run.mark()
        await run.submit("Wait a while")
        await run.wait_phase("working", since=mark)
        await model.wait_for_request(lambda r: r.outcome == "scripted")
        await run.wait_screen("time.sleep(30)", wait=10)
        await anyio.sleep(KEY_SETTLE)
        mark = run.mark()
        await run.type(ESC)
        interrupted = await run.wait_phase("waiting", since=mark, wait=10)
        assert interrupted.activity.reason == "interrupted"
        await run.wait_screen("Interrupted", wait=10)
        await anyio.sleep(1)  # any late hook would have landed by now
        assert run.changes[-1].activity.phase.value == "waiting", run.phases
        assert run.phases == ["starting", "waiting", "working", "waiting"]
        assert (await run.client.stats(run.session_id)).frames_rejected == {}
    model.assert_no_unexpected()
