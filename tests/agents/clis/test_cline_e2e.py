"""Cline CLI end to end under ptyvisor: the real TUI (offline, against the fake model),
our hook files through a session ``CLINE_DIR``, the real server, a real WebSocket
client.

The client sees every phase: Ready from the screen (Cline runs no hook before the first
prompt), a turn with an approval (reported by ``PreToolUse`` but pending only once
Cline draws its dialog) and a question (``ask_question``), both answered by keys in the
terminal (no Cline hook can answer its dialogs), a failed turn (the provider's 400:
``TaskError``), and the exit. The flows: tests/agents/clis/scenarios.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.clis.scenarios import Session, answered_only_by_keys, session_end_to_end

pytestmark = pytest.mark.anyio

AGENT = "cline"

SESSION = Session(
    AGENT,
    tool="run_commands",
    approval_title="Run shell commands",
    typed_only=True,
    question_tool="ask_question",
    question_title="Cline has a question",
    on_question=answered_only_by_keys({"q0": ["Blue"]}),
    question_screen="Cline is asking a question",
    chosen=lambda output: "Blue" in output,
    failure_status=400,
)


@pytest.mark.timeout(150, func_only=True)
async def test_cline_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)
