"""A client that trusts Ready: it types its prompt the instant ``waiting`` arrives.

Shared by the type-at-Ready end-to-end test (tests/agents/clis/test_ready_e2e.py), which
asserts the prompt reaches the model, and by ``scripts/bench_ready.py``, which
measures how Ready and the first ``working`` line up with what the TUI does.
"""

# ruff: noqa: RUF001  (the TUIs draw their prompt marks with non-ASCII arrows)
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.wire.protocol import ActivityChanged
from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.under_ptyvisor import AgentRun, Screen, agent_session, shows

PI_VERSION_SHOWN = "v1.6.0"
"""Pi 1.x's start screen is a logo with its version beside it (0.73 drew ``pi v0.73.1``)."""

PROMPT_SHOWN: dict[str, Screen] = {
    "claude-code": lambda s: "❯" in s and "manual mode on" in s,
    "codex": lambda s: "›" in s and "? for shortcuts" in s,
    "opencode": "Ask anything",
    "kilo": "Ask anything",
    "pi": lambda s: PI_VERSION_SHOWN in s and "fake-model" in s,
    "gemini-cli": lambda s: "Type your message" in s and "gemini-2.5-flash" in s,
    "qwen-code": "Type your message",
    "copilot": lambda s: "/ commands" in s and "fake-model" in s,
    "oh-my-pi": lambda s: " \u03c0 > " in s and "Fake model" in s,
    "droid": lambda s: "? for help" in s and "Fake model" in s,
    "cline": lambda s: "❯ " in s and "fake-model" in s and "(Tab)" in s,
}
"""Each agent's input prompt, drawn and empty: the earliest the TUI can visibly take keys."""

STARTUP_DIALOGS: dict[str, tuple[tuple[str, str], ...]] = {
    "copilot": (("Confirm folder trust", "1"),),
}
"""Dialogs an agent shows before its prompt (their text) and the key answering each:
Copilot asks whether to trust the folder at every start."""
DIALOG_SETTLE = 0.6
"""TUIs drop keys that arrive with a dialog's first frames."""


async def answer_startup_dialogs(run: AgentRun, agent: str) -> None:
    """Answer the agent's start-up dialogs as a user would, once ptyvisor says the
    session needs input for that dialog, and never called it Ready before (keys typed
    at that Ready would answer the dialog)."""
    for dialog, key in STARTUP_DIALOGS.get(agent, ()):
        await run.wait_screen(dialog, wait=60)
        await run.wait_change(partial(_asks, dialog), wait=30)
        assert "waiting" not in run.phases, f"Ready while {dialog!r} shows: {run.phases}"
        await anyio.sleep(DIALOG_SETTLE)
        await run.type(key)


def _asks(dialog: str, change: ActivityChanged) -> bool:
    return change.activity.phase is ActivityPhase.NEEDS_INPUT and change.activity.reason == dialog


def with_startup(agent: str, phases: list[str]) -> list[str]:
    """``phases`` as a client sees them for ``agent``: an agent with a start-up dialog
    needs input between ``starting`` and Ready."""
    if agent not in STARTUP_DIALOGS or phases[:1] != ["starting"]:
        return phases
    return ["starting", "needs_input", *phases[1:]]


async def prompt_at_ready(run: AgentRun, agent: str, text: str, *, ready_wait: float) -> int:
    """The ``prompt`` request, sent at once, while the user answers the agent's
    start-up dialogs; returns when the agent took it (Unix ms)."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_startup_dialogs, run, agent)
        taken = await run.client.prompt(run.session_id, text, ready_wait=ready_wait)
    return taken


READY_PHASES = ["starting", "waiting", "working", "waiting", "stopped"]
"""Ready, the turn typed at Ready, its end, the exit: nothing more, nothing repeated."""
QUIT_SETTLE = 0.3
"""Some TUIs drop a key that arrives with the frame that ends a turn."""


@dataclass
class ReadyTiming:
    """One run, in Unix seconds (the server stamps activity on the same clock)."""

    ready: float
    """When the session became ``waiting`` (the activity's ``since``)."""
    typed: float
    """When the client sent the prompt: at once on receiving Ready."""
    drawn: float | None
    """When a snapshot first showed the empty input prompt (``watch``), else None."""
    echoed: float
    """When a snapshot first showed the typed prompt."""
    enter: float
    working: float
    """The first ``working`` after Enter (its ``since``)."""
    working_session: str | None
    """The agent's own session id that first ``working`` carried, if it had one yet."""


async def typed_at_ready(
    agent: str, tmp_path: Path, *, watch: bool = False, poll: float = 0.02
) -> tuple[ReadyTiming, list[str]]:
    """Start ``agent`` under ptyvisor, type a prompt the instant Ready arrives, submit
    it, check the model got it, quit; returns the timings and the phases seen.
    ``watch``: poll the screen every ``poll`` s from the start to learn when the prompt
    is drawn (the benchmark; it costs the machine some CPU)."""
    text = f"Reply to the ready prompt {tmp_path.name[-8:]}"
    typed: list[float] = []
    drawn: list[float] = []
    async with FakeModelServer() as model, agent_session(agent, tmp_path, model) as run:
        model.script(Reply.text("DONE-AT-READY"))

        async def at_ready(change: ActivityChanged) -> None:
            if change.activity.phase is ActivityPhase.WAITING and not typed:
                typed.append(time.time())
                await run.type(text)

        run.on_change = at_ready
        async with anyio.create_task_group() as tg:
            if watch:
                tg.start_soon(_watch_drawn, run, PROMPT_SHOWN[agent], drawn, poll)
            await answer_startup_dialogs(run, agent)
            ready = await run.wait_phase("waiting", wait=60)
            try:
                await run.wait_screen(text, wait=20)
            except AssertionError as error:
                raise AssertionError(f"the prompt typed at Ready was lost: {error}") from None
            echoed = time.time()
            mark = run.mark()
            enter = time.time()
            await run.type("\r")
            working = await run.wait_phase("working", since=mark, wait=30)
            request = await run.scripted_request(0, "the prompt typed at Ready")
            assert any(text in t for t in request.user_texts()), request.summary()
            await run.wait_phase("waiting", since=mark, wait=30)
            await run.wait_screen("DONE-AT-READY", wait=15)
            await quit_agent(run, agent)
            tg.cancel_scope.cancel()
        await run.assert_clean()
    assert model.pending == 0
    timing = ReadyTiming(
        ready=ready.activity.since / 1000,
        typed=typed[0],
        drawn=drawn[0] if drawn else None,
        echoed=echoed,
        enter=enter,
        working=working.activity.since / 1000,
        working_session=working.activity.native_session_id,
    )
    return timing, run.phases


async def quit_agent(run: AgentRun, agent: str) -> None:
    """Leave the TUI from its empty prompt, the way a user does, and see it stop."""
    await anyio.sleep(QUIT_SETTLE)
    match agent:
        case "claude-code":
            await run.type("\x03")
            await run.wait_screen("Press Ctrl-C again to exit", wait=10)
            await run.type("\x03")
        case "gemini-cli" | "qwen-code" | "droid":
            await run.type("\x03")
            await run.wait_screen("again to exit", wait=10)
            await run.type("\x03")
        case "pi" | "oh-my-pi" | "kilo" | "copilot":  # Kilo ignores Ctrl-C on an empty prompt
            await run.type("\x04")
        case _:
            await run.type("\x03")
    await run.wait_phase("stopped", wait=20)


async def _watch_drawn(run: AgentRun, shown: Screen, drawn: list[float], poll: float) -> None:
    while True:
        if shows(shown, await run.screen()):
            drawn.append(time.time())
            return
        await anyio.sleep(poll)
