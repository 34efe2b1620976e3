"""Answering the real Claude Code TUI from a WebSocket client, under ptyvisor, with the
fake model server: no keystroke ever reaches Claude's own dialogs.

One turn: a Bash approval allowed from the client (the command runs, its output
reaches the model), a second one denied with a message (it does not run, the model
gets the denial), a question answered from the client (the model gets the chosen
option), then a text answer. A second answer to an answered interaction is ``gone``.
Claude's quirks: see ``tests/agents/clis/test_claude_code_e2e.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.agents.clis.fake_model import Reply, Request
from tests.agents.clis.scenarios import (
    OPTIONS,
    QUESTION,
    allow_then_deny,
    answer,
    error_of,
    held,
    in_a_user_text,
    queued_message_reaches_model,
    started,
)
from tests.agents.clis.under_ptyvisor import row

pytestmark = pytest.mark.anyio

AGENT = "claude-code"
TOPPINGS = "Which toppings?"


@pytest.mark.timeout(90, func_only=True)
async def test_claude_code_answered_from_a_client(tmp_path: Path) -> None:
    async with started(AGENT, tmp_path) as run:
        model = run.model
        # (a) Allowed from the client: the command runs, its output reaches the model.
        # (d) A second answer to the answered approval is gone.
        # (b) Denied from the client with a message: nothing runs, the model is told.
        mark = await allow_then_deny(
            run,
            AGENT,
            Reply.ask(AGENT, QUESTION, OPTIONS),
            Reply.ask(AGENT, TOPPINGS, ["Cheese", "Olives", "Basil"], multi_select=True),
            Reply.text("All done DONE-2"),
        )

        # (c) A question answered from the client: the model gets the chosen option.
        third = model.scripted[2]
        question = await run.wait_interaction(since=mark)
        assert question.kind == "question"
        assert [o.label for o in question.questions[0].options] == OPTIONS
        await held(run, question.id)
        mark = run.mark()
        await answer(run, question.id, answers={question.questions[0].id: ["Blue"]})
        _, result = await model.answer_to(third)
        assert f'"{QUESTION}"="Blue"' in result.output, result

        # (e) A multi-select question answered with two options: Claude gets them the
        # way its own dialog gives them (labels joined with ", ", in the order chosen).
        fourth = model.scripted[3]
        toppings = await run.wait_interaction(since=mark)
        assert toppings.questions[0].multi_select
        await held(run, toppings.id)
        await answer(run, toppings.id, answers={toppings.questions[0].id: ["Basil", "Cheese"]})
        _, result = await model.answer_to(fourth)
        assert f'"{TOPPINGS}"="Basil, Cheese"' in result.output and not result.is_error, result

        await run.wait_phase("waiting", since=mark)
        await run.wait_screen("DONE-2", wait=10)
        await run.assert_clean()
    assert model.pending == 0


@pytest.mark.timeout(90, func_only=True)
async def test_claude_code_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Claude works becomes its next instruction: the Stop hook
    blocks the stop with it, and the model sees it in the next request."""
    await queued_message_reaches_model(AGENT, tmp_path, "Now say QUEUED-NEXT-7", in_a_user_text)


def first_prompt_has(marker: str) -> Callable[[Request], bool]:
    """Requests of one thread: its first user message carries ``marker``."""
    return lambda request: marker in request.user_texts()[0]


@pytest.mark.timeout(90, func_only=True)
async def test_claude_code_subagent_approval_outlives_the_main_turn(tmp_path: Path) -> None:
    """Claude Code 2.1.332 runs every subagent in the background: the main turn ends
    while a subagent still waits for its approval. That request (raised with the
    subagent's ``agent_id``) stays held and shown after the main turn's Stop, and is
    answered from the client; the subagent's own stop is what would end it."""
    main, sub = first_prompt_has("MAIN-THREAD"), first_prompt_has("SUB-THREAD")
    command = "echo sub-ran > sub.txt && cat sub.txt"
    async with started(AGENT, tmp_path) as run:
        model = run.model
        agent_call = {"description": "Sub task", "prompt": "Run the command SUB-THREAD"}
        model.script(
            replace(Reply.tool("Agent", agent_call), when=main),
            replace(Reply.shell(AGENT, command, description="Write sub"), when=sub),
            # The main thread ends its turn only once the subagent has asked.
            replace(Reply.text("Launched LAUNCHED"), when=main, delay=4.0),
            replace(Reply.text("Sub finished SUB-DONE"), when=sub),
            replace(Reply.text("All done DONE-S"), when=main),
        )
        mark = run.mark()
        await run.submit("Use a subagent MAIN-THREAD")
        approval = await run.wait_interaction(since=mark)
        assert row(approval, "Command") == (command, True)
        assert "LAUNCHED" not in await run.screen(), "the main turn ended before it asked"
        await held(run, approval.id)
        # Claude draws this once its Stop hooks are done, after our Stop frame.
        await run.wait_screen("background agent to finish", wait=20)
        summary = next(s for s in await run.client.list() if s.id == run.session_id)
        assert summary.pending_interaction == approval
        assert (summary.answerable, summary.activity.phase.value) == (True, "needs_input")
        assert (await error_of(run, approval.id, suggestion=99)).code == "bad_request"

        mark = run.mark()
        await answer(run, approval.id, behavior="allow")
        ran = model.scripted[1]
        _, result = await model.answer_to(ran)
        assert "sub-ran" in result.output and not result.is_error, result
        await run.wait_screen("DONE-S", wait=30)
        await run.wait_phase("waiting", since=mark)
        assert run.phases[-3:] == ["needs_input", "working", "waiting"]
        await run.assert_clean()
    assert model.pending == 0
