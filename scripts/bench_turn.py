"""What ptyvisor's extension costs an agent's turn: a real turn of 20 tool calls, with
the extension and without it, side by side.

Each run starts the real agent TUI through ptyvisor against the fake model server,
offline, with its tools allowed (no approval asked); the model answers the prompt with
20 shell calls (``echo step-N``), one after the other, and then a text. The turn is
timed from the Enter to the model's last request (the one carrying the 20th result),
so drawing the answer is not in it. ``--delay`` makes the model take that long per
reply, as a real one does (an instant fake model makes the hooks' share look largest).
"with" is ``spawn --agent`` (our hooks on every event: one or two runs per tool
call, as each extension's README says); "without" is the same program started as a
plain command; and "`true` hooks" is ``spawn --agent`` with each of our hook commands
replaced by ``true`` (the same events, the same settings): what the agent itself
spends on running a hook, which no hook of ours can go below. The modes alternate
run by run, so a busy machine slows them alike; read the ratios of the medians.

    .venv/bin/python scripts/bench_turn.py [--runs N] [--calls 20] [agent ...]

Needs the pinned agent CLIs (scripts/install_agents.sh). Default agents: those whose
extension is a command hook (Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI,
Factory Droid);
OpenCode's and Pi's run in-process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.agents.clis.fake_model import FakeModelServer, Reply  # noqa: E402
from tests.agents.clis.installed import agent_bin_dir, agent_command  # noqa: E402
from tests.agents.clis.offline import offline_env  # noqa: E402
from tests.agents.clis.ready import PROMPT_SHOWN, STARTUP_DIALOGS  # noqa: E402
from tests.agents.clis.under_ptyvisor import TOKEN, AgentRun, _with_options  # noqa: E402

from ptyvisor.agents import launch  # noqa: E402
from ptyvisor.client.client import Client  # noqa: E402
from ptyvisor.config import ServerConfig  # noqa: E402
from ptyvisor.server.serving import run_server  # noqa: E402

ALLOW_TOOLS: dict[str, list[str]] = {
    "claude-code": ["--allowedTools", "Bash"],
    "codex": ["--ask-for-approval", "never"],
    "gemini-cli": ["--approval-mode", "yolo"],
    "qwen-code": ["--approval-mode", "yolo"],
    "copilot": ["--allow-all-tools"],
    "droid": ["--auto", "high"],
    "cline": ["--auto-approve", "true"],
}
"""Each agent's way to run the shell tool without asking."""
BESIDE_THE_EXTENSION: dict[str, Callable[[Path], list[str]]] = {
    "cline": lambda home: [f"--data-dir={home / '.cline' / 'data'}"],
}
"""What ptyvisor's launch adds that is not the extension, given to the plain command
too so that the modes differ only by the hooks: Cline's ``--data-dir`` keeps its session
in the TUI's process (without it, the first TUI on a data folder also starts a hub
process, which then runs beside the measurement and outlives it)."""
PROMPT = "Run the twenty steps"


def shell_call(agent: str, n: int) -> Reply:
    if agent == "codex":  # no escalation: it runs in the sandbox without asking
        return Reply.tool("exec_command", {"cmd": f"echo step-{n}"})
    return Reply.shell(agent, f"echo step-{n}", description=f"Step {n}")


WITH, WITHOUT, FLOOR = "with", "without", "true hooks"
MODES = (WITH, WITHOUT, FLOOR)


@contextmanager
def hooks_running_true() -> Iterator[None]:
    """Every hook command the launch writes (`launch.hook_argv`, which each agent's
    settings are built from) is ``true`` while this holds: the server runs in this
    process, so the session starts exactly as with the extension, hooks that do
    nothing."""
    real = launch.hook_argv
    launch.hook_argv = lambda agent, *event: ["true"]
    try:
        yield
    finally:
        launch.hook_argv = real


async def one_turn(agent: str, mode: str, calls: int, delay: float, tmp: Path) -> float:
    """Seconds from Enter to the model's request carrying the last tool result."""
    home, project = tmp / "home", tmp / "project"
    project.mkdir(parents=True)
    async with FakeModelServer() as model:
        env, extra = offline_env(agent, home, project, model.base_url)
        extra = _with_options(extra, ALLOW_TOOLS[agent])
        env["PATH"] = f"{agent_bin_dir()}{os.pathsep}{env['PATH']}"
        config = ServerConfig(token=TOKEN, port=0, state_dir=tmp / "state")
        async with anyio.create_task_group() as tg:
            await tg.start(run_server, config)
            async with Client.connect(config.url, TOKEN) as client:
                if mode == WITHOUT:
                    beside = BESIDE_THE_EXTENSION.get(agent)
                    argv = [*agent_command(agent), *extra, *(beside(home) if beside else [])]
                    summary = await client.spawn(argv, cwd=str(project), env=env)
                else:
                    with hooks_running_true() if mode == FLOOR else nullcontext():
                        summary = await client.spawn(extra, agent=agent, cwd=str(project), env=env)
                await client.attach(summary.id, answers_queries=False)
                run = AgentRun(client, summary.id, model, project)
                for dialog, key in STARTUP_DIALOGS.get(agent, ()):
                    await run.wait_screen(dialog, wait=60)
                    await anyio.sleep(0.6)
                    await run.type(key)
                await run.wait_screen(PROMPT_SHOWN[agent], wait=60)
                await anyio.sleep(1)  # the TUI settles; the same pause in every mode
                replies = [*(shell_call(agent, n) for n in range(calls)), Reply.text("TURN-DONE")]
                model.script(*(replace(reply, delay=delay) for reply in replies))
                await run.type(PROMPT)
                await run.wait_screen(PROMPT, wait=15)
                enter = time.time()  # the fake model stamps requests with time.time()
                await run.type("\r")
                last = await model.wait_for_request(lambda r: _nth(model, r, calls), wait=180)
                took = last.at - enter
                await run.wait_screen("TURN-DONE", wait=30)
                await client.close(summary.id)
            tg.cancel_scope.cancel()
    return took


def _nth(model: FakeModelServer, request: object, calls: int) -> bool:
    """The request is the scripted one after ``calls`` tool calls."""
    scripted = model.scripted
    return len(scripted) > calls and scripted[calls] is request


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument(
        "--delay", type=float, default=0.0, help="seconds the model takes per reply (0: instant)"
    )
    parser.add_argument("agents", nargs="*", default=list(ALLOW_TOOLS))
    args = parser.parse_args()
    print(f"{args.calls} tool calls, the model answering in {args.delay} s, {args.runs} runs each")
    print("| agent | mode | turn (median) | / without | per tool call, against without |")
    print("|---|---|---|---|---|")
    for agent in args.agents:
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        for _ in range(args.runs):
            for mode in MODES:
                with tempfile.TemporaryDirectory(prefix=f"bench-turn-{agent}-") as tmp:
                    times[mode].append(
                        await one_turn(agent, mode, args.calls, args.delay, Path(tmp))
                    )
        without = statistics.median(times[WITHOUT])
        for mode, runs in times.items():
            took = statistics.median(runs)
            per_call = (took - without) / args.calls * 1000
            print(
                f"| {agent} | {mode} | {took:.2f} s | {took / without:.3f} | {per_call:+.0f} ms |",
                flush=True,
            )


if __name__ == "__main__":
    anyio.run(main)
