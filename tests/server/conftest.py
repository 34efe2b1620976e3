"""A server's sessions without the server: a real `Supervisor` owning real PTYs in
this process (as ``serve --no-keeper`` does), with real records, and no socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from ptyvisor.config import ServerConfig
from ptyvisor.server.owner import LocalOwner
from ptyvisor.server.records import Records
from ptyvisor.server.supervisor import Supervisor

from ..conftest import TOKEN


@pytest.fixture
async def supervisor(tmp_path: Path) -> AsyncIterator[Supervisor]:
    config = ServerConfig(token=TOKEN, port=0, state_dir=tmp_path / "state")
    config.state_dir.mkdir(mode=0o700)
    records = await Records.open(config.state_dir)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(records.run)
            supervisor = Supervisor(config, tg, LocalOwner(tg), records)
            yield supervisor
            for session in supervisor.sessions():
                await supervisor.close(session.id)  # an explicit stop, as a client's close
            tg.cancel_scope.cancel()
    finally:
        await records.aclose()
