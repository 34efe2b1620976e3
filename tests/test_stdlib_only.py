"""What must stay small stays small: the keeper (it owns every program, so it must be
boring enough to trust), the hooks and ``emit`` (an agent pays their start-up on every
tool call) and ``dial-stdio`` (on every command from another machine) load nothing
outside the standard library and ptyvisor's own modules that keep the same promise."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
