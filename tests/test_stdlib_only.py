"""What must stay small stays small: the keeper (it owns every program, so it must be
boring enough to trust), the hooks and ``emit`` (an agent pays their start-up on every
tool call) and ``dial-stdio`` (on every command from another machine) load nothing
outside the standard library and ptyvisor's own modules that keep the same promise."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptyvisor.agents.launch import hook_argv
from ptyvisor.wire.frames import FRAME_PREFIX

from .conftest import PTYVISOR_BIN, env_without_ptyvisor

STDLIB_ONLY = [
    "ptyvisor.keeper.keeper",
    "ptyvisor.agents.emit",
    "ptyvisor.agents.hooks.__main__",
    "ptyvisor.agents.hooks.claude_code",
    "ptyvisor.agents.hooks.codex",
    "ptyvisor.agents.hooks.gemini_cli",
    "ptyvisor.agents.hooks.qwen_code",
    "ptyvisor.agents.hooks.decide",
    "ptyvisor.wire.untrusted",
    "ptyvisor.keeper.logs",
    "ptyvisor.wire.link",
    "ptyvisor.wire.control",
    "ptyvisor.client.ssh",  # the far end of ssh://, started on every remote command
]


@pytest.mark.parametrize("module", STDLIB_ONLY)
def test_imports_nothing_outside_the_standard_library(module: str) -> None:
    # A fresh interpreter: this one has loaded everything already.
    code = (
        f"import importlib, json, sys; importlib.import_module({module!r}); "
        "print(json.dumps(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    outside = [
        name
        for name in loaded
        if name.split(".")[0] not in sys.stdlib_module_names
        and name.split(".")[0] not in ("ptyvisor", "__main__", "_distutils_hack")
    ]
    assert outside == [], f"{module} loads {outside}"


SLOW_IMPORTS = {
    "typing": "2-7 ms",
    "dataclasses": "15 ms, with inspect",
    "hashlib": "3 ms: OpenSSL",
    "socket": "3 ms",
    "subprocess": "6 ms",
    "pathlib": "4 ms",
    "json": "9 ms with re and enum: wire.cjson calls the C codec directly",
    "re": "7 ms with enum",
    "enum": "4 ms",
    "base64": "imports re",
    "collections": "2 ms",
}
"""What the hooks were paying on every tool call, and now only load where needed."""
TOOL_CALL_EVENTS = {
    "claude-code": "PreToolUse",
    "qwen-code": "PreToolUse",
    "codex": "PreToolUse",
    "gemini-cli": "BeforeTool",
    "copilot": "preToolUse",
}


def _loaded(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> set[str]:
    """The modules a fresh interpreter imports running ``argv`` (``-X importtime``)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        input=stdin,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.decode().splitlines()
    return {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}


@contextlib.contextmanager
def in_a_session() -> Iterator[tuple[dict[str, str], int]]:
    """A session's environment for a hook or ``emit`` (a real PTY for its frames), and
    the PTY's master, which has every frame written once the block ends."""
    master, slave = os.openpty()
    try:
        yield (
            {
                **env_without_ptyvisor(),
                "PTYVISOR_SESSION": "s1234567",
                "PTYVISOR_NONCE": "0123456789abcdef0123456789abcdef",
                "PTYVISOR_TTY": os.ttyname(slave),
            },
            master,
        )
    finally:
        os.close(master)
        os.close(slave)


def slow_ones(run: set[str], bare: set[str]) -> dict[str, str]:
    return {name: why for name, why in SLOW_IMPORTS.items() if name in run - bare}


@pytest.mark.parametrize("agent", sorted(TOOL_CALL_EVENTS))
def test_a_hook_run_for_a_tool_call_imports_nothing_slow(agent: str, tmp_path: Path) -> None:
    """Every tool call runs the hook (twice, for Claude Code): a real run, in a real
    session's environment, loads no slow module beyond what a bare interpreter loads."""
    with in_a_session() as (env, master):
        env["GEMINI_CLI_HOME"] = str(tmp_path)
        event = {
            "session_id": "5f1c2a8e-8b1e-4a56-9a0e-3c6d9f1b2a77",
            "hook_event_name": TOOL_CALL_EVENTS[agent],
            "tool_name": "Bash",
            "tool_input": {"command": "npm test", "description": "Run the tests"},
        }
        stdin = json.dumps(event).encode()
        # As the agent runs it (agents.launch.hook_argv), after the interpreter; only
        # Copilot's command names the event.
        named = [TOOL_CALL_EVENTS[agent]] if agent == "copilot" else []
        hook = _loaded(hook_argv(agent, *named)[1:], env, stdin)
        bare = _loaded([*hook_argv(agent)[1:3], "-c", "pass"], env)  # its flags: -I -S
        assert FRAME_PREFIX in os.read(master, 65536), "the hook wrote no frame"
    assert slow_ones(hook, bare) == {}, f"{agent}'s hook imports slow modules"


def test_the_ptyvisor_command_running_emit_imports_nothing_slow() -> None:
    """``ptyvisor emit``, as a user's own hook runs it on every event: the installed
    command (``bin/ptyvisor``, written by hand because pip's entry-point wrapper imports
    ``re``) loads no slow module beyond what a bare interpreter with ``site`` loads."""
    with in_a_session() as (env, master):
        emit = _loaded([PTYVISOR_BIN, "emit", "activity", "working"], env)
        bare = _loaded(["-c", "pass"], env)
        assert FRAME_PREFIX in os.read(master, 65536), "emit wrote no frame"
    assert slow_ones(emit, bare) == {}, "ptyvisor emit imports slow modules"
