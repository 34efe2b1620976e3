"""GitHub Copilot CLI end to end under ptyvisor: the real TUI (offline, against the fake
model), our hooks through a session plugin (``--plugin-dir``), the real server, a real
WebSocket client.

The client sees every phase: ``starting`` through Copilot's folder-trust dialog (its
keys answer the dialog, so the session is not Ready while it shows), Ready from the
prompt on screen, a turn with an approval (from the ``permission_prompt``
notification) and a question (``ask_user``), both answered by keys in the terminal
(Copilot's hooks cannot answer its dialogs), a failed turn (the provider's 403,
``errorOccurred``), and the exit. The flows: tests/agents/clis/scenarios.py.
"""

# ruff: noqa: RUF001  (the TUI draws its marks with non-ASCII characters)
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.agents.clis.fake_model import Reply, Request
from tests.agents.clis.scenarios import (
    CTRL_C,
    ESC,
    Session,
    answered_only_by_keys,
    interrupted_by_esc,
    queued_message_reaches_model,
    session_end_to_end,
    started,
)
from tests.agents.clis.under_ptyvisor import AgentRun

pytestmark = pytest.mark.anyio

AGENT = "copilot"
BUSY = "\u25ce Working"


SESSION = Session(
    AGENT,
    tool="bash",
    approval_title="Run a shell command",
    typed_only=True,
    question_tool="ask_user",
    question_title="Copilot has a question",
    on_question=answered_only_by_keys({"choice": ["Blue"]}),
    question_screen="Which colour?",
    picked="❯ Blue",
    chosen=lambda output: "Blue" in output,
    failure_status=403,
)


@pytest.mark.timeout(150, func_only=True)
async def test_copilot_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)


async def in_the_last_user_text(run: AgentRun, later: Request, queued: str) -> None:
    """The agentStop hook's block reason reaches the model as the next user message."""
    assert queued in later.user_texts()[-1], later.summary()
    await run.wait_change(lambda _: run.phases[-1] == "waiting", wait=20)
    await run.assert_clean()


@pytest.mark.timeout(150, func_only=True)
async def test_copilot_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Copilot works becomes its next instruction: the agentStop
    hook blocks the stop with it, as Claude's Stop hook does."""
    await queued_message_reaches_model(
        AGENT, tmp_path, "Now say QUEUED-NEXT-7", in_the_last_user_text
    )


@pytest.mark.timeout(150, func_only=True)
@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["esc", "ctrl-c"])
async def test_copilot_interrupt_end_to_end(tmp_path: Path, key: str) -> None:
    """Esc while Copilot waits for a slow model reply ends the turn: ``waiting``,
    reason ``interrupted`` (from the keystroke), and no late hook brings ``working``
    back."""
    async with started(AGENT, tmp_path) as run:
        run.model.script(replace(Reply.text("Too late LATE-1"), delay=20.0))
        # Its footer while busy: "◎ Working esc esc edit prompt".
        await interrupted_by_esc(
            run, "Take your time", BUSY, lambda s: BUSY not in s, key=key, late=2
        )
        assert "LATE-1" not in await run.screen()
