"""Qwen Code end to end under ptyvisor: the real TUI, our real hooks (Claude-style,
installed through a session copy of Qwen's system defaults), the real server, a real
WebSocket client.

The client sees every phase of a session: Ready, a turn with an approval and a question
answered by keystrokes in the terminal, a failed turn (the provider's 403, reported by
the ``StopFailure`` hook) and the exit. Then: approvals answered from the client (with
``qwen_code_remote_answers`` on: Qwen shows its own prompt only after the hook), a
message queued while Qwen works (the Stop hook blocks with it), and an interrupt. A
prompt typed the moment ptyvisor says Ready: tests/agents/clis/test_ready_e2e.py. The
flows: tests/agents/clis/scenarios.py.
"""

# ruff: noqa: RUF001  (the TUI draws its marks with non-ASCII characters)
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import pytest

from ptyvisor.config import Settings
from tests.agents.clis.fake_model import Reply, Request
from tests.agents.clis.scenarios import (
    ALLOWED,
    CTRL_C,
    ESC,
    KEYS,
    Session,
    allow_then_deny,
    answered_only_by_keys,
    interrupted_by_esc,
    queued_message_reaches_model,
    session_end_to_end,
    started,
)
from tests.agents.clis.under_ptyvisor import FULL_TURN_PHASES, AgentRun

pytestmark = pytest.mark.anyio

AGENT = "qwen-code"


SESSION = Session(
    AGENT,
    tool="run_shell_command",
    approval_title="Run a shell command",
    on_approval=None,
    typed_only=True,  # remote answers are off by default
    question_title="Qwen Code has a question",
    on_question=answered_only_by_keys({"q0": ["Blue"]}),
    question_screen="Pick Blue",
    picked="❯ 2. Blue",
    chosen=lambda output: "Blue" in output,
    failure_status=403,  # not retried ("auth-error")
)


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_answered_from_a_client(tmp_path: Path) -> None:
    """With remote answers on, Qwen's PermissionRequest hook holds (Qwen shows no prompt
    meanwhile): an allow runs the command, a deny with a message does not and the model
    is told; a second answer is ``gone``."""
    settings = Settings(qwen_code_remote_answers=True)
    async with started(AGENT, tmp_path, settings=settings) as run:
        mark = await allow_then_deny(run, AGENT, Reply.text("All done DONE-2"))
        await run.wait_phase("waiting", since=mark)
        await run.wait_screen("DONE-2", wait=10)
        # Ready, then one turn with two approvals, each answered from the client.
        assert run.phases == FULL_TURN_PHASES[:8]
        await run.assert_clean()
    assert run.model.pending == 0


def last_user_text(*turns: str) -> Callable[[AgentRun, Request, str], Awaitable[None]]:
    """A check that the queued message is the request's last user message (the Stop
    hook's reason) and the phases come to ``turns``."""

    async def check(run: AgentRun, later: Request, queued: str) -> None:
        assert queued in later.user_texts()[-1], later.summary()
        await run.wait_change(lambda _: run.phases == list(turns), wait=20)
        await run.assert_clean()

    return check


# The Stop hook's own frame says waiting before it blocks, then working again.
QUEUED_AT_ONCE = last_user_text("starting", "waiting", "working", "waiting", "working", "waiting")
QUEUED_AFTER_THE_TOOL = last_user_text(
    *["starting", "waiting", "working", "needs_input", "working", "waiting"],
    *["working", "waiting"],  # the Stop hook's waiting, then the queued message
)


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Qwen works becomes its next instruction: the Stop hook
    blocks the stop with it (Qwen sends the reason as the next user message)."""
    await queued_message_reaches_model(AGENT, tmp_path, "Now say QUEUED-NEXT-7", QUEUED_AT_ONCE)


@pytest.mark.timeout(120, func_only=True)
async def test_qwen_code_keeps_a_queued_message_across_a_tool_call(tmp_path: Path) -> None:
    """Qwen fires UserPromptSubmit for the request carrying a tool's result too; that is
    no new prompt, so a message queued before it is still what the Stop hook hands on."""
    await queued_message_reaches_model(
        AGENT,
        tmp_path,
        "Then say QUEUED-AFTER-TOOL",
        QUEUED_AFTER_THE_TOOL,
        tool=Reply.shell(AGENT, ALLOWED, description="Write it"),
        meanwhile=approved_by_keys,
    )


async def approved_by_keys(run: AgentRun, mark: int) -> None:
    await run.wait_interaction(since=mark)
    await run.wait_screen("Allow execution", wait=10)
    await run.answer_with_keys(KEYS[AGENT].approve, settle=KEYS[AGENT].approve_after)


@pytest.mark.timeout(120, func_only=True)
@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["esc", "ctrl-c"])
async def test_qwen_code_interrupt_end_to_end(tmp_path: Path, key: str) -> None:
    """Esc while Qwen waits for a slow model reply ends the turn (Qwen puts the prompt
    back in its input box): ``waiting``, reason ``interrupted`` (inferred by ptyvisor
    from the keystroke: no hook fires), and no late hook brings ``working`` back."""
    async with started(AGENT, tmp_path) as run:
        run.model.script(replace(Reply.text("Too late LATE-1"), delay=20.0))
        # The turn is gone: Qwen puts the prompt back in its input box.
        gone = "esc to cancel"
        await interrupted_by_esc(
            run, "Take your time", gone, lambda s: gone not in s, key=key, late=2
        )
        assert "LATE-1" not in await run.screen()
