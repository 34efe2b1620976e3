"""No false alarms: when an agent grants an approval by itself — an allow rule, an
approval policy or mode that does not ask — ptyvisor shows no needs_input and no
pending interaction, not even briefly, for every way of auto-approving each agent
offers here. The model asks for a shell command; the turn runs it and ends, and every
activity change the client saw in between is checked. (Pi never asks: nothing to grant.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.ready import prompt_at_ready, quit_agent
from tests.agents.clis.under_ptyvisor import agent_session

pytestmark = pytest.mark.anyio

COMMAND = "echo granted-by-itself"
"""No redirection: Gemini CLI asks about one even for an allowed tool (a real ask)."""
Configure = Callable[[dict[str, str]], None]


def allow_bash(name: str) -> Configure:
    """OpenCode's (and Kilo's) own rule: ``"permission": {"bash": "allow"}``."""

    def configure(env: dict[str, str]) -> None:
        path = Path(env["XDG_CONFIG_HOME"]) / name / f"{name}.json"
        config = json.loads(path.read_text())
        config["permission"] = {"bash": "allow"}
        path.write_text(json.dumps(config))

    return configure


WAYS: list[tuple[str, str, list[str], Configure | None]] = [
    ("claude-code", "allow rule", ["--allowedTools", "Bash"], None),
    ("qwen-code", "yolo mode", ["--approval-mode", "yolo"], None),
    ("codex", "approval policy never", ["--ask-for-approval", "never"], None),
    ("opencode", "allow rule", [], allow_bash("opencode")),
    ("kilo", "allow rule", [], allow_bash("kilo")),
    ("gemini-cli", "yolo mode", ["--approval-mode", "yolo"], None),
    ("gemini-cli", "allowed tool", ["--allowed-tools", "run_shell_command"], None),
    # Copilot fires permissionRequest for a read-only command, then runs it unasked.
    ("copilot", "read-only command", [], None),
    ("copilot", "allowed tool", ["--allow-tool", "shell"], None),
    ("copilot", "allow all tools", ["--allow-all-tools"], None),
    # Droid asks for a command above its autonomy level (the fake command is "medium").
    ("droid", "auto medium", ["--auto", "medium"], None),
    ("droid", "auto high", ["--auto", "high"], None),
    # Cline's TUI approves every call by default (the offline setup turns it off); its
    # PreToolUse fires before it decides either way.
    ("cline", "auto-approve, its default", ["--auto-approve", "true"], None),
    ("cline", "yolo mode", ["--yolo"], None),
    ("oh-my-pi", "yolo mode, its default", [], None),
    ("oh-my-pi", "auto-approve", ["--auto-approve"], None),
]


@pytest.mark.timeout(120, func_only=True)
@pytest.mark.parametrize(
    ("agent", "way", "args", "configure"), WAYS, ids=[f"{a}-{w}" for a, w, _, _ in WAYS]
)
async def test_an_approval_the_agent_grants_itself_raises_no_alarm(
    agent: str, way: str, args: list[str], configure: Configure | None, tmp_path: Path
) -> None:
    async with (
        FakeModelServer() as model,
        agent_session(agent, tmp_path, model, args=args, configure=configure) as run,
    ):
        model.script(Reply.shell(agent, COMMAND, description="Write"), Reply.text("DONE-GRANTED"))
        await prompt_at_ready(run, agent, "Write the marker file", ready_wait=60)
        call = await run.scripted_request(0, "the shell call")
        assert call.call_id is not None
        call_id = call.call_id
        answered = await run.scripted_request(call.index + 1, "the answer after the tool")
        assert answered.tool_result(call_id) is not None, f"{agent} ({way}) ran no tool"
        await run.wait_screen("DONE-GRANTED", wait=30)
        # The turn's own end, not Ready at start-up: quitting before it (Claude Code
        # still wrapping up its turn) makes Ctrl-C an interrupt.
        working = await run.wait_phase("working", wait=30)
        await run.wait_phase("waiting", since=run.changes.index(working) + 1, wait=30)
        ready = next(i for i, c in enumerate(run.changes) if c.activity.phase.value == "waiting")
        alarms = [  # from Ready on: before, an agent may ask its own start-up question
            change
            for change in run.changes[ready:]
            if change.activity.phase.value == "needs_input" or change.pending_interaction
        ]
        assert alarms == [], f"{agent} ({way}) raised {alarms}"
        await quit_agent(run, agent)
    model.assert_no_unexpected()
