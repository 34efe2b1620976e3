"""pytest fixtures for tests that drive terminal programs through ptyvisor.

Installed with ptyvisor (the ``pytest11`` entry point), so a test only asks:

    def test_hello(ptyvisor_session):
        shell = ptyvisor_session(["bash", "--norc"])
        shell.send_keys("echo hello", "Enter")
        shell.wait_for(text=r"^hello$", timeout=10)

``ptyvisor_server`` is a real ``ptyvisor serve`` on a free loopback port with a
temporary state directory, stopped (with every program it ran) after the test;
``ptyvisor_session`` starts sessions on it (blocking API, `ptyvisor.client.sync`) and
closes them afterwards.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ptyvisor.client import sync

START_SECONDS = 30
PAGE_LINE = re.compile(r"^page: (https?://\S+)$", re.MULTILINE)


@dataclass
class ServerInfo:
    """A running test server: where it is and its token."""

    url: str
    token: str
    state_dir: Path
    process: subprocess.Popen[bytes]

    def connect(self) -> Any:
        """`ptyvisor.client.sync.connect` to this server (a context manager)."""
        return sync.connect(self.url, self.token)


def start_server(state_dir: Path, *args: str) -> ServerInfo:
    """``python -m ptyvisor serve`` on a free port; returns once it serves."""
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir.parent / f"{state_dir.name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ptyvisor", "serve", "--port", "0", "--state-dir",
             str(state_dir), *args],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    deadline = time.monotonic() + START_SECONDS
    while (found := PAGE_LINE.search(log.read_text(errors="replace"))) is None:
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(process)
            raise RuntimeError(f"ptyvisor serve did not start: {log.read_text()[-2000:]}")
        time.sleep(0.02)
    page = found.group(1)
    token = page.split("?token=", 1)[1]
    return ServerInfo(url=page.split("?", 1)[0], token=token, state_dir=state_dir, process=process)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """The documented stop (SIGTERM: every program is stopped and reaped first)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def ptyvisor_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerInfo]:
    """A real ``ptyvisor serve`` for this test (see the module's docstring)."""
    server = start_server(tmp_path_factory.mktemp("ptyvisor") / "state")
    try:
        yield server
    finally:
        stop_server(server.process)


@pytest.fixture
def ptyvisor_session(
    ptyvisor_server: ServerInfo,
) -> Iterator[Callable[..., sync.Session]]:
    """A factory: ``ptyvisor_session(argv, name=…, cwd=…, agent=…, env=…, cols=…,
    rows=…)`` starts a session and returns it (`ptyvisor.client.sync.Session`)."""
    with ptyvisor_server.connect() as remote:
        started: list[sync.Session] = []

        def start(argv: Sequence[str] = (), **options: Any) -> sync.Session:
            session: sync.Session = remote.spawn(argv, **options)
            started.append(session)
            return session

        yield start
        for session in started:
            with contextlib.suppress(Exception):
                session.close()
