"""Claude Code end to end under ptyvisor: the real TUI, our real hooks, the real server,
a real WebSocket client.

The client sees every phase of a session: Ready, a turn with an approval and a question
answered by keystrokes in the terminal, a failed turn (the provider's 403, reported by
the ``StopFailure`` hook), an interrupt (Esc, inferred by ptyvisor from the keystroke)
and the exit. The flows: tests/agents/clis/scenarios.py; keys and timings: see
``tests/agents/clis/test_agents_offline.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.clis.fake_model import Reply
from tests.agents.clis.scenarios import (
    CTRL_C,
    ESC,
    KEYS,
    Session,
    interrupted_by_esc,
    session_end_to_end,
    started,
)

pytestmark = pytest.mark.anyio

AGENT = "claude-code"
QUESTION = "Which colour?"
SLOW = "python3 -c 'import time; time.sleep(30)'"
"""A long command (2.1.332 refuses a bare ``sleep``); allowed, so it runs at once."""

SESSION = Session(
    AGENT,
    tool="Bash",
    question_screen="Type something",
    chosen=lambda output: f'"{QUESTION}"="Blue"' in output,
    # Not a 400: 2.1.332 retries a plain 400 (up to 10 attempts with backoff), and a 413
    # with a history starts a compaction; a 403 fails the turn at once, through
    # StopFailure ("authentication_failed").
    failure_status=403,
    reason_ok=lambda reason: "{" not in reason,  # one human line, not a JSON body
)


@pytest.mark.timeout(90, func_only=True)
async def test_claude_code_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)


@pytest.mark.timeout(90, func_only=True)
@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["esc", "ctrl-c"])
async def test_claude_code_interrupt_end_to_end(tmp_path: Path, key: str) -> None:
    """Esc during a working turn (a long allowed command) ends the turn: ``waiting``,
    reason ``interrupted``, and no late hook brings ``working`` back."""
    settings = tmp_path / "project" / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(python3:*)"]}}))
    async with started(AGENT, tmp_path) as run:
        run.model.script(Reply.shell(AGENT, SLOW, description="Wait a while"))
        settle = KEYS[AGENT].approve_after  # Claude drops keys for a moment after a frame
        busy = "time.sleep(30)"
        await interrupted_by_esc(run, "Wait a while", busy, "Interrupted", key=key, settle=settle)
    run.model.assert_no_unexpected()
