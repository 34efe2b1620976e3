"""Pi end to end: the real TUI started through ptyvisor with its real extension
(``--extension``), a real WebSocket client watching, the fake model scripting each turn.

Pi has no approvals and no ask tool: its tools run at once, so a turn is working from
the prompt to its answer. What the client must see, in order (``run.phases``):
starting (the server's own phase until the extension speaks), waiting once Pi is up,
working for a turn with a tool call, waiting at its end, working for a turn whose
request keeps failing with a retryable error, failed only once Pi has given up retrying
(the settled boundary: never a premature failed between two attempts), stopped when
the TUI quits with status 0.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ptyvisor.agents.activity import ActivityPhase
from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.ready import PROMPT_SHOWN
from tests.agents.clis.scenarios import interrupted_by_esc, started
from tests.agents.clis.under_ptyvisor import agent_session

pytestmark = pytest.mark.anyio

ENTER = "\r"
CTRL_D = "\x04"
COMMAND = "echo pi-tool-ran > out.txt && cat out.txt"
ERROR = "Fake provider is temporarily unavailable"
ATTEMPTS = 4
"""Pi retries a retryable error (503 here) 3 times by default, after 2, 4 and 8 s. Each
attempt is one request since Pi 1.x (0.73 went through an OpenAI SDK that retried a 503
twice more itself: 12 requests)."""
ready = PROMPT_SHOWN["pi"]


@pytest.mark.timeout(120, func_only=True)
async def test_pi_under_ptyvisor(tmp_path: Path) -> None:
    async with FakeModelServer() as model, agent_session("pi", tmp_path, model) as run:
        await run.wait_screen(ready, wait=30)
        await run.wait_phase("waiting", wait=10)

        # 1. A prompt; the model runs a shell command (no approval in Pi), then answers.
        model.script(Reply.shell("pi", COMMAND), Reply.text("All done DONE-PI"))
        mark, since = run.mark(), len(model.requests)
        await run.submit("Write the marker file")
        await run.wait_phase("working", since=mark)
        call = await run.scripted_request(since, "the shell call")
        assert call.call_id is not None
        call_id = call.call_id
        answered = await run.scripted_request(call.index + 1, "the answer after the tool")
        result = answered.tool_result(call_id)
        assert result is not None and "pi-tool-ran" in result.output, result
        assert (run.project / "out.txt").read_text().strip() == "pi-tool-ran"
        done = await run.wait_phase("waiting", since=mark, wait=30)
        assert done.activity.reason is None
        await run.wait_screen("DONE-PI", wait=10)

        # 2. A turn whose request fails every time: failed once Pi stops retrying.
        model.script(Reply.error(503, ERROR, times=ATTEMPTS))
        mark, since = run.mark(), len(model.requests)
        await run.submit("This one fails")
        await run.wait_phase("working", since=mark)
        last = since
        for n in range(ATTEMPTS):
            last = (await run.scripted_request(last, f"request {n + 1}", wait=30)).index + 1
            # Between attempts Pi is still on the turn: nothing but working so far.
            assert all(c.activity.phase is ActivityPhase.WORKING for c in run.changes[mark:])
        failed = await run.wait_phase("failed", since=mark, wait=15)
        assert failed.activity.reason is not None and ERROR in failed.activity.reason
        final = model.requests[last - 1]
        assert failed.activity.since >= final.at * 1000, "failed before the last attempt"
        await run.wait_screen(ERROR, wait=10)

        # 3. Quit: Ctrl-D on an empty editor exits 0 at once.
        await run.type(CTRL_D)
        stopped = await run.wait_phase("stopped", since=mark, wait=20)
        assert stopped.activity.reason is None

        assert run.phases == [
            "starting",
            "waiting",
            "working",  # the turn with a tool call
            "waiting",
            "working",  # the failing turn, through Pi's retries
            "failed",
            "stopped",
        ], run.phases
        await run.assert_clean()
    assert model.pending == 0


GATE = """\
export default function (pi) {
  pi.on("tool_call", async (event, ctx) => {
    if (event.toolName !== "bash") return undefined;
    const choice = await ctx.ui.select(`Allow ${event.input.command}?`, ["Yes", "No"]);
    return choice === "Yes" ? undefined : { block: true, reason: "Blocked by user" };
  });
}
"""
"""A permission gate as Pi's own examples write one (examples/extensions/
permission-gate.ts): another extension's blocking dialog, which Pi 1.x announces."""


@pytest.mark.timeout(120, func_only=True)
async def test_pi_dialog_is_needs_input(tmp_path: Path) -> None:
    """While another extension's dialog blocks Pi the session needs input, with the
    dialog's title; answering it from a client goes back to working."""
    extensions = tmp_path / "home" / ".pi" / "agent" / "extensions"
    extensions.mkdir(parents=True)
    (extensions / "gate.js").write_text(GATE)
    async with FakeModelServer() as model, agent_session("pi", tmp_path, model) as run:
        await run.wait_screen(ready, wait=30)
        await run.wait_phase("waiting", wait=10)
        model.script(Reply.shell("pi", COMMAND), Reply.text("Gated DONE-GATE"))
        mark = run.mark()
        await run.submit("Write the marker file")
        asked = await run.wait_phase("needs_input", since=mark, wait=30)
        assert asked.activity.reason == f"Allow {COMMAND}?"
        assert not (run.project / "out.txt").exists(), "the gate holds the tool"
        await run.wait_screen("Allow", wait=10)
        answered = run.mark()
        await run.type(ENTER)  # "Yes" is selected
        await run.wait_phase("working", since=answered, wait=10)
        await run.wait_phase("waiting", since=answered, wait=30)
        assert (run.project / "out.txt").read_text().strip() == "pi-tool-ran"
        assert run.phases == ["starting", "waiting", "working", "needs_input", "working", "waiting"]
    model.assert_no_unexpected()


@pytest.mark.timeout(90, func_only=True)
async def test_pi_interrupt_end_to_end(tmp_path: Path) -> None:
    """Esc while Pi waits for a slow model ends the turn: ``waiting``, reason
    ``interrupted`` (from the key), and no late frame brings ``working`` back. Pi
    1.6.0 reports the aborted turn itself (``agent_end``, ``stopReason: aborted``):
    two frames, saying what the key already said."""
    async with started("pi", tmp_path) as run:
        run.model.script(replace(Reply.text("Too late LATE-1"), delay=20.0))
        await interrupted_by_esc(
            run, "Take your time", PI_BUSY, lambda s: PI_BUSY not in s, late=2, hooks_after=2
        )
        assert "LATE-1" not in await run.screen()


PI_BUSY = "Working"
