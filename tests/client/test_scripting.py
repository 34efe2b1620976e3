"""The Python API for scripts: ``ptyvisor.connect()`` (async), ``ptyvisor.sync``
(blocking) and the pytest plugin's fixtures, against real servers and PTYs."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import ptyvisor
import ptyvisor.sync
from ptyvisor.client.pytest_plugin import ServerInfo
from ptyvisor.errors import WaitTimeout
from ptyvisor.wire.protocol import ProcessChanged, Transition

from ..conftest import PTYVISOR_BIN, TOKEN, RunningServer, child_env


def test_a_user_test_drives_a_program_in_a_few_lines(
    ptyvisor_session: Callable[..., ptyvisor.sync.Session],
) -> None:
    """What the plugin's docstring promises, as a user would write it."""
    shell = ptyvisor_session(["sh"], name="demo")
    shell.send_keys("echo hello from $((6 * 7))", "Enter")
    shell.wait_for(text=r"^hello from 42$", timeout=15)
    screen = shell.screen()
    assert "hello from 42" in screen.rows
    assert screen.size.cols == 80
    shell.type("exit 4\n")
    shell.wait_for(exit=True, timeout=15)
    assert shell.summary().process.exit_code == 4
    with pytest.raises(WaitTimeout, match="can no longer hold"):
        shell.wait_for(text="^never$", timeout=60)


def test_sync_streams_and_references(ptyvisor_server: ServerInfo, tmp_path: Path) -> None:
    script = (
        f"{PTYVISOR_BIN} emit activity working --agent tester --reason 'step'; "
        "printf '\\033[1mbold\\033[0m text\\n'; read x; exit 0"
    )
    with ptyvisor.sync.connect(ptyvisor_server.url, ptyvisor_server.token) as remote:
        session = remote.spawn(["sh", "-c", script], name="streams", env=child_env())
        assert remote.session("streams").id == session.id
        assert remote.session(session.id[:-1]).id == session.id
        with pytest.raises(LookupError, match="no session"):
            remote.session("nope")
        session.wait_for(phase="working", text="text$", timeout=15)
        stripped = b""
        for chunk in session.output(strip=True):
            stripped += chunk
            if b"bold text" in stripped:
                break
        assert b"\x1b" not in stripped
        session.send_keys("Enter")
        seen = list(session.events())
        transitions = [event for event in seen if isinstance(event, Transition)]
        assert ("working", "step") in [(t.phase.value, t.reason) for t in transitions]
        assert isinstance(seen[-1], ProcessChanged), seen
        assert seen[-1].process.exit_code == 0, seen


@pytest.mark.anyio
async def test_async_api_finds_the_server_like_the_cli(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTYVISOR_URL", server.url.replace("ws://", "http://"))
    monkeypatch.setenv("PTYVISOR_TOKEN", TOKEN)
    async with ptyvisor.connect() as remote:
        session = await remote.spawn([sys.executable, "-c", "input(); print('got it')"])
        await session.send_keys("go", "Enter")
        await session.wait_for(text=re.compile(r"^got it$"), exit=True, timeout=15)
        sleeper = await remote.spawn(["sleep", "60"])
        with pytest.raises(WaitTimeout, match="not within"):
            await sleeper.wait_for(phase="waiting", timeout=0.2)
        assert (await session.interaction()) is None
        await session.close()
        assert session.id not in {s.id for s in await remote.sessions()}


def test_the_blocking_api_is_generated_from_the_async_one() -> None:
    """``client/sync.py`` is what ``scripts/unasync.py`` writes from the async API
    (same methods, signatures and docstrings): the two cannot drift apart."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "unasync.py"
    result = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
