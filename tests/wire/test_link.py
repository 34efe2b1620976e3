"""The keeper's link (wire/link.py): descriptors that do not fit are reported, any
JSON is a message or refused, and the JSON is version 1's, the handover included, so
an older keeper still runs a newer server."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.errors import BadLinkMessage
from ptyvisor.wire import link as wire
from ptyvisor.wire.link import HandedFrames, HandedScreen, ProgramSpec, SessionHandover

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


HANDOVER_V1 = {
    "session": "s1",
    "screen": {"ansi": "\x1b[H$ ", "seq": 42},
    "tracker": {"activity": {"phase": "working"}},
    "queued_message": "then this",
    "frames": {"applied": 3, "ignored": 1, "rejected": {"nonce": 2}},
}


def test_the_handover_is_typed_and_its_json_is_version_1s() -> None:
    """The state a server hands the next one through the keeper, read by the keeper
    (which keeps it) and by the next server, in the shape it had as plain JSON."""
    message = wire.parse({"op": "handover", "sessions": [HANDOVER_V1]})
    expected = SessionHandover(
        session="s1",
        tracker={"activity": {"phase": "working"}},
        screen=HandedScreen("\x1b[H$ ", 42),
        queued_message="then this",
        frames=HandedFrames(3, 1, {"nonce": 2}),
    )
    assert message == wire.Handover([expected])
    assert wire.to_json(wire.Adopted([expected])) == {"op": "adopted", "state": [HANDOVER_V1]}
    assert wire.parse({"op": "adopted", "state": [{"session": "s2", "tracker": {}}]}) == (
        wire.Adopted([SessionHandover("s2", {})])
    )


def test_a_handover_that_does_not_fit_is_refused_as_a_message() -> None:
    brokens: list[dict[str, Any]] = [
        {**HANDOVER_V1, "frames": {"applied": "3"}},
        {**HANDOVER_V1, "screen": {"ansi": 1, "seq": 1}},
        {**HANDOVER_V1, "tracker": []},
        {"tracker": {}},
    ]
    for broken in brokens:
        try:
            wire.parse({"op": "handover", "sessions": [broken]})
        except BadLinkMessage:
            continue
        raise AssertionError(f"accepted {broken}")
