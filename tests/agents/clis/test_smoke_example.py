"""The documented smoke script (``examples/smoke_pi.py``), run exactly as a user would:
a real Pi turn through a real ``ptyvisor serve`` (the pytest plugin's fixture),
against the suite's fake OpenAI-compatible model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from ptyvisor.client.pytest_plugin import ServerInfo
from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.installed import agent_bin_dir
from tests.agents.clis.offline import MODEL

pytestmark = pytest.mark.anyio
SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "smoke_pi.py"


@pytest.mark.timeout(240, func_only=True)
async def test_the_smoke_script_drives_a_pi_turn(ptyvisor_server: ServerInfo) -> None:
    env = {
        **os.environ,
        "PTYVISOR_URL": ptyvisor_server.url,
        "PTYVISOR_TOKEN": ptyvisor_server.token,
        "PATH": f"{agent_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    async with FakeModelServer() as model:
        model.script(Reply.text("Hello from the fake model SMOKE-OK"))
        done = await anyio.run_process(
            [sys.executable, str(SCRIPT), f"{model.base_url}/v1", MODEL, "Say hi"],
            env=env,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert b"SMOKE-OK" in done.stdout, done.stdout
    assert any("Say hi" in str(request.body) for request in model.requests), "the prompt"
