"""What the keeper's tests share: a running ``ptyvisor serve`` and its environment."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from ptyvisor.client.client import Client

from ..conftest import PTYVISOR_BIN, TOKEN, children, start_serve, wait_for

T = TypeVar("T")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    return {**base, "PTYVISOR_STATE_DIR": str(tmp_path / "state"), "PTYVISOR_TOKEN": TOKEN}


class Serve:
    """A running ``ptyvisor serve`` (the keeper) and its server process."""

    def __init__(self, tmp_path: Path, env: dict[str, str], *args: str) -> None:
        self.out, self.err = tmp_path / "serve.out", tmp_path / "serve.err"
        port = [] if "--port" in args else ["--port", "0"]
        self.proc, _ = start_serve([*port, *args], env=env, stdout=self.out, stderr=self.err)
        self.url = self.out.read_text().split("serving on ", 1)[1].split()[0]
        self.env = env

    def server_pid(self) -> int:
        """The keeper's server process (its only child that is not a program)."""

        def find() -> int | None:
            for child in children(self.proc.pid):
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
                if b"ptyvisor.server.worker" in cmdline:
                    return child
            return None

        return wait_for(find, "the server process")

    def stop(self, signum: int = signal.SIGTERM) -> int:
        self.proc.send_signal(signum)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("serve did not stop within 20 s") from None

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """``ptyvisor COMMAND --url <this serve> ARGS`` (its token from the environment)."""
        command, *rest = args
        return subprocess.run(
            [PTYVISOR_BIN, command, "--url", self.url, *rest],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def run(self, call: Callable[[Client], Awaitable[T]]) -> T:
        async def go() -> T:
            async with Client.connect(self.url, TOKEN) as client:
                return await call(client)

        return anyio.run(go)


@pytest.fixture
def serve(tmp_path: Path, env: dict[str, str]) -> Iterator[Serve]:
    running = Serve(tmp_path, env)
    try:
        yield running
    finally:
        if running.proc.poll() is None:
            running.stop()


COUNTER = "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.02; done"


def _numbers(data: bytes) -> list[int]:
    return [int(n) for n in re.findall(rb"line (\d+)\r\n", data)]
