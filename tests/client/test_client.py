"""The async client's own logic (client.py): replies matched to their requests among
concurrent ones and the stream, a lost connection failing what waited on it, and a
server this client cannot fully read (a newer one, on another machine) costing the
message it cannot read, never the connection."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import pytest
from websockets.asyncio.server import ServerConnection, serve

from ptyvisor.client.client import Client, ConnectionLost
from ptyvisor.errors import Disconnected, ServerError
from ptyvisor.wire.protocol import Hello, Sessions

from ..conftest import RunningServer, child_env, poll

pytestmark = pytest.mark.anyio
Script = Callable[[ServerConnection], Awaitable[None]]


@asynccontextmanager
async def scripted(script: Script) -> AsyncIterator[str]:
    """A WebSocket peer that plays ``script``: the server's side of a conversation
    this client must survive."""
    async with serve(script, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/"


async def greet(ws: ServerConnection) -> None:
    await ws.send(Hello(server_version="99.0").model_dump_json())


async def test_a_reply_or_push_it_cannot_read_costs_that_message_only() -> None:
    async def newer_server(ws: ServerConnection) -> None:
        await greet(ws)
        first = json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "sessions_v9", "req_id": first["req_id"]}))
        await ws.send(json.dumps({"type": "a_push_from_the_future", "x": [1, 2]}))
        await ws.send("not json at all")
        second = json.loads(await ws.recv())
        await ws.send(Sessions(req_id=second["req_id"], sessions=[]).model_dump_json())
        third = json.loads(await ws.recv())
        newer = {"code": "a_code_from_the_future", "message": "said so"}
        await ws.send(json.dumps({"type": "error", "req_id": third["req_id"], **newer}))
        await ws.wait_closed()

    async with scripted(newer_server) as url, Client.connect(url, None) as client:
        with pytest.raises(ServerError) as failed:
            await client.list()
        assert failed.value.code == "bad_message" and "sessions_v9" in failed.value.message
        assert await client.list() == []
        with pytest.raises(TimeoutError):
            await client.next_event(wait=0.2)  # nothing it could not read was passed on
        with pytest.raises(ServerError) as newer:  # a newer server's error: still its error
            await client.list()
        assert (newer.value.code, newer.value.message) == ("a_code_from_the_future", "said so")


async def test_a_greeting_it_cannot_read_is_a_disconnection_that_says_why() -> None:
    async def future(ws: ServerConnection) -> None:
        # A greeting of another shape (agent names it does not know, it reads).
        await ws.send(json.dumps({"type": "hello", "protocol": 99, "server_version": "99",
                                  "agents": [{"future": "shape"}]}))  # fmt: skip
        await ws.wait_closed()

    async with scripted(future) as url:
        with pytest.raises(Disconnected, match=r"greeting cannot be read.*future"):
            async with Client.connect(url, None):
                pass


async def test_a_request_in_flight_when_the_connection_goes_fails_and_is_said() -> None:
    async def vanish(ws: ServerConnection) -> None:
        await greet(ws)
        await ws.recv()
        await ws.close()

    async with scripted(vanish) as url, Client.connect(url, None) as client:
        with pytest.raises(Disconnected):
            await client.list()
        assert isinstance(await client.next_event(), ConnectionLost)
        with pytest.raises(Disconnected):
            await client.list()


async def test_concurrent_requests_each_get_their_own_reply(
    client: Client, server: RunningServer
) -> None:
    sessions = [
        await client.spawn(["sh", "-c", f"echo marker-{i}; exec cat"], env=child_env())
        for i in range(4)
    ]
    for i, session in enumerate(sessions):
        await poll(functools.partial(_shows, client, session.id, f"marker-{i}"))
    results: dict[int, str] = {}

    async def capture(n: int) -> None:
        captured = await client.capture(sessions[n % 4].id)
        results[n] = captured.rows[0]

    async with anyio.create_task_group() as tg:
        for n in range(40):
            tg.start_soon(capture, n)
    assert results == {n: f"marker-{n % 4}" for n in range(40)}


async def _shows(client: Client, session_id: str, text: str) -> bool | None:
    return True if text in "\n".join((await client.capture(session_id)).rows) else None


async def test_an_error_inside_comes_out_as_itself(server: RunningServer) -> None:
    """Not wrapped in an exception group: ``except`` of the caller's own error, or of
    a `ServerError`, works around the ``async with``."""

    class Mine(Exception):
        pass

    with pytest.raises(Mine):
        async with Client.connect(server.url, server.config.token):
            raise Mine
    with pytest.raises(ServerError) as refused:
        async with Client.connect(server.url, server.config.token) as client:
            await client.capture("s0nosuch0")
    assert refused.value.code == "unknown_session"
