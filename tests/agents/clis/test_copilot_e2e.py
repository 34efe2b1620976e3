"""GitHub Copilot CLI end to end under ptyvisor: the real TUI (offline, against the fake
model), our hooks through a session plugin (``--plugin-dir``), the real server, a real
WebSocket client.

The client sees every phase: ``starting`` through Copilot's folder-trust dialog (its
keys answer the dialog, so the session is not Ready while it shows), Ready from the
prompt on screen, a turn with an approval (from the ``permission_prompt``
notification) and a question (``ask_user``), both answered by keys in the terminal
(Copilot's hooks cannot answer its dialogs), a failed turn (the provider's 403,
``errorOccurred``), and the exit. The flows: tests/agents/clis/scenarios.py.
"""

# ruff: noqa: RUF001  (the TUI draws its marks with non-ASCII characters)
from __future__ import annotations

from pathlib import Path

import pytest

from ptyvisor.agents.interaction import Interaction
from tests.agents.clis.scenarios import (
    Session,
    error_of,
    session_end_to_end,
)
from tests.agents.clis.under_ptyvisor import AgentRun

pytestmark = pytest.mark.anyio

AGENT = "copilot"


async def answered_only_by_keys(run: AgentRun, interaction: Interaction) -> None:
    refused = await error_of(run, interaction.id, answers={"choice": ["Blue"]})
    assert refused.code == "not_answerable"


SESSION = Session(
    AGENT,
    tool="bash",
    approval_title="Run a shell command",
    typed_only=True,
    question_tool="ask_user",
    question_title="Copilot has a question",
    on_question=answered_only_by_keys,
    question_screen="Which colour?",
    picked="❯ Blue",
    chosen=lambda output: "Blue" in output,
    failure_status=403,
)


@pytest.mark.timeout(150, func_only=True)
async def test_copilot_session_end_to_end(tmp_path: Path) -> None:
    await session_end_to_end(tmp_path, SESSION)
