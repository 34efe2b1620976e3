"""The server's side of the keeper's link (keeperlink.py) over a real socket pair: a
message that cannot be taken (malformed, or its descriptors lost because the server
had no room for them) costs that message, and the spawn waiting for it fails with a
reason, never the loop every later spawn and the stop depend on."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import anyio
import anyio.lowlevel
import pytest

from ptyvisor import handoff
from ptyvisor.config import ServerConfig
from ptyvisor.keeperlink import KeeperLink
from ptyvisor.owner import ProgramSpec
from ptyvisor.spawn import SpawnError

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
    ours, keeper = handoff.pair()
    ours.setblocking(False)
    tcp = socket.socket()
    config = ServerConfig(token="t", port=0)
    link = KeeperLink(ours, tcp, None, config, verbose=False)
    owner = link.owner()
    stopped = anyio.Event()

    async def keeper_side() -> None:
        for session in ("s1", "s2"):
            request = await anyio.to_thread.run_sync(handoff.receive, keeper)
            assert request is not None
            message, _ = request
            assert message["op"] == "spawn" and message["spec"]["session_id"] == session
            if session == "s1":
                # Not JSON, then a JSON list, then a spawned reply with one descriptor
                # where two belong (as when descriptors are lost on the way).
                keeper.send(b"{not json")
                keeper.send(b"[1, 2]")
                handoff.send(
                    keeper,
                    {"op": "spawned", "id": message["id"], "session": "s1", "pid": 1, "tty": "x"},
                    [os.open(os.devnull, os.O_RDONLY)],
                )
                forget = await anyio.to_thread.run_sync(handoff.receive, keeper)
                assert forget is not None and forget[0] == {"op": "forget", "session": "s1"}
            else:
                handoff.send(keeper, {"op": "spawn_failed", "id": message["id"], "reason": "no"})
        handoff.send(keeper, {"op": "stop"})

    async with anyio.create_task_group() as tg:
        tg.start_soon(keeper_side)
        tg.start_soon(lambda: link.run(on_stop=stopped.set, on_restart=anyio.lowlevel.checkpoint))
        with anyio.fail_after(15):
            with pytest.raises(SpawnError, match="malformed"):
                await owner.start(spec("s1"))
            with pytest.raises(SpawnError, match="no"):  # the loop lives on
                await owner.start(spec("s2"))
            await stopped.wait()
        tg.cancel_scope.cancel()
    for sock in (keeper, ours, tcp):
        sock.close()


RECEIVER = """
import os, resource, socket, sys
from ptyvisor import handoff
# The limit caps descriptor numbers: the socket goes to 3, and only 4 is left free.
if int(sys.argv[1]) != 3:
    os.dup2(int(sys.argv[1]), 3)
    os.close(int(sys.argv[1]))
sock = socket.socket(fileno=3)
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (5, hard))
try:
    handoff.receive(sock)
except handoff.Truncated as truncated:
    print("truncated", truncated.message["op"])
"""


def test_descriptors_the_receiver_has_no_room_for_are_reported() -> None:
    """The kernel drops what does not fit (MSG_CTRUNC): the message says so instead of
    arriving with fewer descriptors than it names."""
    ours, theirs = handoff.pair()
    receiver = subprocess.Popen(
        [sys.executable, "-c", RECEIVER, str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    theirs.close()
    one, two = os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_RDONLY)
    handoff.send(ours, {"op": "spawned", "id": 1}, [one, two])
    out, err = receiver.communicate(timeout=30)
    os.close(one)
    os.close(two)
    ours.close()
    assert out.strip() == "truncated spawned", (out, err)
