"""A client command that finds no server on this machine starts one in the background,
as tmux does, unless told not to. Real CLI and ``serve`` processes."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from ptyvisor.keeper.keeper import lock_holder

from ..keeper.test_background import stopped_at_the_end
from .test_commands import clean_env, run_cli


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_command_that_finds_no_server_starts_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = clean_env(tmp_path / "home", state)
    url = f"ws://127.0.0.1:{free_port()}/"
    with stopped_at_the_end(env):
        listed = run_cli("ls", "--url", url, env=env, timeout=90)
        assert listed.returncode == 0, listed.stderr
        assert f"started a server on {url} in the background" in listed.stderr
        serve = lock_holder(state)
        assert serve is not None and os.getsid(serve) == serve
        spawned = run_cli("run", "-d", "--url", url, "--", "cat", env=env, timeout=60)
        assert spawned.returncode == 0, spawned.stderr
        assert "started a server" not in spawned.stderr  # one was there this time
        listed = run_cli("ls", "--url", url, env=env, timeout=60)
        assert spawned.stdout.strip() in listed.stdout


@pytest.mark.parametrize(
    ("how", "url"),
    [
        ("--no-autostart", "ws://127.0.0.1:{port}/"),
        ("PTYVISOR_NO_AUTOSTART=1", "ws://127.0.0.1:{port}/"),
        ("not on this machine's plain ws://", "wss://127.0.0.1:{port}/"),
    ],
)
def test_no_server_is_started_when_told_not_to_or_not_ours_to_start(
    tmp_path: Path, how: str, url: str
) -> None:
    state = tmp_path / "state"
    env = clean_env(tmp_path / "home", state)
    args = ["ls", "--url", url.format(port=free_port())]
    if how.startswith("--"):
        args.append(how)
    elif "=" in how:
        env[how.split("=", maxsplit=1)[0]] = "1"
    result = run_cli(*args, env=env, timeout=60)
    assert result.returncode == 1 and "cannot reach the server" in result.stderr
    assert "started a server" not in result.stderr and lock_holder(state) is None
