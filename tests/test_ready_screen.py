"""What an agent's own screen says before its extension does: Ready for an agent that
cannot report it, from its input prompt on the headless screen (`agents.READY_SCREEN`),
else start-up quiet once something was drawn; a turn's start from its busy line
(`agents.BUSY_SCREEN`, busy_line.py).

Stand-in ``codex`` / ``opencode`` programs on the child's PATH: the launch is real (the
agent's flags and environment), the agent is not. The real agents: tests/agents/clis.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest

from ptyvisor.agents.activity import (
    AWAY_BEFORE_TURN_MS,
    STARTUP_QUIET_MS,
    UNCONFIRMED_SECONDS,
    Activity,
    ActivityPhase,
)
from ptyvisor.client.client import Client
from tests.timeouts import scaled

from .conftest import screen_showing

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
    with anyio.fail_after(scaled(15)):
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
    await anyio.sleep(STARTUP_QUIET_MS / 1000 + 0.5)
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


# A stand-in Codex that draws its composer, then does one step per line the client
# sends: draws its busy line on row 10, erases it, or reports a phase as its hook
# would (an authentic frame, through ptyvisor.agents.emit; ``prompt``: UserPromptSubmit's).
BUSY_CODEX = (
    "from ptyvisor.agents.emit import write_frame\n"
    f'w("{CODEX_PROMPT}"); sys.stdout.flush()\n'
    "for line in sys.stdin:\n"
    "    step = line.strip()\n"
    "    if step == 'busy':\n"
    "        w('\\x1b[10;1H\\u2022 Working (0s \\u2022 esc to interrupt)\\x1b[K')\n"
    "    elif step == 'idle':\n"
    "        w('\\x1b[10;1H\\x1b[K')\n"
    "    elif step == 'prompt':\n"
    "        at = time.time_ns() // 1_000_000\n"
    "        write_frame({'type': 'interaction_cleared', 'at': at, 'reason': 'prompt'})\n"
    "        write_frame({'type': 'activity', 'phase': 'working', 'at': at, 'agent': 'codex'})\n"
    "    elif step:\n"
    "        at = time.time_ns() // 1_000_000\n"
    "        write_frame({'type': 'activity', 'phase': step, 'at': at, 'agent': 'codex'})\n"
    "    w('\\x1b[20;1H' + step + ' done\\x1b[K'); sys.stdout.flush()\n"
)


async def step(client: Client, session_id: str, name: str) -> None:
    """One step of the stand-in, seen through: its screen shows it was taken (every
    screen the stand-in drew until then has been looked at)."""
    await client.send_input(f"{name}\n")
    await screen_showing(client, session_id, f"{name} done")


async def new_turn(client: Client, session_id: str) -> None:
    """The line drawn as a new turn's: after the screen has shown it absent for
    `AWAY_BEFORE_TURN_MS` (the step before was seen through, so that screen was the
    server's before this pause began). A sooner return is a flicker, not a turn."""
    await anyio.sleep(AWAY_BEFORE_TURN_MS / 1000)
    await step(client, session_id, "busy")


async def busy_codex(client: Client, tmp_path: Path) -> str:
    session = await client.spawn([], agent="codex", env=stand_in(tmp_path, "codex", BUSY_CODEX))
    await client.attach(session.id, answers_queries=False)
    await wait_phase(client, session.id, ActivityPhase.WAITING)
    return session.id


async def test_a_turn_shows_from_the_busy_line_and_the_hook_confirms_it(
    client: Client, tmp_path: Path
) -> None:
    session_id = await busy_codex(client, tmp_path)
    entered = time.time()
    await new_turn(client, session_id)
    guessed = await wait_phase(client, session_id, ActivityPhase.WORKING)
    assert guessed.source == "terminal" and guessed.since >= entered * 1000 - 5
    await step(client, session_id, "working")  # the hook, later
    confirmed = await activity(client, session_id)
    assert (confirmed.phase, confirmed.source) == (ActivityPhase.WORKING, "extension")
    assert confirmed.since == guessed.since  # one turn, not two
    # The turn ends while its line is still drawn; erasing it starts nothing.
    await step(client, session_id, "waiting")
    await step(client, session_id, "idle")
    ended = await activity(client, session_id)
    assert (ended.phase, ended.source) == (ActivityPhase.WAITING, "extension")
    # The next turn's line is a new edge.
    await new_turn(client, session_id)
    assert (await wait_phase(client, session_id, ActivityPhase.WORKING)).source == "terminal"
    await client.close(session_id)


async def test_a_line_the_hook_never_confirms_ends_once_it_has_stayed_away(
    client: Client, tmp_path: Path
) -> None:
    session_id = await busy_codex(client, tmp_path)
    await new_turn(client, session_id)
    await wait_phase(client, session_id, ActivityPhase.WORKING)
    gone = time.time()
    await step(client, session_id, "idle")
    back = await wait_phase(client, session_id, ActivityPhase.WAITING)
    assert back.source == "terminal"
    assert time.time() - gone >= UNCONFIRMED_SECONDS  # not at once: see the next test
    await client.close(session_id)


async def test_a_turn_whose_line_went_before_the_hook_reported_is_one_turn(
    client: Client, tmp_path: Path
) -> None:
    """A turn the provider fails at once: the line is gone before a slow hook reports
    the turn, which must still read working then failed, not waiting between."""
    session_id = await busy_codex(client, tmp_path)
    await new_turn(client, session_id)
    guessed = await wait_phase(client, session_id, ActivityPhase.WORKING)
    await step(client, session_id, "idle")
    await step(client, session_id, "working")  # the hook, late
    confirmed = await activity(client, session_id)
    assert (confirmed.phase, confirmed.source) == (ActivityPhase.WORKING, "extension")
    assert confirmed.since == guessed.since  # never waiting in between
    await step(client, session_id, "failed")
    assert (await activity(client, session_id)).phase is ActivityPhase.FAILED
    await client.close(session_id)


async def test_the_line_of_a_turn_that_ended_starts_no_turn(client: Client, tmp_path: Path) -> None:
    session_id = await busy_codex(client, tmp_path)
    await new_turn(client, session_id)
    await wait_phase(client, session_id, ActivityPhase.WORKING)
    await step(client, session_id, "working")
    await step(client, session_id, "waiting")  # the Stop hook, the line still drawn
    await step(client, session_id, "busy")  # and drawn again (its timer ticks)
    ended = await activity(client, session_id)
    assert (ended.phase, ended.source) == (ActivityPhase.WAITING, "extension")
    await step(client, session_id, "idle")
    await new_turn(client, session_id)  # the next turn
    assert (await wait_phase(client, session_id, ActivityPhase.WORKING)).source == "terminal"
    await client.close(session_id)


async def test_a_message_queued_before_the_hook_reports_the_turn_is_kept(
    client: Client, tmp_path: Path
) -> None:
    """Working shows from the busy line, a client queues a message for the turn's end,
    then the hook reports the turn's prompt: that prompt is this turn's, not a new one
    that would make the message stale."""
    session_id = await busy_codex(client, tmp_path)
    await new_turn(client, session_id)
    await wait_phase(client, session_id, ActivityPhase.WORKING)
    await client.send_message(session_id, "and then run the tests")
    await step(client, session_id, "prompt")
    [summary] = [s for s in await client.list() if s.id == session_id]
    assert summary.activity.source == "extension"
    assert summary.queued_message == "and then run the tests"
    # A prompt of a later turn does make it stale.
    await step(client, session_id, "waiting")
    await step(client, session_id, "prompt")
    [summary] = [s for s in await client.list() if s.id == session_id]
    assert summary.activity.phase is ActivityPhase.WORKING and summary.queued_message is None
    await client.close(session_id)
