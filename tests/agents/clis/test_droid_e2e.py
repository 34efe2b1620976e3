"""Factory Droid end to end under ptyvisor: the real TUI (offline, against the fake
model), our hooks through a per-run settings layer (``--settings``), the real server, a
real WebSocket client.

The client sees every phase: Ready from SessionStart (held until the prompt shows), a
turn with an approval (its ``permission_prompt`` notification, the call read back from
the transcript) and a question (``AskUser``, its ``elicitation_dialog``), both
answered by keys in the terminal (no Droid hook can answer its dialogs), a failed turn
(the provider's 403: a Stop on Droid's error notice), and the exit. The flows:
tests/agents/clis/scenarios.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.agents.clis.fake_model import Reply
from tests.agents.clis.scenarios import (
    CTRL_C,
    Session,
    answered_only_by_keys,
    in_a_user_text,
    interrupted_by_esc,
    queued_message_reaches_model,
    session_end_to_end,
    started,
)

pytestmark = pytest.mark.anyio

AGENT = "droid"
BUSY = "Press ESC to stop"


SESSION = Session(
    AGENT,
    tool="Execute",
    approval_title="Run a shell command",
    typed_only=True,
    question_tool="AskUser",
    question_title="Droid has a question",
    on_question=answered_only_by_keys({"q0": ["Blue"]}),
    question_screen="Which colour?",
    chosen=lambda output: "[answer] Blue" in output,
    failure_status=403,
    reason_ok=lambda reason: reason.startswith("BYOK Error: 403"),
)


@pytest.mark.timeout(150, func_only=True)
async def test_droid_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)


@pytest.mark.timeout(150, func_only=True)
async def test_droid_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Droid works becomes its next instruction: the Stop hook
    blocks the stop with it, as Claude's does."""
    await queued_message_reaches_model(AGENT, tmp_path, "Now say QUEUED-NEXT-7", in_a_user_text)


@pytest.mark.timeout(150, func_only=True)
async def test_droid_interrupt_end_to_end(tmp_path: Path) -> None:
    """Esc while Droid waits for a slow model reply ends the turn: ``waiting``, reason
    ``interrupted`` (from the keystroke); Droid's own report of it (an ``idle_prompt``
    notification, no Stop) is the one frame after the key, and no late hook brings
    ``working`` back."""
    async with started(AGENT, tmp_path) as run:
        run.model.script(replace(Reply.text("Too late LATE-1"), delay=20.0))
        await interrupted_by_esc(
            run,
            "Take your time",
            BUSY,
            "Request cancelled by user",
            late=2,
            hooks_after=1,
        )
        assert "LATE-1" not in await run.screen()


@pytest.mark.timeout(150, func_only=True)
async def test_ctrl_c_does_not_end_a_droid_turn(tmp_path: Path) -> None:
    """Ctrl-C during a turn asks for a second press to exit, and Droid works on: the
    session stays ``working`` until the turn's own end, with no alarm."""
    async with started(AGENT, tmp_path) as run:
        run.model.script(replace(Reply.text("Answered anyway LATE-2"), delay=4.0))
        mark = run.mark()
        await run.submit("Take your time")
        await run.wait_phase("working", since=mark)
        await run.scripted_request(0, "the slow request")
        await run.wait_screen(BUSY, wait=10)
        await run.type(CTRL_C)
        await run.wait_screen("again to exit", wait=10)
        await run.wait_screen("LATE-2", wait=30)
        await run.wait_phase("waiting", since=mark + 1, wait=30)
        assert run.phases == ["starting", "waiting", "working", "waiting"], run.phases
        assert run.changes[-1].activity.reason is None
        await run.assert_clean()
