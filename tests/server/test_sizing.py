"""Whose size the program gets when several clients show a session (tmux's
``latest``): the client that last typed or resized; attaching alone takes nothing;
the next most recent client takes over when the holder leaves; viewers never type
or resize. Checked against the real PTY's size (``stty size`` inside the session)."""

from __future__ import annotations

import re

import anyio
import pytest

from ptyvisor.client.client import Client
from ptyvisor.errors import ServerError
from ptyvisor.server.sizing import SizePolicy
from ptyvisor.wire.protocol import Error, TermSize
from tests.timeouts import scaled

from ..conftest import TOKEN, RunningServer, output_until, poll

pytestmark = pytest.mark.anyio


async def size_of(client: Client, session_id: str) -> TermSize:
    return next(s for s in await client.list() if s.id == session_id).size


async def settles_at(client: Client, session_id: str, cols: int, rows: int) -> None:
    async def check() -> bool:
        return await size_of(client, session_id) == TermSize(cols=cols, rows=rows)

    await poll(check)


async def pty_size(client: Client, tag: str) -> tuple[int, int]:
    """Ask the shell in the session for its terminal's real size, as ``client`` types."""
    await client.send_input(f"echo {tag} $(stty size)\n")
    # The whole answer, up to its line's end (a number cut between two reads would
    # match too early); the typed command echoed before it has no digits after the tag.
    answer = re.compile(tag.encode() + rb" (\d+) (\d+)\r\n")
    received = await output_until(client, answer)
    found = answer.search(received)
    assert found is not None, received
    rows, cols = int(found.group(1)), int(found.group(2))
    return cols, rows


async def test_size_follows_the_client_that_typed_or_resized_last(server: RunningServer) -> None:
    async with (
        Client.connect(server.url, TOKEN) as desktop,
        Client.connect(server.url, TOKEN) as phone,
    ):
        session = await desktop.spawn(["sh"], cols=80, rows=24)
        # Nobody holds the size yet: the first client to attach gets its own.
        await desktop.attach(session.id, size=(120, 40))
        await settles_at(desktop, session.id, 120, 40)
        # A phone that only opens the session takes nothing from the desktop.
        await phone.attach(session.id, size=(41, 20))
        assert await size_of(phone, session.id) == TermSize(cols=120, rows=40)
        assert await pty_size(desktop, "d1") == (120, 40)
        # Typing on the phone takes its size, for everyone; the desktop's next key
        # takes its own back.
        assert await pty_size(phone, "p1") == (41, 20)
        await settles_at(desktop, session.id, 41, 20)
        assert await pty_size(desktop, "d2") == (120, 40)
        # Resizing one's window claims the size too.
        await phone.resize(session.id, 50, 25)
        await settles_at(desktop, session.id, 50, 25)
        # The holder leaves: the most recently active client left takes over.
        await phone.detach()
        await settles_at(desktop, session.id, 120, 40)
        assert await pty_size(desktop, "d3") == (120, 40)


async def test_when_the_holder_disconnects_the_others_size_returns(server: RunningServer) -> None:
    async with Client.connect(server.url, TOKEN) as desktop:
        session = await desktop.spawn(["sh"], cols=80, rows=24)
        await desktop.attach(session.id, size=(100, 30))
        async with Client.connect(server.url, TOKEN) as phone:
            await phone.attach(session.id, size=(41, 20))
            await phone.send_input(b" ")
            await settles_at(desktop, session.id, 41, 20)
        # The phone's page closed (its connection went away, no detach sent).
        await settles_at(desktop, session.id, 100, 30)


async def test_a_viewer_never_types_or_resizes(server: RunningServer) -> None:
    async with (
        Client.connect(server.url, TOKEN) as owner,
        Client.connect(server.url, TOKEN) as viewer,
    ):
        session = await owner.spawn(["sh"], cols=90, rows=30)
        await owner.attach(session.id, size=(90, 30))
        await viewer.attach(session.id, size=(41, 20), view_only=True)
        assert await size_of(viewer, session.id) == TermSize(cols=90, rows=30)
        # Typing (binary input) is refused with a typed error, and nothing reaches the program.
        await viewer.send_input(b"echo from-viewer\n")
        with anyio.fail_after(scaled(10)):
            while True:
                event = await viewer.next_event(10)
                if isinstance(event, Error):
                    assert event.code == "view_only"
                    break
        for message in (
            {"type": "input", "session": session.id, "data": "x"},
            {"type": "resize", "session": session.id, "cols": 41, "rows": 20},
        ):
            with pytest.raises(ServerError) as refused:
                await viewer.request(message)
            assert refused.value.code == "view_only"
        assert await size_of(viewer, session.id) == TermSize(cols=90, rows=30)
        # It still watches: what the owner types, it sees.
        await owner.send_input(b"echo from-owner\n")
        seen = await output_until(viewer, b"from-owner\r\n")
        assert b"from-viewer" not in seen


def test_policy_bookkeeping() -> None:
    small, big = TermSize(cols=40, rows=10), TermSize(cols=200, rows=50)
    policy: SizePolicy[str] = SizePolicy()
    assert policy.attached("a", big) == big and policy.latest == "a"
    assert policy.attached("b", small) is None and policy.latest == "a"
    assert policy.typed("a") is None  # holds it already
    assert policy.typed("b") == small and policy.latest == "b"
    assert policy.typed("c") is None  # never said what size it wants
    assert policy.detached("a") is None  # did not hold it
    assert policy.detached("b") is None  # nobody left to take over
    assert policy.latest is None
    assert policy.attached("d", None) is None
    policy.resized("e", small)
    policy.resized_from_outside()
    assert policy.latest is None
    assert policy.typed("e") == small
    # A layout change is no claim: it applies only to the one holding the size.
    assert policy.wants("e", big) == big
    assert policy.attached("f", small) is None
    assert policy.wants("f", big) is None and policy.latest == "e"
    assert policy.typed("f") == big
