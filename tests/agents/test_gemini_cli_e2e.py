"""Gemini CLI end to end under ptyvisor: the real TUI (0.61.0), our real hooks in a
session ``GEMINI_CLI_HOME``, the real server, a real WebSocket client, the fake model
speaking Gemini's ``streamGenerateContent``.

The client sees Ready (``SessionStart``), a turn with a shell command approved and an
``ask_user`` question answered by keystrokes in the TUI (Gemini's hooks cannot grant
an approval or give an answer, so the interactions are typed, not answerable from a
client), a failed turn (the provider's 400, which
``AfterAgent`` ends and the transcript explains), and the exit. A message queued while
Gemini works becomes its next request (``AfterAgent`` blocks the stop), and a prompt
typed the instant Ready arrives reaches the model (tests/agents/test_ready_e2e.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from tests.agents.fake_model import FakeModelServer, Reply
from tests.agents.test_claude_code_answers import acts_on_a_queued_message
from tests.agents.under_ptyvisor import FULL_TURN_PHASES, agent_session, row

pytestmark = pytest.mark.anyio

AGENT = "gemini-cli"
ENTER = "\r"
CTRL_C = "\x03"
ESC = "\x1b"
DOWN = "\x1b[B"
QUESTION = "Which colour?"
OPTIONS = ["Red", "Blue", "Green"]
SECRET = "sk-ant-api03-e2eSecretValue0123456789abcdefghijklmnop"
COMMAND = f"echo tool-ran {SECRET} > out.txt && cat out.txt"
SHOWN_COMMAND = "echo tool-ran sk-ant-*** > out.txt && cat out.txt"
KEY_SETTLE = 0.6
"""Keys arriving with a dialog's first frames can be dropped (as in the other TUIs), and
Gemini takes an Enter within 30 ms of the previous key for Shift+Enter."""


def ready(screen: str) -> bool:
    return "Type your message" in screen and "gemini-2.5-flash" in screen


@pytest.mark.timeout(120, func_only=True)
async def test_gemini_cli_session_end_to_end(tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=60)
        await run.wait_screen(ready, wait=30)

        # A turn: a shell command to approve in the TUI, then a text answer.
        model.script(
            Reply.shell(AGENT, COMMAND, description="Write the marker file"),
            Reply.ask(AGENT, QUESTION, OPTIONS),
            Reply.text("All done DONE-1"),
        )
        mark = run.mark()
        await run.submit("Write the marker file")
        await run.wait_phase("working", since=mark)
        call = await run.scripted_request(0, "the shell call")

        approval = await run.wait_interaction(since=mark)
        assert approval.kind == "approval"
        assert approval.tool == "run_shell_command"
        assert row(approval, "Command") == (SHOWN_COMMAND, True)
        assert SECRET not in approval.model_dump_json()
        assert run.changes[-1].activity.phase.value == "needs_input"
        assert not run.changes[-1].answerable, "no Gemini hook can grant an approval"
        await run.wait_screen("Allow once", wait=10)
        assert not (run.project / "out.txt").exists(), "ran before it was approved"
        mark = run.mark()
        await run.answer_with_keys(ENTER, settle=KEY_SETTLE)
        asked, result = await model.answer_to(call)
        assert "tool-ran" in result.output, result

        question = await run.wait_interaction(since=mark)
        assert question.kind == "question" and question.tool == "ask_user"
        assert [q.question for q in question.questions] == [QUESTION]
        assert [o.label for o in question.questions[0].options] == OPTIONS
        await run.wait_screen("Enter to select", wait=10)
        await anyio.sleep(KEY_SETTLE)
        await run.type(DOWN)
        await run.wait_screen("● 2.  Blue", wait=10)
        mark = run.mark()
        # Apart: an Enter within 30 ms of the previous key is taken for Shift+Enter.
        await run.answer_with_keys(ENTER, settle=KEY_SETTLE)
        _, chosen = await model.answer_to(asked)
        assert chosen.output == '{"answers":{"0":"Blue"}}', chosen
        await run.wait_phase("waiting", since=mark)
        await run.wait_screen("DONE-1", wait=10)

        # A turn the provider fails at once: Gemini does not retry a 400.
        model.script(Reply.error(400, "fake model: prompt rejected E2E-400"))
        mark = run.mark()
        await run.submit("This one fails")
        failed = await run.wait_phase("failed", since=mark)
        assert failed.activity.reason is not None
        assert "E2E-400" in failed.activity.reason, failed.activity.reason
        assert "{" not in failed.activity.reason  # one human line, not a JSON body
        await run.wait_screen("E2E-400", wait=10)

        # Quit: Ctrl-C twice on an empty prompt.
        await anyio.sleep(KEY_SETTLE)
        await run.type(CTRL_C)
        await run.wait_screen("again to exit", wait=10)
        await run.type(CTRL_C)
        await run.wait_phase("stopped", since=mark, wait=15)

        assert run.phases == FULL_TURN_PHASES, run.phases
        await run.assert_clean()
    assert model.pending == 0
    assert (run.project / "out.txt").read_text().split()[0] == "tool-ran"


@pytest.mark.timeout(90, func_only=True)
async def test_gemini_cli_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Gemini works becomes its next request: the AfterAgent
    hook blocks the stop with it as the reason."""
    queued = "Now say QUEUED-NEXT-9"
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=60)
        await run.wait_screen(ready, wait=30)
        later = await acts_on_a_queued_message(run, queued)
        assert any(queued in text for text in later.user_texts()), later.user_texts()
    assert model.pending == 0


@pytest.mark.timeout(90, func_only=True)
async def test_gemini_cli_interrupt_end_to_end(tmp_path: Path) -> None:
    """Esc while Gemini waits for a slow model ends the turn: ``waiting``, reason
    ``interrupted`` (ptyvisor infers it from the key), and no late hook brings
    ``working`` back."""
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=60)
        await run.wait_screen(ready, wait=30)
        model.script(replace(Reply.text("Too late LATE-1"), delay=20.0))
        mark = run.mark()
        await run.submit("Take your time")
        await run.wait_phase("working", since=mark)
        await run.scripted_request(0, "the slow request")
        await run.wait_screen("esc to cancel", wait=10)
        mark = run.mark()
        await run.type(ESC)
        interrupted = await run.wait_phase("waiting", since=mark, wait=10)
        assert interrupted.activity.reason == "interrupted"
        await run.wait_screen("Request cancelled", wait=10)
        await anyio.sleep(1)  # any late hook would have landed by now
        assert run.changes[-1].activity.phase.value == "waiting", run.phases
        assert run.phases == ["starting", "waiting", "working", "waiting"]
        await run.assert_clean()


@pytest.mark.timeout(90, func_only=True)
async def test_gemini_cli_queued_message_outlives_a_tool_call(tmp_path: Path) -> None:
    """A tool call's end clears only its own request (by id): an id-less clear would
    read as a new prompt and drop the message queued meanwhile."""
    queued = "Then say QUEUED-TOOL-3"
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=60)
        await run.wait_screen(ready, wait=30)
        model.script(
            replace(Reply.shell(AGENT, "echo quick-tool-ran"), delay=3.0),  # read-only: no ask
            Reply.text("First part DONE-A"),
            Reply.text("Second part DONE-B"),
        )
        mark = run.mark()
        await run.submit("Run a quick command")
        await run.wait_phase("working", since=mark)
        await run.client.send_message(run.session_id, queued)
        call = await model.wait_for_request(lambda r: r.call_id is not None)  # sent by now
        _, result = await model.answer_to(call)
        assert "quick-tool-ran" in result.output, result
        later = await model.wait_for_request(
            lambda r: r.outcome == "scripted" and r.mentions(queued), wait=30
        )
        assert any(queued in text for text in later.user_texts()), later.user_texts()
        await run.wait_screen("DONE-B", wait=20)
        await run.wait_phase("waiting", since=mark + 1)
        summary = next(s for s in await run.client.list() if s.id == run.session_id)
        assert summary.queued_message is None
        await run.assert_clean()
    assert model.pending == 0
