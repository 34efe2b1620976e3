"""The in-process owner (owner.py, ``serve --no-keeper`` and the tests' servers):
a server that stops reaps every program it stopped, and at once, not after the
grace periods of a program that would not go."""

from __future__ import annotations

import os

import anyio
import pytest

from ptyvisor.client.client import Client
from ptyvisor.config import ServerConfig
from ptyvisor.server.serving import run_server

from ..conftest import TOKEN, child_env

pytestmark = pytest.mark.anyio


async def test_a_stopping_server_reaps_every_program_it_stops(
    server_config: ServerConfig,
) -> None:
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, server_config)
        async with Client.connect(server_config.url, TOKEN) as client:
            pids = [
                (await client.spawn(argv, env=child_env())).process.pid
                for argv in (["cat"], ["sleep", "600"], ["sh", "-c", "trap '' HUP; exec cat"])
            ]
        tg.cancel_scope.cancel()
    for pid in pids:
        assert pid is not None
        with pytest.raises(ChildProcessError):  # reaped already: no zombie left
            os.waitpid(pid, os.WNOHANG)  # noqa: ASYNC222 - WNOHANG
