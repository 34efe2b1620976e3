"""Ready for an agent that cannot report it: its input prompt on the headless screen
(`agents.READY_SCREEN`), else start-up quiet once something was drawn.

Stand-in ``codex`` / ``opencode`` programs on the child's PATH: the launch is real (the
agent's flags and environment), the agent is not. The real agents: tests/agents.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest

from ptyvisor.activity import Activity, ActivityPhase
from ptyvisor.client import Client
from ptyvisor.session import STARTUP_QUIET_SECONDS

pytestmark = pytest.mark.anyio

CODEX_PROMPT = "  >_ Stand-in Codex\\n\\n\\u203a Ask Codex to do anything\\n  ? for shortcuts\\n"
OPENCODE_PROMPT = "  \\u2503  Ask anything\\n  \\u2503\\n  tab agents  ctrl+p commands\\n"


def stand_in(tmp_path: Path, name: str, body: str) -> dict[str, str]:
    """An executable ``name`` running the Python ``body``; the env that finds it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / name
    program.write_text(f"#!{sys.executable}\nimport sys, time\nw = sys.stdout.write\n{body}\n")
    program.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


async def activity(client: Client, session_id: str) -> Activity:
    [summary] = [s for s in await client.list() if s.id == session_id]
    return summary.activity


async def wait_phase(client: Client, session_id: str, phase: ActivityPhase) -> Activity:
    with anyio.fail_after(15):
        while True:
            current = await activity(client, session_id)
            if current.phase is phase:
                return current
            await anyio.sleep(0.05)


async def test_codex_is_ready_when_its_prompt_shows(client: Client, tmp_path: Path) -> None:
    # A spinner keeps the output busy: the quiet rule could never call it Ready.
    env = stand_in(
        tmp_path,
        "codex",
        f'w("{CODEX_PROMPT}")\n'
        "for i in range(10**6):\n"
        "    w('\\r' + '|/-'[i % 3]); sys.stdout.flush(); time.sleep(0.05)",
    )
    session = await client.spawn([], agent="codex", env=env)
    ready = await wait_phase(client, session.id, ActivityPhase.WAITING)
    assert ready.source == "terminal" and ready.reason is None
    await client.close(session.id)


async def test_opencode_is_not_ready_before_it_draws(client: Client, tmp_path: Path) -> None:
    # OpenCode's terminal set-up, then seconds of nothing on screen (reading no keys),
    # then its prompt once told to go on.
    env = stand_in(
        tmp_path,
        "opencode",
        'w("\\x1b[?1049h\\x1b[2J"); sys.stdout.flush()\n'
        f'sys.stdin.readline(); w("{OPENCODE_PROMPT}"); sys.stdout.flush()\n'
        "sys.stdin.read()",
    )
    session = await client.spawn([], agent="opencode", env=env)
    await client.attach(session.id, answers_queries=False)
    # Longer than the quiet rule's bound: a blank screen is no prompt.
    await anyio.sleep(STARTUP_QUIET_SECONDS + 0.5)
    assert (await activity(client, session.id)).phase is ActivityPhase.STARTING
    told = time.time()
    await client.send_input("\n")
    ready = await wait_phase(client, session.id, ActivityPhase.WAITING)
    assert ready.source == "terminal"
    assert ready.since >= told * 1000 - 5
    await client.close(session.id)


async def test_a_dialog_instead_of_the_prompt_is_ready_once_quiet(
    client: Client, tmp_path: Path
) -> None:
    # Codex asking something of its own first (trust, an update): drawn, then quiet.
    env = stand_in(
        tmp_path, "codex", 'w("Do you trust the files in this folder?\\n"); sys.stdin.read()'
    )
    session = await client.spawn([], agent="codex", env=env)
    ready = await wait_phase(client, session.id, ActivityPhase.WAITING)
    assert ready.source == "terminal"
    await client.close(session.id)
