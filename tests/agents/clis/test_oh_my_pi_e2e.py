"""oh-my-pi end to end: the real TUI (``omp`` 18.2 on Bun) started through ptyvisor
with Pi's extension (``-e``), a real WebSocket client watching, the fake model
scripting each turn.

oh-my-pi is a Pi fork with events of its own: no ``agent_settled`` (the outcome rides
on ``agent_end.willContinue``), announced retries (``auto_retry_start``/``_end``),
and an approval prompt (``tool_approval_requested``/``_resolved``, asked in
``--approval-mode always-ask``; the default, ``yolo``, asks nothing). What a client
must see is the same as for Pi: starting, waiting once its prompt shows, working for
a turn, waiting at its end, needs_input while an approval is asked, failed once,
stopped at exit.
"""

from __future__ import annotations

import contextlib
import functools
import re
from pathlib import Path

import anyio
import pytest

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.wire.protocol import ActivityChanged
from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.ready import DIALOG_SETTLE, PROMPT_SHOWN, quit_agent
from tests.agents.clis.under_ptyvisor import AgentRun, agent_session

pytestmark = pytest.mark.anyio

AGENT = "oh-my-pi"
COMMAND = "echo omp-tool-ran > out.txt && cat out.txt"
ERROR = "Fake provider is temporarily unavailable"
ready = PROMPT_SHOWN[AGENT]


@pytest.mark.timeout(150, func_only=True)
async def test_oh_my_pi_under_ptyvisor(tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session(AGENT, tmp_path, model) as run:
        await run.wait_screen(ready, wait=60)
        started = await run.wait_phase("waiting", wait=20)
        assert started.activity.native_session_id is not None, "session_start names it"

        # 1. A prompt; the model runs a shell command (no approval in yolo), then answers.
        model.script(Reply.shell(AGENT, COMMAND), Reply.text("All done DONE-OMP"))
        mark, since = run.mark(), len(model.requests)
        await run.submit("Write the marker file")
        await run.wait_phase("working", since=mark)
        call = await run.scripted_request(since, "the shell call")
        assert call.call_id is not None
        answered = await run.scripted_request(call.index + 1, "the answer after the tool")
        result = answered.tool_result(call.call_id)
        assert result is not None and "omp-tool-ran" in result.output, result
        assert (run.project / "out.txt").read_text().strip() == "omp-tool-ran"
        done = await run.wait_phase("waiting", since=mark, wait=30)
        assert done.activity.reason is None
        await run.wait_screen("DONE-OMP", wait=10)

        # 2. A request that fails twice, retried by oh-my-pi, then answered: working
        # throughout, never a Failed between the attempts.
        model.script(Reply.error(503, ERROR, times=2), Reply.text("Recovered DONE-RETRY"))
        mark, since = run.mark(), len(model.requests)
        await run.submit("This one is retried")
        await run.wait_phase("working", since=mark)
        for n in range(3):
            since = (await run.scripted_request(since, f"attempt {n + 1}", wait=30)).index + 1
        await run.wait_phase("waiting", since=mark, wait=30)
        assert [c.activity.phase for c in run.changes[mark:]] == [
            ActivityPhase.WORKING,
            ActivityPhase.WAITING,
        ]
        await run.wait_screen("DONE-RETRY", wait=10)

        # 3. A request refused for good (401 is not retried): failed, at once, once.
        model.script(Reply.error(401, ERROR))
        mark = run.mark()
        await run.submit("This one fails")
        await run.wait_phase("working", since=mark)
        failed = await run.wait_phase("failed", since=mark, wait=30)
        assert failed.activity.reason is not None and ERROR in failed.activity.reason
        assert [c.activity.phase for c in run.changes[mark:]] == [
            ActivityPhase.WORKING,
            ActivityPhase.FAILED,
        ], "never Working again after the failure"

        # 4. Quit: Ctrl-D on an empty editor exits, with no reason.
        await quit_agent(run, AGENT)
        assert run.changes[-1].activity.reason is None

        assert run.phases == [
            "starting",
            "waiting",
            "working",
            "waiting",
            "working",  # retried
            "waiting",
            "working",
            "failed",
            "stopped",
        ], run.phases
        await run.assert_clean()
    assert model.pending == 0


@pytest.mark.timeout(150, func_only=True)
async def test_oh_my_pi_approval_is_needs_input(tmp_path: Path) -> None:
    """In ``--approval-mode always-ask`` oh-my-pi asks before the shell runs: the
    session needs input, reason ``approval: bash``, until the user allows it by key;
    then working, and waiting at the turn's end."""
    async with (
        FakeModelServer() as model,
        agent_session(AGENT, tmp_path, model, args=["--approval-mode", "always-ask"]) as run,
    ):
        await run.wait_screen(ready, wait=60)
        await run.wait_phase("waiting", wait=20)
        model.script(Reply.shell(AGENT, COMMAND), Reply.text("Allowed DONE-ASK"))
        mark = run.mark()
        await run.submit("Write the marker file")
        asked = await run.wait_phase("needs_input", since=mark, wait=30)
        assert asked.activity.reason == "approval: bash"
        assert not (run.project / "out.txt").exists(), "the approval holds the tool"
        await run.wait_screen(APPROVAL, wait=10)
        answered = run.mark()
        await run.type("\r")  # the first choice allows it
        await run.wait_phase("working", since=answered, wait=10)
        await run.wait_phase("waiting", since=answered, wait=30)
        assert (run.project / "out.txt").read_text().strip() == "omp-tool-ran"
        assert run.phases == ["starting", "waiting", "working", "needs_input", "working", "waiting"]
    model.assert_no_unexpected()


APPROVAL = "Allow"


@pytest.mark.timeout(150, func_only=True)
async def test_oh_my_pi_first_run_wizard_is_not_ready(tmp_path: Path) -> None:
    """On a first run oh-my-pi reports session_start, then shows its setup wizard:
    ptyvisor says it needs input (the wizard's step), never Ready, until the user has
    left the wizard and the prompt shows."""
    async with (
        FakeModelServer() as model,
        agent_session(AGENT, tmp_path, model, configure=_first_run) as run,
    ):
        await run.wait_screen("Setup step", wait=60)
        await run.wait_change(_wizard_step, wait=20)
        asked = run.phases.index("needs_input")
        assert run.phases[asked:] == ["needs_input"], "the wizard shows until the user leaves it"
        await _leave_the_wizard(run)
        await run.wait_screen(ready, wait=30)
        ready_change = await run.wait_phase("waiting", wait=20)
        assert ready_change.activity.source == "extension"
        # Its editor is drawn (and Ready reported) a moment before the wizard covers it.
        assert run.phases in (
            ["starting", "needs_input", "waiting"],
            ["starting", "waiting", "needs_input", "waiting"],
        ), run.phases
    model.assert_no_unexpected()


def _first_run(env: dict[str, str]) -> None:
    del env["OMP_SKIP_SETUP"]


def _wizard_step(change: ActivityChanged) -> bool:
    reason = change.activity.reason or ""
    return change.activity.phase is ActivityPhase.NEEDS_INPUT and "Setup step" in reason


STEP = re.compile(r"Setup step \d+ of \d+")


async def _leave_the_wizard(run: AgentRun) -> None:
    """Esc skips each step, as the wizard's footer says; a key that arrives with a
    step's first frames may be dropped, so each step gets Esc until it goes."""
    for _ in range(30):
        step = STEP.search(await run.screen())
        if step is None:
            return
        await anyio.sleep(DIALOG_SETTLE)
        await run.type("\x1b")
        with contextlib.suppress(AssertionError):
            await run.wait_screen(functools.partial(_gone, step.group(0)), wait=5)
    raise AssertionError(f"still in the wizard:\n{await run.screen()}")


def _gone(text: str, screen: str) -> bool:
    return text not in screen
