"""``serve --detach``: serve in a session of its own, logging to the state directory,
until ``ptyvisor stop``. Real ``serve`` processes."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import anyio

from ptyvisor.client.client import Client
from ptyvisor.keeper.keeper import lock_holder

from ..cli.test_commands import clean_env, run_cli
from ..conftest import alive


def in_background(pid: int) -> bool:
    """A session of its own, no controlling terminal, input from /dev/null."""
    tty_nr = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[4])
    return os.getsid(pid) == pid and tty_nr == 0 and os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"


@contextlib.contextmanager
def stopped_at_the_end(env: dict[str, str]) -> Iterator[None]:
    """Stop the serve the block starts on ``env``'s state directory with ``ptyvisor
    stop`` at its end (it must stop, and its program with it); kill one a failure
    left running."""
    state = Path(env["PTYVISOR_STATE_DIR"])
    try:
        yield
        serve = lock_holder(state)
        stopped = run_cli("stop", env=env, timeout=60)
        assert stopped.returncode == 0 and serve is not None and not alive(serve), stopped.stderr
    finally:
        holder = lock_holder(state)
        if holder is not None:
            os.kill(holder, signal.SIGKILL)


def test_serve_detach_serves_in_the_background_until_stopped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = clean_env(tmp_path / "home", state)
    with stopped_at_the_end(env):
        started = run_cli("serve", "--detach", "--port", "0", env=env, timeout=90)
        assert started.returncode == 0, started.stderr
        url = re.search(r"serving on (\S+)", started.stdout)
        pid = re.search(r"in the background: pid (\d+)", started.stdout)
        assert url and pid and "page: http" in started.stdout, started.stdout
        serve = int(pid.group(1))
        assert lock_holder(state) == serve and in_background(serve)
        token = (state / "token").read_text().strip()
        log = state / "serve.log"
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        assert token not in log.read_text()  # the page line went to the caller only

        async def sessions() -> int:
            async with Client.connect(url.group(1), token) as client:
                return len(await client.list())

        assert anyio.run(sessions) == 0
        again = run_cli("serve", "--detach", "--port", "0", env=env)
        assert again.returncode == 1 and f"(pid {serve}) is running" in again.stderr


def test_serve_detach_says_why_it_did_not_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = clean_env(tmp_path / "home", state)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        failed = run_cli("serve", "--detach", "--port", port, env=env, timeout=90)
    assert failed.returncode == 1 and "did not start" in failed.stderr
    assert port in failed.stderr, failed.stderr  # the reason, from its log
    assert lock_holder(state) is None
    refused = run_cli("serve", "--detach", "--no-keeper", env=env)
    assert refused.returncode == 2 and "--detach needs the keeper" in refused.stderr
