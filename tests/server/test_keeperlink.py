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
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.config import ServerConfig
from ptyvisor.errors import BadLinkMessage, SpawnError
from ptyvisor.server.keeperlink import KeeperLink
from ptyvisor.wire import link as wire
from ptyvisor.wire.link import ProgramSpec

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
        with anyio.fail_after(15):
            with pytest.raises(SpawnError, match="came with 1 descriptors, not 2"):
                await owner.start(spec("s1"))
            with pytest.raises(SpawnError, match="no"):  # the loop lives on
                await owner.start(spec("s2"))
            await stopped.wait()
        tg.cancel_scope.cancel()
    for sock in (keeper, ours, tcp):
        sock.close()


RECEIVER = """
import os, resource, socket, sys
from ptyvisor.errors import Truncated
from ptyvisor.wire import link as wire
# The limit caps descriptor numbers: the socket goes to 3, and only 4 is left free.
if int(sys.argv[1]) != 3:
    os.dup2(int(sys.argv[1]), 3)
    os.close(int(sys.argv[1]))
sock = socket.socket(fileno=3)
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (5, hard))
try:
    wire.receive(sock)
except Truncated as truncated:
    print("truncated", truncated.message.op)
"""


def test_descriptors_the_receiver_has_no_room_for_are_reported() -> None:
    """The kernel drops what does not fit (MSG_CTRUNC): the message says so instead of
    arriving with fewer descriptors than it names."""
    ours, theirs = wire.pair()
    receiver = subprocess.Popen(
        [sys.executable, "-c", RECEIVER, str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    theirs.close()
    one, two = os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_RDONLY)
    wire.send(ours, wire.Spawned(id=1, session="s1", pid=1, tty="x"), [one, two])
    out, err = receiver.communicate(timeout=30)
    os.close(one)
    os.close(two)
    ours.close()
    assert out.strip() == "truncated spawned", (out, err)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = ["session", "pid", "tty", "identity", "cols", "rows", "status", "id", "spec", "n",
          "state", "sessions", "reason", "version", "config"]  # fmt: skip


@given(
    st.one_of(
        JSON,
        st.fixed_dictionaries(
            {"op": st.sampled_from(sorted(wire.MESSAGES)) | st.text(max_size=8)},
            optional={name: JSON for name in FIELDS},
        ),
    )
)
def test_any_json_is_a_message_or_refused(data: object) -> None:
    try:
        message = wire.parse(data)
    except BadLinkMessage:
        return
    assert wire.parse(wire.to_json(message)) == message  # what is kept reads back


def test_the_json_is_version_1s() -> None:
    """An older keeper runs a newer server after an upgrade: the shapes must not move."""
    spec = ProgramSpec("s1", ["sh"], {"A": "b"}, "/", 80, 24, 4096, {"id": "s1"})
    assert wire.to_json(wire.Spawn(7, spec)) == {
        "op": "spawn",
        "id": 7,
        "spec": {
            "session_id": "s1", "argv": ["sh"], "env": {"A": "b"}, "cwd": "/", "cols": 80,
            "rows": 24, "ring_capacity": 4096, "identity": {"id": "s1"},
        },
    }  # fmt: skip
    assert wire.to_json(wire.Adopt("s1", 5, "/dev/pts/1", {}, 80, 24)) == {
        "op": "adopt", "session": "s1", "pid": 5, "tty": "/dev/pts/1", "identity": {},
        "cols": 80, "rows": 24, "status": None,
    }  # fmt: skip
    assert wire.to_json(wire.Adopted()) == {"op": "adopted", "state": None}
    assert wire.to_json(wire.IdentityChanged("s1", {})) == {
        "op": "identity",
        "session": "s1",
        "identity": {},
    }
    assert wire.parse({"op": "ready"}) == wire.Ready()
    assert wire.parse({"op": "spawn_failed", "id": 1, "reason": "x"}) == wire.SpawnFailed(1, "x")
