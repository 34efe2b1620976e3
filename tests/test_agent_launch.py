"""How each agent is started with our extension for one session only."""

from __future__ import annotations

import json
import shlex
import sys
import tomllib
from pathlib import Path

from ptyvisor.agents import (
    CLAUDE_EVENTS,
    CODEX_EVENTS,
    DECISION_TIMEOUT_SECONDS,
    extensions_dir,
    launch,
    qwen_system_defaults,
)


def test_claude_gets_inline_settings_with_our_hooks(tmp_path: Path) -> None:
    started = launch("claude-code", ["--model", "x"], session_dir=tmp_path)
    assert started.argv[0] == "claude" and started.argv[1] == "--settings"
    assert started.argv[-2:] == ["--model", "x"]
    settings = json.loads(started.argv[2])
    assert set(settings["hooks"]) == set(CLAUDE_EVENTS)
    (entry,) = settings["hooks"]["PermissionRequest"][0]["hooks"]
    assert shlex.split(entry["command"]) == [sys.executable, "-m", "ptyvisor.hooks", "claude-code"]
    assert started.env == {}, "nothing in the user's own configuration is touched"


def test_codex_overrides_are_valid_toml(tmp_path: Path) -> None:
    started = launch("codex", ["--enable", "x"], session_dir=tmp_path)
    assert started.argv[:3] == ["codex", "--no-daemon", "--dangerously-bypass-hook-trust"]
    overrides = [started.argv[i + 1] for i, arg in enumerate(started.argv) if arg == "-c"]
    assert len(overrides) == len(CODEX_EVENTS)
    for override in overrides:
        key, _, value = override.partition("=")
        parsed = tomllib.loads(f"value = {value}")["value"]
        command = parsed[0]["hooks"][0]["command"]
        assert key.startswith("hooks.")
        assert shlex.split(command) == [sys.executable, "-m", "ptyvisor.hooks", "codex"]


def test_codex_flags_the_user_gave_are_not_repeated(tmp_path: Path) -> None:
    started = launch("codex", ["--no-daemon", "-a", "on-request"], session_dir=tmp_path)
    assert started.argv.count("--no-daemon") == 1, "codex refuses a flag given twice"
    assert "--dangerously-bypass-hook-trust" in started.argv


def test_opencode_gets_a_session_config_dir(tmp_path: Path) -> None:
    started = launch("opencode", [], session_dir=tmp_path)
    assert started.argv == ["opencode"]
    plugin = Path(started.env["OPENCODE_CONFIG_DIR"]) / "plugin" / "ptyvisor.js"
    assert plugin.resolve() == (extensions_dir() / "opencode" / "ptyvisor.js").resolve()


def test_pi_extension_only_for_the_interactive_tui(tmp_path: Path) -> None:
    tui = launch("pi", ["--model", "fake/m"], session_dir=tmp_path)
    assert tui.argv[:2] == ["pi", "--extension"]
    assert Path(tui.argv[2]) == extensions_dir() / "pi" / "ptyvisor.js"
    for machine in (["--mode", "json"], ["-p", "hello"], ["--mode=rpc"]):
        assert "--extension" not in launch("pi", machine, session_dir=tmp_path).argv


def test_qwen_code_gets_a_session_copy_of_the_system_defaults(tmp_path: Path) -> None:
    started = launch("qwen-code", ["--approval-mode", "default"], session_dir=tmp_path)
    assert started.argv == ["qwen", "--approval-mode", "default"]
    defaults = json.loads(Path(started.env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"]).read_text())
    assert set(defaults["hooks"]) == set(CLAUDE_EVENTS)
    (entry,) = defaults["hooks"]["PermissionRequest"][0]["hooks"]
    assert shlex.split(entry["command"]) == [sys.executable, "-m", "ptyvisor.hooks", "qwen-code"]
    # Qwen reads a command hook timeout of 1000 or more as milliseconds.
    assert entry["timeout"] == DECISION_TIMEOUT_SECONDS * 1000
    (stop,) = defaults["hooks"]["Stop"][0]["hooks"]
    assert stop["timeout"] < 1000


def test_qwen_code_keeps_the_machines_system_defaults(tmp_path: Path) -> None:
    """The session file replaces the machine's for that process: what it held stays."""
    machine = tmp_path / "system-defaults.json"
    theirs = {"type": "command", "command": "audit"}
    machine.write_text(
        json.dumps({"ui": {"theme": "GitHub"}, "hooks": {"Stop": [{"hooks": [theirs]}]}})
    )
    merged = qwen_system_defaults(machine)
    assert merged["ui"] == {"theme": "GitHub"}
    hooks = merged["hooks"]
    assert isinstance(hooks, dict)
    assert hooks["Stop"][0] == {"hooks": [theirs]} and len(hooks["Stop"]) == 2
    assert set(hooks) == set(CLAUDE_EVENTS)
    machine.write_text("{not json")
    assert set(qwen_system_defaults(machine)) == {"hooks"}
