"""The server's side of the keeper's link (keeperlink.py) over a real socket pair: a
message that cannot be taken (malformed, or its descriptors lost because the server
had no room for them) costs that message, and the spawn waiting for it fails with a
reason, never the loop every later spawn and the stop depend on."""

from __future__ import annotations

import os
import socket

import anyio
import anyio.lowlevel
import pytest

from ptyvisor.config import ServerConfig
from ptyvisor.errors import SpawnError
from ptyvisor.server.keeperlink import KeeperLink
from ptyvisor.wire import link as wire
from ptyvisor.wire.link import ProgramSpec
from tests.timeouts import scaled

pytestmark = pytest.mark.anyio


def spec(session: str) -> ProgramSpec:
    return ProgramSpec(
        session_id=session,
        argv=["true"],
        env={},
        cwd="/",
        cols=80,
        rows=24,
        ring_capacity=4096,
        identity={},
    )


async def test_malformed_and_short_messages_cost_only_themselves() -> None:
    ours, keeper = wire.pair()
    ours.setblocking(False)
    tcp = socket.socket()
    config = ServerConfig(token="t", port=0)
    link = KeeperLink(ours, tcp, None, config, verbose=False)
    owner = link.owner()
    stopped = anyio.Event()

    async def keeper_side() -> None:
        for session in ("s1", "s2"):
            request = await anyio.to_thread.run_sync(wire.receive, keeper)
            assert request is not None
            message, _ = request
            assert isinstance(message, wire.Spawn) and message.spec.session_id == session
            if session == "s1":
                # Not JSON, a JSON list, an unknown op, a field of the wrong type,
                # then a spawned reply with one descriptor where two belong (as when
                # descriptors are lost on the way).
                keeper.send(b"{not json")
                keeper.send(b"[1, 2]")
                keeper.send(b'{"op": "launch"}')
                keeper.send(b'{"op": "exited", "session": "s1", "status": "0"}')
                spawned = wire.Spawned(id=message.id, session="s1", pid=1, tty="x")
                wire.send(keeper, spawned, [os.open(os.devnull, os.O_RDONLY)])
                forget = await anyio.to_thread.run_sync(wire.receive, keeper)
                assert forget is not None and forget[0] == wire.Forget("s1")
            else:
                wire.send(keeper, wire.SpawnFailed(id=message.id, reason="no"))
        wire.send(keeper, wire.Stop())

    async with anyio.create_task_group() as tg:
        tg.start_soon(keeper_side)
        tg.start_soon(lambda: link.run(on_stop=stopped.set, on_restart=anyio.lowlevel.checkpoint))
        with anyio.fail_after(scaled(15)):
            with pytest.raises(SpawnError, match="came with 1 descriptors, not 2"):
                await owner.start(spec("s1"))
            with pytest.raises(SpawnError, match="no"):  # the loop lives on
                await owner.start(spec("s2"))
            await stopped.wait()
        tg.cancel_scope.cancel()
    for sock in (keeper, ours, tcp):
        sock.close()
