"""Answering the real Claude Code TUI from a WebSocket client, under ptyvisor, with the
fake model server: no keystroke ever reaches Claude's own dialogs.

One turn: a Bash approval allowed from the client (the command runs, its output
reaches the model), a second one denied with a message (it does not run, the model
gets the denial), a question answered from the client (the model gets the chosen
option), then a text answer. A second answer to an answered interaction is ``gone``.
Claude's quirks: see ``tests/agents/test_claude_code_e2e.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from ptyvisor.client import ServerError
from tests.agents.fake_model import FakeModelServer, Reply, Request
from tests.agents.under_ptyvisor import AgentRun, agent_session, row

pytestmark = pytest.mark.anyio

AGENT = "claude-code"
ALLOWED = "echo allowed-ran > allowed.txt && cat allowed.txt"
DENIED = "echo denied-ran > denied.txt"
DENIAL = "not this one E2E-DENY"
QUESTION = "Which colour?"
OPTIONS = ["Red", "Blue", "Green"]
TOPPINGS = "Which toppings?"


def ready(screen: str) -> bool:
    return "\u276f" in screen and "manual mode on" in screen


async def answer(run: AgentRun, ident: str, **fields: Any) -> None:
    await run.client.request(
        {"type": "answer", "session": run.session_id, "interaction": ident, **fields}
    )


async def error_of(run: AgentRun, ident: str, **fields: Any) -> ServerError:
    with pytest.raises(ServerError) as caught:
        await answer(run, ident, **fields)
    return caught.value


async def held(run: AgentRun, ident: str, *, wait: float = 20) -> None:
    """Until the hook's request for ``ident`` is held on the control socket: an answer
    that never fits (a suggestion without behavior) is ``gone`` before, ``bad_request``
    from then on."""
    with anyio.fail_after(wait):
        while (await error_of(run, ident, suggestion=99)).code != "bad_request":  # noqa: ASYNC110 - polls the server
            await anyio.sleep(0.1)


@pytest.mark.timeout(90, func_only=True)
async def test_claude_code_answered_from_a_client(tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=30)
        await run.wait_screen(ready, wait=30)
        model.script(
            Reply.shell(AGENT, ALLOWED, description="Write the allowed file"),
            Reply.shell(AGENT, DENIED, description="Write the denied file"),
            Reply.ask(AGENT, QUESTION, OPTIONS),
            Reply.ask(AGENT, TOPPINGS, ["Cheese", "Olives", "Basil"], multi_select=True),
            Reply.text("All done DONE-2"),
        )
        mark = run.mark()
        await run.submit("Answer me remotely")
        first = await model.wait_for_request(lambda r: r.outcome == "scripted")

        # (a) Allowed from the client: the command runs, its output reaches the model.
        approval = await run.wait_interaction(since=mark)
        assert approval.kind == "approval"
        assert row(approval, "Command") == (ALLOWED, True)
        await held(run, approval.id)
        assert not (run.project / "allowed.txt").exists(), "ran before it was approved"
        mark = run.mark()
        await answer(run, approval.id, behavior="allow")
        _, result = await model.answer_to(first)
        assert "allowed-ran" in result.output and not result.is_error, result
        assert (run.project / "allowed.txt").read_text().strip() == "allowed-ran"

        # (d) A second answer to the answered approval is gone.
        assert (await error_of(run, approval.id, behavior="deny")).code == "gone"

        # (b) Denied from the client with a message: nothing runs, the model is told.
        second = model.scripted[1]
        denial = await run.wait_interaction(since=mark)
        assert row(denial, "Command") == (DENIED, True)
        await held(run, denial.id)
        mark = run.mark()
        await answer(run, denial.id, behavior="deny", message=DENIAL)
        _, result = await model.answer_to(second)
        assert DENIAL in result.output, result
        assert not (run.project / "denied.txt").exists(), "ran although it was denied"

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


async def acts_on_a_queued_message(run: AgentRun, queued: str) -> Request:
    """Queue ``queued`` while the agent works on a turn; returns the model request that
    carries it (the agent's Stop hook blocked the stop with it as the reason), once
    the agent has finished that too and nothing is queued any more."""
    run.model.script(
        replace(Reply.text("First part DONE-1"), delay=3.0),  # working meanwhile
        Reply.text("Second part DONE-2"),
    )
    mark = run.mark()
    await run.submit("Start working")
    await run.wait_phase("working", since=mark)
    await run.client.send_message(run.session_id, queued)
    summary = next(s for s in await run.client.list() if s.id == run.session_id)
    assert summary.queued_message == queued
    later = await run.model.wait_for_request(
        lambda r: r.outcome == "scripted" and r.mentions(queued), wait=30
    )
    await run.wait_screen("DONE-2", wait=20)
    await run.wait_phase("waiting", since=mark + 1)
    summary = next(s for s in await run.client.list() if s.id == run.session_id)
    assert summary.queued_message is None
    await run.assert_clean()
    return later


@pytest.mark.timeout(90, func_only=True)
async def test_claude_code_acts_on_a_queued_message(tmp_path: Path) -> None:
    """A message queued while Claude works becomes its next instruction: the Stop hook
    blocks the stop with it, and the model sees it in the next request."""
    queued = "Now say QUEUED-NEXT-7"
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=30)
        await run.wait_screen(ready, wait=30)
        later = await acts_on_a_queued_message(run, queued)
        assert any(queued in text for text in later.user_texts()), later.summary()
    assert model.pending == 0


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
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=30)
        await run.wait_screen(ready, wait=30)
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
