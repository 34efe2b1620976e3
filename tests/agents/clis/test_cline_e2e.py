"""Cline CLI end to end under ptyvisor: the real TUI (offline, against the fake model),
our hook files through a session ``CLINE_DIR``, the real server, a real WebSocket
client.

The client sees every phase: Ready from the screen (Cline runs no hook before the first
prompt), a turn with an approval (reported by ``PreToolUse`` but pending only once
Cline draws its dialog) and a question (``ask_question``), both answered by keys in the
terminal (no Cline hook can answer its dialogs), a failed turn (the provider's 400:
``TaskError``), and the exit. The flows: tests/agents/clis/scenarios.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ptyvisor.errors import ServerError
from tests.agents.clis.fake_model import Reply
from tests.agents.clis.scenarios import (
    CTRL_C,
    ESC,
    KEYS,
    Session,
    answered_only_by_keys,
    interrupted_by_esc,
    session_end_to_end,
    started,
)
from tests.timeouts import scaled

pytestmark = pytest.mark.anyio

AGENT = "cline"
BUSY = "Thinking"
GONE = "Ask anything"

SESSION = Session(
    AGENT,
    tool="run_commands",
    approval_title="Run shell commands",
    typed_only=True,
    question_tool="ask_question",
    question_title="Cline has a question",
    on_question=answered_only_by_keys({"q0": ["Blue"]}),
    question_screen="Cline is asking a question",
    chosen=lambda output: "Blue" in output,
    failure_status=400,
)


@pytest.mark.timeout(150, func_only=True)
async def test_cline_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)


@pytest.mark.timeout(150, func_only=True)
async def test_cline_interrupt_end_to_end(tmp_path: Path) -> None:
    """Esc while Cline waits for a slow model reply aborts the turn, the TUI stays:
    ``waiting``, reason ``interrupted`` (from the keystroke). Cline's own report of it
    is ``SessionShutdown`` (no ``TaskCancel``), the one frame after the key; no late
    hook brings ``working`` back."""
    async with started(AGENT, tmp_path) as run:
        run.model.script(replace(Reply.text("Too late LATE-1"), delay=20.0))
        await interrupted_by_esc(run, "Take your time", BUSY, GONE, late=2, hooks_after=1)
        assert "LATE-1" not in await run.screen()


@pytest.mark.timeout(150, func_only=True)
async def test_ctrl_c_during_a_cline_turn_ends_the_session(tmp_path: Path) -> None:
    """Ctrl-C during a turn aborts it and exits the TUI at once: ``stopped``. While it
    works, a message queued for it is refused: no Cline hook could hand it over."""
    async with started(AGENT, tmp_path) as run:
        run.model.script(replace(Reply.text("Too late LATE-2"), delay=20.0))
        mark = run.mark()
        await run.submit("Take your time")
        await run.wait_phase("working", since=mark)
        await run.scripted_request(0, "the slow request")
        await run.wait_screen(BUSY, wait=10)
        with pytest.raises(ServerError) as refused:
            await run.client.send_message(run.session_id, "then run the tests")
        assert refused.value.code == "not_supported"
        summary = next(s for s in await run.client.list() if s.id == run.session_id)
        assert not summary.takes_messages and summary.queued_message is None
        await run.type(CTRL_C)
        await run.wait_phase("stopped", since=mark, wait=20)
        assert run.phases[-2:] == ["waiting", "stopped"], run.phases


@pytest.mark.timeout(150, func_only=True)
async def test_esc_at_a_cline_approval_denies_it_and_the_turn_goes_on(tmp_path: Path) -> None:
    """Esc at Cline's approval dialog is Deny: the call does not run, the model is
    told, and the turn goes on to its end, with no Ready in between."""
    async with started(AGENT, tmp_path) as run:
        run.model.script(
            Reply.shell(AGENT, "echo denied > denied.txt", description="Write"),
            Reply.text("Fine DONE-DENIED"),
        )
        mark = run.mark()
        await run.submit("Write the file")
        call = await run.scripted_request(0, "the shell call")
        await run.wait_interaction(since=mark)
        await run.wait_screen(KEYS[AGENT].approval or "", wait=10)
        await run.answer_with_keys(ESC, settle=KEYS[AGENT].approve_after)
        _, result = await run.model.answer_to(call)
        assert "rejected" in result.output, result
        await run.wait_screen("DONE-DENIED", wait=20)
        await run.wait_phase("waiting", since=mark + 1, wait=20)
        assert run.phases[-4:] == ["working", "needs_input", "working", "waiting"], run.phases
        assert not (run.project / "denied.txt").exists()
        await run.assert_clean()


@pytest.mark.timeout(150, func_only=True)
async def test_a_long_prompt_cline_folds_into_a_marker_is_confirmed(tmp_path: Path) -> None:
    """Cline folds a paste of 5 lines or more into "[… Pasted +N lines]" and records
    that marker as the prompt its hook reads back: the ``prompt`` request is confirmed
    by the marker's digest, and the model gets the whole text once."""
    text = "Refactor the parser module\n  1. split it\n  2. test it\n  3. time it\n  4. ship it"
    async with started(AGENT, tmp_path) as run:
        run.model.script(Reply.text("Planned LONG-DONE"))
        await run.client.prompt(run.session_id, text, ready_wait=30, confirm_wait=scaled(20))
        request = await run.scripted_request(0, "the prompt")
        sent = [t.replace("\r", "\n") for t in request.user_texts()]
        assert sum(text in t for t in sent) == 1, request.summary()
        await run.wait_screen("LONG-DONE", wait=20)
        await run.assert_clean()
