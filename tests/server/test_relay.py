"""``/contexts/NAME`` (server/relay.py): a client of this server reaches a named
context's server through a real OpenSSH server (the far machine of
``tests/client/test_ssh.py``), speaking that server's protocol unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets import ConnectionClosed, InvalidStatus
from websockets.asyncio.client import connect

from ptyvisor.client.client import Client, Output
from ptyvisor.server.relay import REASON_BYTES, close_reason, context_of
from tests.timeouts import scaled

from ..cli.test_commands import ServerProcess, clean_env, run_cli, start_server
from ..client.test_ssh import Sshd, sshd  # noqa: F401 - the fixture, for this module
from ..conftest import TOKEN

pytestmark = pytest.mark.anyio


@dataclass
class Local:
    """This machine's server, with contexts named ``far`` (a server), ``fresh`` (no
    server there) and ``direct`` (a ws:// URL)."""

    server: ServerProcess
    ssh: str

    def url(self, context: str) -> str:
        return f"{self.server.url}contexts/{context}"


@pytest.fixture
def local(sshd: Sshd, tmp_path: Path) -> Iterator[Local]:  # noqa: F811 - the fixture above
    env = clean_env(tmp_path / "home", tmp_path / "state")
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        PTYVISOR_SSH=sshd.env["PTYVISOR_SSH"],
        PTYVISOR_TOKEN=TOKEN,
    )
    for name, url in (("far", "ssh://far"), ("fresh", "ssh://fresh"), ("direct", sshd.far_url)):
        added = run_cli("context", "add", name, url, env=env)
        assert added.returncode == 0, added.stderr
    server = start_server(tmp_path, env)
    try:
        yield Local(server, sshd.env["PTYVISOR_SSH"])
    finally:
        assert server.stop() == 0


async def test_a_client_drives_a_contexts_session_through_this_server(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Client.connect(local.url("far"), TOKEN) as relayed:
        assert relayed.hello is not None  # the far server's greeting, passed on
        spawned = await relayed.spawn(["sh", "-c", "echo relayed-$((6*7)); exec cat"])
        events = relayed.events()
        await relayed.attach(spawned.id, since=0)
        await relayed.send_input(b"ping\n")
        seen = b""
        with anyio.fail_after(scaled(20)):
            async for event in events:
                if isinstance(event, Output):
                    seen += event.data
                    if b"relayed-42" in seen and seen.count(b"ping") >= 2:  # echo and cat
                        break
        # It is the far machine's session: seen there directly, the same.
        monkeypatch.setenv("PTYVISOR_SSH", local.ssh)
        async with Client.connect("ssh://far", None) as direct:
            listed = {summary.id: summary for summary in await direct.list()}
            assert spawned.id in listed
            await direct.close(spawned.id)


async def refusal(url: str) -> tuple[int, str]:
    """The close code and reason a relay ends with before any message."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with connect(url, additional_headers=headers, open_timeout=scaled(10)) as ws:
        with pytest.raises(ConnectionClosed) as closed, anyio.fail_after(scaled(30)):
            await ws.recv()
    received = closed.value.rcvd
    assert received is not None
    return received.code, received.reason


async def test_a_context_that_is_unknown_down_or_not_ssh_is_a_close_with_its_reason(
    local: Local,
    sshd: Sshd,  # noqa: F811 - the fixture above
) -> None:
    code, reason = await refusal(local.url("nowhere"))
    assert (code, reason) == (1008, "no context 'nowhere' (ptyvisor context ls)")
    code, reason = await refusal(local.url("direct"))
    assert (code, reason) == (1008, "direct is not an ssh:// context")
    # No server there, and a relay never starts one (looking must not start anything).
    code, reason = await refusal(local.url("fresh"))
    assert code == 1013 and reason.startswith("fresh: ") and "no server" in reason, reason
    assert not sshd.fresh_state.exists()


async def test_the_relay_is_behind_this_servers_token(local: Local) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(local.url("far"), open_timeout=scaled(10)):
            pass
    assert refused.value.response.status_code == 401


@given(st.text())
def test_any_name_gives_a_short_printable_close_reason(name: str) -> None:
    reason = close_reason(f"no context {name!r}")
    assert len(reason.encode()) <= REASON_BYTES <= 123
    assert not any(ord(char) < 32 or 0x7F <= ord(char) < 0xA0 for char in reason)
    assert context_of("/contexts/" + name) == name
    if not name.startswith("contexts/"):
        assert context_of("/" + name) is None
