"""A prompt that is confirmed delivered (the ``prompt`` request), for every agent: sent
the instant the session starts, long before the agent can take input, it is typed once
Ready, submitted, and confirmed from the agent's own report of taking it (its digest);
the model gets it exactly once. Five runs each: the failure this replaces (a prompt
typed at Gemini's Ready lost under load) showed in one run of five."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptyvisor.errors import ServerError
from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.installed import AGENTS
from tests.agents.clis.ready import prompt_at_ready, quit_agent
from tests.agents.clis.under_ptyvisor import agent_session

pytestmark = pytest.mark.anyio
RUNS = 5


@pytest.mark.timeout(120, func_only=True)
@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("agent", list(AGENTS))
async def test_a_prompt_sent_as_the_session_starts_is_taken_once(
    agent: str, run: int, tmp_path: Path
) -> None:
    text = f"Say the magic word for run {run} of {tmp_path.name[-6:]}"
    async with FakeModelServer() as model, agent_session(agent, tmp_path, model) as session:
        model.script(Reply.text("The word is PROMPT-TAKEN"))
        taken = await prompt_at_ready(session, agent, text, ready_wait=90)
        ready = next(c for c in session.changes if c.activity.phase.value == "waiting")
        assert taken >= ready.activity.since, "confirmed before the agent was ready"
        request = await session.scripted_request(0, "the prompt")
        assert sum(text in t for t in request.user_texts()) == 1, request.summary()
        await session.wait_screen("PROMPT-TAKEN", wait=30)
        await session.wait_phase("waiting", since=session.mark() - 1, wait=30)
        prompted = [r for r in model.requests if any(text in t for t in r.user_texts())]
        assert all(sum(text in t for t in r.user_texts()) == 1 for r in prompted)
        await quit_agent(session, agent)
    model.assert_no_unexpected()


@pytest.mark.timeout(60, func_only=True)
async def test_a_prompt_to_a_session_that_ends_says_so(tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session("pi", tmp_path, model) as session:
        await session.wait_phase("waiting", wait=30)
        await quit_agent(session, "pi")
        with pytest.raises(ServerError) as refused:
            await session.client.prompt(session.session_id, "Too late", ready_wait=5)
        assert refused.value.code in ("session_exited", "prompt_not_taken")
