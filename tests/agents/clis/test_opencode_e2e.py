"""OpenCode, and its fork Kilo Code CLI, end to end: the real TUI started through
ptyvisor, its real plugin reporting activity in-band, a real WebSocket client watching,
the fake model scripting each turn.

What the client must see, in order (``run.phases``): starting (the server's own phase
until the plugin speaks), waiting once OpenCode is up, then per turn working, with
needs_input while an approval or a question is pending (working again once it is
answered in the terminal), waiting at the end of a turn; waiting with reason
"interrupted" after Esc Esc during a turn; failed with the provider's message after an
error reply; stopped when the TUI quits with status 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from ptyvisor.agents.activity import ActivityPhase
from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.ready import PROMPT_SHOWN
from tests.agents.clis.under_ptyvisor import AgentRun, agent_session, cleared_to_working
from tests.timeouts import scaled

pytestmark = pytest.mark.anyio

ENTER = "\r"
ESC = "\x1b"
DOWN = "\x1b[B"
CTRL_C = "\x03"
CTRL_D = "\x04"
QUIT = {"opencode": CTRL_C, "kilo": CTRL_D}
COMMAND = "echo approved-ran > out.txt && cat out.txt"
SLOW_COMMAND = "sleep 30 && echo slow-finished"
QUESTION = "Which colour?"
OPTIONS = ["Red", "Blue", "Green"]
ERROR = "Fake provider says: this request is malformed"
DIALOG_SETTLE = 0.3
"""OpenCode draws its permission / question dialog a frame before it reads keys: keys
arriving in the same instant can be lost (the offline smoke test learned the same)."""


@pytest.mark.timeout(120, func_only=True)
@pytest.mark.parametrize("agent", ["opencode", "kilo"])
async def test_opencode_under_ptyvisor(agent: str, tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session(agent, tmp_path, model) as run:
        await run.wait_screen(PROMPT_SHOWN[agent], wait=30)
        await run.wait_phase("waiting", wait=10)

        # 1. A prompt; the model asks for an approved shell command.
        model.script(
            Reply.shell("opencode", COMMAND, description="Write the marker file"),
            Reply.ask("opencode", QUESTION, OPTIONS, header="Colour"),
            Reply.text("All done DONE-OPENCODE"),
        )
        mark, since = run.mark(), len(model.requests)
        await run.submit("Write the marker file")
        await run.wait_phase("working", since=mark)
        call = await run.scripted_request(since, "the shell call")
        approval = await run.wait_interaction(since=mark, wait=30)
        assert approval.kind == "approval"
        assert approval.agent == agent
        assert approval.tool == "bash"
        assert approval.title == "Run a shell command"
        assert {"label": "Command", "value": COMMAND, "monospace": True} in [
            row.model_dump() for row in approval.rows
        ]
        assert not (run.project / "out.txt").exists(), "ran before it was approved"
        await run.wait_screen("Permission required", wait=15)
        await run.wait_screen("Allow once", wait=5)
        at_approval = run.mark()
        await run.answer_with_keys(ENTER, settle=DIALOG_SETTLE, wait=15)  # "Allow once"

        # 2. The command's output reached the model, which asks a question.
        assert call.call_id is not None
        call_id = call.call_id
        asked = await run.scripted_request(call.index + 1, "the question call")
        result = asked.tool_result(call_id)
        assert result is not None and "approved-ran" in result.output, result
        assert (run.project / "out.txt").read_text().strip() == "approved-ran"
        question = await run.wait_interaction(since=at_approval, wait=30)
        assert question.kind == "question"
        assert question.tool == "question"
        assert len(question.questions) == 1
        [q] = question.questions
        assert q.question == QUESTION
        assert q.header == "Colour"
        assert [o.label for o in q.options] == OPTIONS
        assert [o.description for o in q.options] == [f"Pick {o}" for o in OPTIONS]
        assert q.multi_select is False
        assert question.accepts_free_form is True
        await run.wait_screen(QUESTION, wait=15)
        await anyio.sleep(DIALOG_SETTLE)
        at_question = run.mark()
        highlighted = _style(await _ansi(run), OPTIONS[0])  # the first option is selected
        await run.type(DOWN)
        await _wait_ansi(run, lambda ansi: _style(ansi, OPTIONS[1]) == highlighted)
        await run.type(ENTER)
        await run.wait_change(cleared_to_working, since=at_question, wait=15)

        # 3. The choice reached the model; its text answer ends the turn.
        assert asked.call_id is not None
        ask_id = asked.call_id
        final = await run.scripted_request(asked.index + 1, "the answer after the question")
        answer = final.tool_result(ask_id)
        assert answer is not None and f'"{QUESTION}"="Blue"' in answer.output, answer
        done = await run.wait_phase("waiting", since=at_question, wait=30)
        assert done.activity.reason is None
        assert done.pending_interaction is None
        await run.wait_screen("DONE-OPENCODE", wait=10)

        # 4. Esc during a working turn (a long approved command): the turn ends.
        model.script(Reply.shell("opencode", SLOW_COMMAND, description="Wait a while"))
        mark, since = run.mark(), len(model.requests)
        await run.submit("Wait for a while")
        await run.wait_interaction(since=mark, wait=30)
        await run.wait_screen("Allow once", wait=15)
        await run.answer_with_keys(ENTER, settle=DIALOG_SETTLE, wait=15)
        await run.wait_screen("sleep 30", wait=10)
        at_esc = run.mark()
        await run.type(ESC)
        interrupted = await run.wait_change(
            lambda c: c.activity.phase is not ActivityPhase.WORKING, since=at_esc, wait=5
        )
        assert interrupted.activity.phase is ActivityPhase.WAITING
        assert interrupted.activity.reason == "interrupted"
        # OpenCode itself needs a second Esc within 5 s to abort the turn; its plugin
        # then reports the aborted turn as waiting / interrupted too, never as working
        # again. OpenCode ignores an Esc while its prompt is not focused yet (just after
        # the approval dialog closed), so each Esc is sent once OpenCode shows it took
        # the one before.
        await _press_until(run, ESC, lambda s: "again to interrupt" in s, pressed=True)
        await _press_until(run, ESC, lambda s: "interrupted" in s.lower())
        assert await _settled(run) is ActivityPhase.WAITING

        # 5. An error reply fails the turn with the provider's reason.
        model.script(Reply.error(400, ERROR))
        mark, since = run.mark(), len(model.requests)
        await run.submit("This one fails")
        await run.wait_phase("working", since=mark)
        failed = await run.wait_phase("failed", since=mark, wait=30)
        assert failed.activity.reason is not None and ERROR in failed.activity.reason
        assert await _settled(run) is ActivityPhase.FAILED

        # 6. Quit on an empty prompt exits 0: one Ctrl-C in OpenCode; Kilo ignores
        # Ctrl-C there and quits on Ctrl-D.
        await run.type(QUIT[agent])
        stopped = await run.wait_phase("stopped", since=mark, wait=20)
        assert stopped.activity.reason is None

        assert run.phases == [
            "starting",
            "waiting",
            "working",  # turn 1
            "needs_input",  # the approval
            "working",
            "needs_input",  # the question
            "working",
            "waiting",
            "working",  # turn 2
            "needs_input",  # the approval of the slow command
            "working",
            "waiting",  # Esc
            "working",  # turn 3
            "failed",
            "stopped",
        ], run.phases
        await run.assert_clean()
    assert model.pending == 0


async def _ansi(run: AgentRun) -> str:
    return (await run.client.snapshot(run.session_id)).screen.ansi


def _style(ansi: str, label: str) -> str | None:
    """The SGR parameters a label is drawn with (its first occurrence): OpenCode marks the
    selected option only by colour (a lighter background), never by a character."""
    match = re.search(r"\x1b\[([0-9;]*)m" + re.escape(label) + r"\x1b", ansi)
    return match.group(1) if match else None


async def _wait_ansi(run: AgentRun, predicate: Callable[[str], bool], wait: float = 5) -> None:
    with anyio.fail_after(scaled(wait)):
        while True:
            if predicate(await _ansi(run)):
                return
            await anyio.sleep(0.05)


async def _settled(run: AgentRun, quiet: float = 1.0, wait: float = 10) -> ActivityPhase:
    """The phase once no activity change has arrived for ``quiet`` seconds (late frames
    from the agent must not take the phase anywhere else)."""
    with anyio.fail_after(scaled(wait)):
        while True:
            count = len(run.changes)
            await anyio.sleep(quiet)
            if len(run.changes) == count:
                return run.changes[-1].activity.phase


async def _press_until(
    run: AgentRun, key: str, shown: Callable[[str], bool], *, pressed: bool = False
) -> None:
    """Press ``key`` until the screen satisfies ``shown`` (a key the TUI was not ready
    for is pressed again); ``pressed``: it was just pressed once already. Fails after
    five tries."""
    for attempt in range(5):
        if attempt or not pressed:
            await run.type(key)
        try:
            await run.wait_screen(shown, wait=3)
            return
        except AssertionError:
            continue
    await run.wait_screen(shown, wait=1)
