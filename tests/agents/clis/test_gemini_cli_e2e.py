"""Gemini CLI end to end under ptyvisor: the real TUI (0.61.0), our real hooks in a
session ``GEMINI_CLI_HOME``, the real server, a real WebSocket client, the fake model
speaking Gemini's ``streamGenerateContent``.

The client sees Ready (``SessionStart``), a turn with a shell command approved and an
``ask_user`` question answered by keystrokes in the TUI (Gemini's hooks cannot grant
an approval or give an answer, so the interactions are typed, not answerable from a
client), a failed turn (the provider's 400, which
``AfterAgent`` ends and the transcript explains), and the exit. A message queued while
Gemini works becomes its next request (``AfterAgent`` blocks the stop), and a prompt
typed the instant Ready arrives reaches the model (tests/agents/clis/test_ready_e2e.py).
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
    in_a_user_text,
    interrupted_by_esc,
    queued_message_reaches_model,
    session_end_to_end,
    started,
)
from tests.agents.clis.under_ptyvisor import AgentRun

pytestmark = pytest.mark.anyio

AGENT = "gemini-cli"


SESSION = Session(
    AGENT,
    tool="run_shell_command",
    approval_screen="Allow once",
    typed_only=True,  # no Gemini hook can grant an approval
    question_tool="ask_user",
    question_screen="Enter to select",
    picked="● 2.  Blue",
    chosen=lambda output: output == '{"answers":{"0":"Blue"}}',
    failure_status=400,  # Gemini does not retry a 400
    reason_ok=lambda reason: "{" not in reason,  # one human line, not a JSON body
    failed_screen="E2E-400",
)


@pytest.mark.timeout(120, func_only=True)
async def test_gemini_cli_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)


@pytest.mark.timeout(90, func_only=True)
async def test_gemini_cli_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Gemini works becomes its next request: the AfterAgent
    hook blocks the stop with it as the reason."""
    await queued_message_reaches_model(AGENT, tmp_path, "Now say QUEUED-NEXT-9", in_a_user_text)


@pytest.mark.timeout(90, func_only=True)
@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["esc", "ctrl-c"])
async def test_gemini_cli_interrupt_end_to_end(tmp_path: Path, key: str) -> None:
    """Esc while Gemini waits for a slow model ends the turn: ``waiting``, reason
    ``interrupted`` (ptyvisor infers it from the key), and no late hook brings
    ``working`` back."""
    async with started(AGENT, tmp_path) as run:
        run.model.script(replace(Reply.text("Too late LATE-1"), delay=20.0))
        await interrupted_by_esc(
            run, "Take your time", "esc to cancel", "Request cancelled", key=key, hooks_after=1
        )


@pytest.mark.timeout(90, func_only=True)
async def test_gemini_cli_queued_message_outlives_a_tool_call(tmp_path: Path) -> None:
    """A tool call's end clears only its own request (by id): an id-less clear would
    read as a new prompt and drop the message queued meanwhile."""
    await queued_message_reaches_model(
        AGENT,
        tmp_path,
        "Then say QUEUED-TOOL-3",
        in_a_user_text,
        tool=Reply.shell(AGENT, "echo quick-tool-ran"),  # read-only: no ask
        meanwhile=quick_tool_ran,
    )


async def quick_tool_ran(run: AgentRun, mark: int) -> None:
    """The read-only command runs at once; its output reaches the model."""
    call = await run.model.wait_for_request(lambda r: r.call_id is not None)  # sent by now
    _, result = await run.model.answer_to(call)
    assert "quick-tool-ran" in result.output, result


@pytest.mark.timeout(120, func_only=True)
async def test_gemini_cli_takes_a_prompt_and_its_enter_in_one_call(tmp_path: Path) -> None:
    """``send-keys TEXT Enter`` submits: typed by the client in one write, Gemini would
    take the Enter for a newline (agents.launch.SUBMIT_GAP); ptyvisor sends it on its
    own, a gap after the text. Three turns in a row, each reaching the model."""
    async with started(AGENT, tmp_path) as run:
        for turn in range(3):
            run.model.script(Reply.text(f"ONE-CALL-DONE-{turn}"))
            mark = run.mark()
            await run.client.send_keys(run.session_id, f"One call prompt {turn}", "Enter")
            request = await run.scripted_request(turn, f"prompt {turn} sent with its Enter")
            assert any(f"One call prompt {turn}" in t for t in request.user_texts())
            await run.wait_phase("working", since=mark, wait=30)
            await run.wait_phase("waiting", since=mark, wait=30)
            await run.wait_screen(f"ONE-CALL-DONE-{turn}", wait=15)
        await run.assert_clean()
