"""Command-hook side of the agent extensions (Claude Code, Codex, Gemini CLI, Qwen Code).

``python -m ptyvisor.agents.hooks <agent>`` is what the agent's hook configuration runs
(by the absolute interpreter path, so the agent's PATH does not matter). It reads
the agent's JSON hook payload on stdin, maps it to activity / interaction frames
(`claude_code`, `codex`, `gemini_cli`, `qwen_code`), masks and bounds every string
(`normalise`), writes the frames to ``$PTYVISOR_TTY`` and exits 0 — always,
silently, quickly: a hook runs on every tool call, and it must never break the
agent. The raw payload never leaves this process.

Stdlib only, like `ptyvisor.agents.emit`, to keep start-up cheap.
"""
