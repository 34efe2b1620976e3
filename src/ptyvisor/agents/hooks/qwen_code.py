"""Qwen Code hook events → activity and interaction frames.

Qwen Code 0.24 sends Claude Code's hook events with Claude's payload fields and reads
Claude's answers (its bundled docs/features/hooks.md; checked against the real TUI in
tests/agents/clis/test_qwen_code_e2e.py), so `claude_code` maps them, with Qwen's tool
names. What differs:

- ``PermissionRequest`` fires *before* Qwen shows its own prompt and Qwen waits for
  the hook, so ptyvisor holds it only when the user opted in
  (``qwen_code_remote_answers``, bounded like Codex's). An allow for
  ``ask_user_question`` is ignored by Qwen (the dialog *is* the tool), so a question
  is reported but not held: it is answered in the terminal.
- ``PreToolUse`` comes after the approval, so it clears it (as Claude's PostToolUse
  does), and ``PostToolUse`` runs for ``ask_user_question`` only, whose dialog shows
  while the tool runs: a hook run fewer per tool call (`launch.QWEN_MATCHERS`).
- ``UserPromptSubmit`` also fires for the model request that carries tool results
  (``prompt`` empty): the only sign that a denied request is over (no PostToolUse
  follows a deny), but no new prompt, so it clears with reason ``tool_results`` and a
  message queued meanwhile stays queued.
- Qwen sends no ``permission_suggestions``.
- Its ``idle_prompt`` notification comes ~2 s after every turn's end, a failed one's
  too, so it would turn ``failed`` into ``waiting``: Stop and StopFailure say enough.
"""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.agents.hooks import claude_code
from ptyvisor.agents.hooks.normalise import Payload

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from typing import Any

QWEN = claude_code.Dialect(
    agent="qwen-code",
    ask_tool="ask_user_question",
    asker="Qwen Code",
    titles={
        "run_shell_command": "Run a shell command",
        "edit": "Edit a file",
        "write_file": "Write a file",
        "notebook_edit": "Edit a notebook",
        "web_fetch": "Fetch a web page",
    },
    answers_questions=False,
    submits_tool_results=True,
    idle_means_waiting=False,
    asks_before_pre_tool_use=True,
)


def map_event(event: Mapping[str, Any], at: int) -> list[Payload]:
    return claude_code.map_event(event, at, QWEN)


def decide(event: Mapping[str, Any], frames: list[Payload]) -> Payload | None:
    return claude_code.decide(event, frames, QWEN)
