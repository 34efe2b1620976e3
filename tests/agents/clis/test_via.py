"""An agent started through a wrapper (``run --agent pi --via 'ssh -t host'``): the real
Pi on the far side of a real OpenSSH server, reporting in-band through the terminal as
if it ran here (agents/via.py). The far side's login has an environment of its own
(tests/sshd.py); the session's nonce reaches it through the terminal, never in a
command line, and never shows to a client."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.installed import agent_bin_dir
from tests.agents.clis.offline import offline_env
from tests.agents.clis.ready import PROMPT_SHOWN
from tests.agents.clis.under_ptyvisor import agent_session
from tests.timeouts import scaled

from ...sshd import local_sshd

pytestmark = pytest.mark.anyio

CTRL_D = "\x04"
VENV_BIN = str(Path(sys.executable).parent)


@contextmanager
def far_host(tmp_path: Path, model_url: str, *, with_ptyvisor: bool = True) -> Iterator[list[str]]:
    """A second machine reached with ssh -t, whose login has Pi configured against the
    fake model (and ptyvisor on its PATH, or not); yields the wrapper."""
    env, _ = offline_env("pi", tmp_path / "far-home", tmp_path / "far-project", model_url)
    path = [agent_bin_dir().as_posix(), "/usr/bin", "/bin"]
    env["PATH"] = os.pathsep.join([VENV_BIN, *path] if with_ptyvisor else path)
    with local_sshd(tmp_path / "sshd", {"far": env}) as config:
        yield ["ssh", "-t", "-F", str(config), "far"]


def _command_lines() -> list[bytes]:
    lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes())
        except OSError:
            continue
    return lines


@pytest.mark.timeout(120, func_only=True)
async def test_pi_through_ssh_reports_as_if_it_ran_here(tmp_path: Path) -> None:
    (tmp_path / "sshd").mkdir()
    async with FakeModelServer() as model:
        with far_host(tmp_path, model.base_url) as via:
            async with agent_session("pi", tmp_path, model, via=via) as run:
                await run.wait_screen(PROMPT_SHOWN["pi"], wait=60)
                ready = await run.wait_phase("waiting", wait=30)
                assert (ready.activity.agent, ready.activity.source) == ("pi", "extension")

                model.script(Reply.text("Over there DONE-FAR"))
                mark = run.mark()
                await run.submit("Say something")
                await run.wait_phase("working", since=mark, wait=30)
                done = await run.wait_phase("waiting", since=mark, wait=60)
                assert done.activity.native_session_id, "Pi's own id came through"
                await run.wait_screen("DONE-FAR", wait=20)

                listed = {s.id: s for s in await run.client.list()}[run.session_id]
                assert listed.command[: len(via) + 1] == [*via, "pi"]
                assert listed.argv[-4:-1] == ["ptyvisor", "via-exec", run.session_id]  # + token
                nonce = _nonce_of(run.session_id)
                assert not any(nonce in line for line in _command_lines())
                shown = (await run.client.snapshot(run.session_id)).screen.ansi
                assert nonce.decode() not in shown
                stats = await run.client.stats(run.session_id)
                assert stats.frames_rejected == {}

                await run.type(CTRL_D)
                await run.wait_phase("stopped", since=mark, wait=20)
                # Pi reports its end before it exits, and ssh ends after it: only a
                # session whose program has ended can be resumed.
                with anyio.fail_after(scaled(30)):
                    while listed.process.state != "exited":
                        await anyio.sleep(0.1)
                        listed = {s.id: s for s in await run.client.list()}[run.session_id]

                # Resumed through the same wrapper, on the same conversation over there.
                again = await run.client.resume(run.session_id)
                assert again.command[: len(via) + 1] == [*via, "pi"]
                with anyio.fail_after(scaled(60)):
                    while again.activity.source != "extension":
                        await anyio.sleep(0.1)
                        again = {s.id: s for s in await run.client.list()}[again.id]
                assert again.activity.native_session_id == done.activity.native_session_id
                await run.client.close(again.id)
    assert run.phases == ["starting", "waiting", "working", "waiting", "stopped"], run.phases
    model.assert_no_unexpected()


@pytest.mark.timeout(120, func_only=True)
async def test_a_far_side_without_ptyvisor_says_so_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "sshd").mkdir()
    async with FakeModelServer() as model:
        with far_host(tmp_path, model.base_url, with_ptyvisor=False) as via:
            async with agent_session("pi", tmp_path, model, via=via) as run:
                failed = await run.wait_phase("failed", wait=60)
    reason = failed.activity.reason or ""
    assert "far side of 'ssh -t -F" in reason and "has no ptyvisor" in reason, reason
    assert "\n" not in reason
    assert model.requests == []


def _nonce_of(session_id: str) -> bytes:
    """The session's nonce, as its program's environment has it (the ssh client)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"PTYVISOR_SESSION={session_id}".encode() in environ:
            for entry in environ:
                if entry.startswith(b"PTYVISOR_NONCE="):
                    return entry.split(b"=", 1)[1]
    raise AssertionError(f"no process of session {session_id} found")
