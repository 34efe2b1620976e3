"""The port's HTTP side (httpfront.py): a plain GET is the page or the read-only API,
an upgrade becomes a client connection only with the right token, and no more than
`MAX_CLIENTS` are served at once; the count frees as clients leave. A real server,
real HTTP and WebSocket connections."""

from __future__ import annotations

import contextlib

import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.exceptions import InvalidStatus

from ptyvisor.client.client import Client
from ptyvisor.server import httpfront

from ..conftest import TOKEN, RunningServer, poll
from .test_webpage import get

pytestmark = pytest.mark.anyio


async def connected_clients(server: RunningServer) -> int:
    """The server's own count, from its metrics."""
    reply = await get(server, "/metrics", Authorization=f"Bearer {TOKEN}")
    for family in text_string_to_metric_families(reply.body.decode()):
        for sample in family.samples:
            if sample.name == "ptyvisor_clients":
                return int(sample.value)
    raise AssertionError("no ptyvisor_clients in the metrics")


@pytest.fixture
def two_clients_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(httpfront, "MAX_CLIENTS", 2)


@pytest.mark.usefixtures("two_clients_at_most")
async def test_clients_past_the_limit_are_refused_until_one_leaves(server: RunningServer) -> None:
    async with contextlib.AsyncExitStack() as stack:
        first = await stack.enter_async_context(Client.connect(server.url, TOKEN))
        await stack.enter_async_context(Client.connect(server.url, TOKEN))
        assert await connected_clients(server) == 2
        with pytest.raises(InvalidStatus) as refused:
            await stack.enter_async_context(Client.connect(server.url, TOKEN))
        assert refused.value.response.status_code == 503
        assert b"too many clients" in refused.value.response.body
        assert await first.list() == []  # the two served go on as before
        await first.aclose()

        async def one_left() -> bool:
            return await connected_clients(server) == 1

        await poll(one_left)
        third = await stack.enter_async_context(Client.connect(server.url, TOKEN))
        assert await third.list() == []


async def test_a_refused_upgrade_is_no_client_and_plain_gets_are_page_or_api(
    server: RunningServer,
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with Client.connect(server.url, "not-the-token"):
            pass
    assert refused.value.response.status_code in (401, 403)
    assert await connected_clients(server) == 0
    page = await get(server, "/")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    api = await get(server, "/api/sessions")  # no token: the API refuses, not the page
    assert api.status == 401 and not api.body.startswith(b"<!")
    assert (await get(server, "/api/sessions", Authorization=f"Bearer {TOKEN}")).status == 200
