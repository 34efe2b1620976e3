"""Qwen Code end to end under ptyvisor: the real TUI, our real hooks (Claude-style,
installed through a session copy of Qwen's system defaults), the real server, a real
WebSocket client.

The client sees every phase of a session: Ready, a turn with an approval and a question
answered by keystrokes in the terminal, a failed turn (the provider's 403, reported by
the ``StopFailure`` hook) and the exit. Then: approvals answered from the client (with
``qwen_code_remote_answers`` on: Qwen shows its own prompt only after the hook), a
message queued while Qwen works (the Stop hook blocks with it), and an interrupt. A
prompt typed the moment ptyvisor says Ready: tests/agents/test_ready_e2e.py.
"""

# ruff: noqa: RUF001  (the TUI draws its marks with non-ASCII characters)
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from ptyvisor.config import Settings
from tests.agents.fake_model import FakeModelServer, Reply
from tests.agents.test_claude_code_answers import acts_on_a_queued_message, answer, error_of, held
from tests.agents.under_ptyvisor import FULL_TURN_PHASES, agent_session, row

pytestmark = pytest.mark.anyio

AGENT = "qwen-code"
ENTER = "\r"
DOWN = "\x1b[B"
CTRL_C = "\x03"
SECRET = "sk-ant-api03-e2eSecretValue0123456789abcdefghijklmnop"
COMMAND = f"echo tool-ran {SECRET} > out.txt && cat out.txt"
SHOWN_COMMAND = "echo tool-ran sk-ant-*** > out.txt && cat out.txt"
QUESTION = "Which colour?"
OPTIONS = ["Red", "Blue", "Green"]
KEY_SETTLE = 0.6
"""Keys typed with a dialog's first frame may be dropped; nothing says when it reads."""
PROMPT = "Type your message"


def ready(screen: str) -> bool:
    return PROMPT in screen


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_session_end_to_end(tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=60)
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
        call = await run.scripted_request(0, "the first model request")

        approval = await run.wait_interaction(since=mark)
        assert approval.kind == "approval"
        assert approval.tool == "run_shell_command"
        assert approval.title == "Run a shell command"
        assert row(approval, "Command") == (SHOWN_COMMAND, True)
        assert SECRET not in approval.model_dump_json()
        await run.wait_screen("Allow execution", wait=10)
        summary = next(s for s in await run.client.list() if s.id == run.session_id)
        assert not summary.answerable  # remote answers are off by default
        assert not (run.project / "out.txt").exists(), "ran before it was approved"
        mark = run.mark()
        await run.answer_with_keys(ENTER, settle=KEY_SETTLE)
        asked, result = await model.answer_to(call)
        assert "tool-ran" in result.output, result

        question = await run.wait_interaction(since=mark)
        assert question.kind == "question"
        assert question.title == "Qwen Code has a question"
        assert [q.question for q in question.questions] == [QUESTION]
        assert [o.label for o in question.questions[0].options] == OPTIONS
        assert (await error_of(run, question.id, answers={"q0": ["Blue"]})).code == (
            "not_answerable"
        )
        await run.wait_screen("Pick Blue", wait=10)
        mark = run.mark()
        # An Enter in the same read as the arrow selects the option the arrow left.
        await anyio.sleep(KEY_SETTLE)
        await run.type(DOWN)
        await run.wait_screen("❯ 2. Blue", wait=10)
        await run.answer_with_keys(ENTER, settle=KEY_SETTLE)
        _, chosen = await model.answer_to(asked)
        assert "Blue" in chosen.output, chosen
        await run.wait_phase("waiting", since=mark)
        await run.wait_screen("DONE-1", wait=10)

        # A turn the provider fails at once: 403 is not retried ("auth-error").
        model.script(Reply.error(403, "fake model: prompt rejected E2E-403"))
        mark = run.mark()
        await run.submit("This one fails")
        failed = await run.wait_phase("failed", since=mark)
        assert failed.activity.reason is not None
        assert "E2E-403" in failed.activity.reason, failed.activity.reason
        await run.wait_screen(ready, wait=10)

        # Quit: Ctrl-C twice on an empty prompt.
        await anyio.sleep(KEY_SETTLE)
        await run.type(CTRL_C)
        await run.wait_screen("again to exit", wait=10)
        await run.type(CTRL_C)
        await run.wait_phase("stopped", wait=15)

        assert run.phases == FULL_TURN_PHASES
        await run.assert_clean()
    assert model.pending == 0
    assert (run.project / "out.txt").read_text().split()[0] == "tool-ran"


ALLOWED = "echo allowed-ran > allowed.txt && cat allowed.txt"
DENIED = "echo denied-ran > denied.txt"
DENIAL = "not this one E2E-DENY"


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_answered_from_a_client(tmp_path: Path) -> None:
    """With remote answers on, Qwen's PermissionRequest hook holds (Qwen shows no prompt
    meanwhile): an allow runs the command, a deny with a message does not and the model
    is told; a second answer is ``gone``."""
    settings = Settings(qwen_code_remote_answers=True)
    async with (
        FakeModelServer() as model,
        agent_session(AGENT, tmp_path, model, settings=settings) as run,
    ):
        await run.wait_phase("waiting", wait=60)
        await run.wait_screen(ready, wait=30)
        model.script(
            Reply.shell(AGENT, ALLOWED, description="Write the allowed file"),
            Reply.shell(AGENT, DENIED, description="Write the denied file"),
            Reply.text("All done DONE-2"),
        )
        mark = run.mark()
        await run.submit("Answer me remotely")
        first = await run.scripted_request(0, "the first model request")

        approval = await run.wait_interaction(since=mark)
        assert row(approval, "Command") == (ALLOWED, True)
        await held(run, approval.id)
        assert not (run.project / "allowed.txt").exists(), "ran before it was approved"
        mark = run.mark()
        await answer(run, approval.id, behavior="allow")
        _, result = await model.answer_to(first)
        assert "allowed-ran" in result.output, result
        assert (run.project / "allowed.txt").read_text().strip() == "allowed-ran"
        assert (await error_of(run, approval.id, behavior="deny")).code == "gone"

        second = model.scripted[1]
        denial = await run.wait_interaction(since=mark)
        assert row(denial, "Command") == (DENIED, True)
        await held(run, denial.id)
        mark = run.mark()
        await answer(run, denial.id, behavior="deny", message=DENIAL)
        _, result = await model.answer_to(second)
        assert DENIAL in result.output, result
        assert not (run.project / "denied.txt").exists(), "ran although it was denied"

        await run.wait_phase("waiting", since=mark)
        await run.wait_screen("DONE-2", wait=10)
        assert run.phases == [
            "starting",
            "waiting",
            "working",
            "needs_input",
            "working",
            "needs_input",
            "working",
            "waiting",
        ]
        await run.assert_clean()
    assert model.pending == 0


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Qwen works becomes its next instruction: the Stop hook
    blocks the stop with it (Qwen sends the reason as the next user message)."""
    queued = "Now say QUEUED-NEXT-7"
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=60)
        await run.wait_screen(ready, wait=30)
        later = await acts_on_a_queued_message(run, queued)
        assert queued in later.user_texts()[-1], later.summary()
        # The Stop hook's own frame says waiting before it blocks, then working again.
        turns = ["starting", "waiting", "working", "waiting", "working", "waiting"]
        await run.wait_change(lambda _: run.phases == turns, wait=20)
    assert model.pending == 0


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_keeps_a_queued_message_across_a_tool_call(tmp_path: Path) -> None:
    """Qwen fires UserPromptSubmit for the request carrying a tool's result too; that is
    no new prompt, so a message queued before it is still what the Stop hook hands on."""
    queued = "Then say QUEUED-AFTER-TOOL"
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=60)
        await run.wait_screen(ready, wait=30)
        model.script(
            replace(Reply.shell(AGENT, ALLOWED, description="Write it"), delay=3.0),
            Reply.text("First part DONE-1"),
            Reply.text("Second part DONE-2"),
        )
        mark = run.mark()
        await run.submit("Start working")
        await run.wait_phase("working", since=mark)
        await run.client.send_message(run.session_id, queued)
        await run.wait_interaction(since=mark)
        await run.wait_screen("Allow execution", wait=10)
        await run.answer_with_keys(ENTER, settle=KEY_SETTLE)
        later = await model.wait_for_request(
            lambda r: r.outcome == "scripted" and r.mentions(queued), wait=30
        )
        assert queued in later.user_texts()[-1], later.summary()
        await run.wait_screen("DONE-2", wait=20)
        turns = ["starting", "waiting", "working", "needs_input", "working", "waiting"]
        turns += ["working", "waiting"]  # the Stop hook's waiting, then the queued message
        await run.wait_change(lambda _: run.phases == turns, wait=20)
        await run.assert_clean()
    assert model.pending == 0


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_interrupt_end_to_end(tmp_path: Path) -> None:
    """Esc while Qwen waits for a slow model reply ends the turn (Qwen puts the prompt
    back in its input box): ``waiting``, reason ``interrupted`` (inferred by ptyvisor
    from the keystroke: no hook fires), and no late hook brings ``working`` back."""
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
        await run.type("\x1b")
        interrupted = await run.wait_phase("waiting", since=mark, wait=10)
        assert interrupted.activity.reason == "interrupted"
        # The turn is gone: Qwen puts the prompt back in its input box.
        await run.wait_screen(lambda screen: "esc to cancel" not in screen, wait=10)
        await anyio.sleep(2)  # any late hook would have landed by now
        assert run.phases == ["starting", "waiting", "working", "waiting"]
        assert "LATE-1" not in await run.screen()
        await run.assert_clean()
