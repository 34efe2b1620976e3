"""Record what each agent's TUI writes, for the differential test against xterm.js.

Each pinned agent CLI runs offline (tests/agents/clis/offline.py: a fake model
server, a throwaway home) under a PTY at 120x40: it starts, takes a prompt, shows
the scripted answer, and quits. Its raw output goes to
``tests/terminal/captured/agents/<agent>-120x40.input``; tests/terminal/xterm/test_fidelity.py
draws it into xterm.js live and from a snapshot. (There is no ``.output``: the
oracle for these is xterm.js itself, not tmux, whose widths differ from the page's.)

    .venv/bin/python scripts/capture_agent_tuis.py [AGENT ...]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.agents.clis.fake_model import FakeModelServer, Reply  # noqa: E402
from tests.agents.clis.installed import AGENTS, agent_command  # noqa: E402
from tests.agents.clis.offline import AgentTui, offline_env  # noqa: E402
from tests.agents.clis.ready import DIALOG_SETTLE, PROMPT_SHOWN, STARTUP_DIALOGS  # noqa: E402
from tests.agents.clis.scenarios import ENTER, KEYS  # noqa: E402

OUT = ROOT / "tests" / "terminal" / "captured" / "agents"


async def capture(agent: str, where: Path) -> bytes:
    """One run of ``agent``'s TUI: ready, a prompt, its answer, quit; what it wrote."""
    keys = KEYS[agent]
    home, project = where / "home", where / "project"
    project.mkdir(parents=True)
    async with FakeModelServer() as server:
        env, extra = offline_env(agent, home, project, server.base_url)
        async with AgentTui(agent_command(agent) + extra, env=env, cwd=project) as tui:
            for dialog, key in STARTUP_DIALOGS.get(agent, ()):  # Copilot's folder trust
                await tui.wait_for(dialog, wait=60, what=f"{agent}'s {dialog!r}")
                await asyncio.sleep(DIALOG_SETTLE)
                tui.write(key)
            await tui.wait_for(PROMPT_SHOWN[agent], wait=60, what=f"{agent} ready")
            server.script(Reply.text(f"Fake answer PONG-{agent}, with 界面 and ✓ in it"))
            tui.write("Say the magic word")
            await tui.wait_for("Say the magic word", what="the typed prompt")
            await asyncio.sleep(keys.enter_after)
            tui.write(ENTER)
            await tui.wait_for(f"PONG-{agent}", wait=60, what="the answer")
            await tui.settle(0.5)
            for key, then in keys.quit:
                tui.write(key)
                if then is not None:
                    await tui.wait_for(then, wait=10)
            await tui.wait_exit(15)
            return bytes(tui.output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="*", default=list(AGENTS), help="default: all")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for agent in args.agents:
        with tempfile.TemporaryDirectory() as tmp:
            raw = asyncio.run(capture(agent, Path(tmp)))
        path = OUT / f"{agent}-120x40.input"
        path.write_bytes(raw)
        print(f"{path.relative_to(ROOT)}: {len(raw)} bytes")


if __name__ == "__main__":
    main()
