"""Nothing a WebSocket client sends can crash or wedge the server: every bad message gets
a typed error (never a 1011 close), a client that does not read is bounded, and a bug
in handling one connection ends that connection only. Real server, real connections."""

from __future__ import annotations

import http.client
import json
import os
import resource
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from ptyvisor.client.client import Client
from ptyvisor.server.dispatch import Dispatcher
from ptyvisor.terminal.keys import MAX_KEY_CHARS, MAX_KEYS_CHARS
from ptyvisor.wire.protocol import (
    CLIENT_MESSAGE_TYPES,
    MAX_TEXT_MESSAGE,
    SERVER_MESSAGE,
    Error,
    Hello,
    Sessions,
)
from tests.timeouts import scaled

from .conftest import TOKEN, RunningServer, assert_echoes, poll

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def open_raw(server: RunningServer, **options: Any) -> ClientConnection:
    ws = await connect(server.url, additional_headers=AUTH, open_timeout=10, **options)
    assert isinstance(SERVER_MESSAGE.validate_json(await ws.recv()), Hello)
    return ws


async def reply_to(ws: ClientConnection, message: str | bytes) -> Error | Sessions:
    """Send one message, then a ``list`` probe; the reply to ``message`` (an error) or,
    when it has none, the probe's. Every message on the way must be well-formed."""
    probe = f"probe-{uuid.uuid4().hex}"
    await ws.send(message)
    await ws.send(json.dumps({"type": "list", "req_id": probe}))
    first: Error | Sessions | None = None
    while True:
        with anyio.fail_after(scaled(15)):
            parsed = SERVER_MESSAGE.validate_json(await ws.recv())
        if isinstance(parsed, Error) and first is None:
            first = parsed
        if isinstance(parsed, Sessions) and parsed.req_id == probe:
            return first or parsed


# --------------------------------------------------------------------------- typed errors


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("[" * 5000 + "]" * 5000, "bad_json"),  # past the parser's recursion limit
        ('{"type": "list", "x": ' + "[" * 100 + "]" * 100 + "}", "bad_json"),  # past 64
        ("1" * 5000, "bad_json"),  # an integer too long to convert
        ('{"type": "list", "n": NaN}', "bad_json"),
        (json.dumps({"type": "list", "req_id": "r" * 200}), "bad_message"),
        ('{"type": "list", "req_id": "\\ud800"}', "bad_message"),
        ('{"type": "input", "session": "s1", "data": "\\ud83d"}', "bad_message"),
        ('{"type": "send", "session": "s1", "message": "half \\ud83d"}', "bad_message"),
        (
            '{"type": "answer", "session": "s1", "interaction": "i", "behavior": "deny",'
            ' "message": "\\udc80"}',
            "bad_message",
        ),
        (json.dumps({"type": "list", "req_id": 2**60}), "bad_message"),
        (json.dumps({"type": "spawn", "argv": ["true", "a\0b"]}), "bad_message"),
        (json.dumps({"type": "spawn", "argv": ["true"], "env": {"A\0B": "1"}}), "bad_message"),
        (json.dumps({"type": "spawn", "argv": ["true"], "env": {"A=B": "1"}}), "bad_message"),
        (json.dumps({"type": "spawn", "argv": ["true"], "env": {"": "1"}}), "bad_message"),
        (json.dumps({"type": "spawn", "argv": ["true"], "env": {"A": "x\0y"}}), "bad_message"),
        (json.dumps({"type": "spawn", "argv": ["true"], "cwd": "/tmp\0x"}), "bad_message"),
        (json.dumps({"type": "spawn", "argv_bytes": ["!!not base64"]}), "bad_message"),
        ('{"type": []}', "bad_message"),  # unhashable: it once closed the connection
        ('{"type": {}}', "bad_message"),
        ('{"type": 7}', "bad_message"),
        ("[]", "bad_message"),
        ('{"type": "no-such"}', "unknown_type"),
    ],
)
async def test_bad_messages_get_typed_errors_and_keep_the_connection(
    server: RunningServer, bystander: str, message: str, code: str
) -> None:
    ws = await open_raw(server)
    async with ws:
        reply = await reply_to(ws, message)
        assert isinstance(reply, Error), reply
        assert reply.code == code, reply
        # A malformed req_id is not echoed (it could not be); a fine one always is.
        assert reply.req_id is None
        assert isinstance(await reply_to(ws, json.dumps({"type": "list"})), Sessions)
    await assert_echoes(server, bystander)


async def test_binary_input_before_attaching_is_an_error(server: RunningServer) -> None:
    ws = await open_raw(server)
    async with ws:
        for data in (b"", b"\x00\xff" * 10, os.urandom(70_000)):
            reply = await reply_to(ws, data)
            assert isinstance(reply, Error) and reply.code == "not_attached"


# --------------------------------------------------------------------------- fuzzing

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=40)
    | st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=3)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "req_id", "session", "since", "data", "cols", "rows", "signal", "interaction",
    "behavior", "message", "suggestion", "answers", "answers_queries", "argv", "env",
    "keys", "literal", "paste", "scrollback", "ansi", "name", "view_only", "claim",
    "all", "rerun",
]  # fmt: skip
# Never ``spawn``: a fuzzer must not run arbitrary commands (see the spawn fuzzer).
TYPES = [*sorted(CLIENT_MESSAGE_TYPES - {"spawn"}), "hello", "", "x" * 300]


@st.composite
def client_messages(draw: st.DrawFn, session: str) -> str:
    """A message of a real type with fields of any JSON shape; sometimes aimed at a
    real session, sometimes mutated into broken JSON."""
    body: dict[str, Any] = {"type": draw(st.sampled_from(TYPES) | JSON_VALUES)}
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=5, unique=True)):
        body[name] = draw(JSON_VALUES | st.just(session))
    text = json.dumps(body)
    mutation = draw(st.integers(0, 5))
    if mutation == 1 and text:
        cut = draw(st.integers(0, len(text)))
        text = text[:cut]
    elif mutation == 2:
        text = text.replace('"', "", draw(st.integers(1, 3)))
    elif mutation == 3:
        text = draw(st.integers(1, 300)) * "[" + text
    return text


async def test_fuzzed_messages_get_typed_errors(server: RunningServer, bystander: str) -> None:
    """Each case: the connection lives, every reply is a well-formed message, and the
    bystander still echoes at the end. (hypothesis drives a sync test; the server runs
    in this event loop, so cases are collected first and sent here.)"""
    cases: list[str] = []
    async with Client.connect(server.url, TOKEN) as watcher:
        # The fuzzer aims at its own target (it may kill or close it), not the bystander.
        target = (await watcher.spawn(["cat"])).id

        @settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
        @given(client_messages(target))
        def collect(message: str) -> None:
            cases.append(message)

        collect()
        await watcher.attach(bystander)
        ws = await open_raw(server)
        async with ws:
            for message in cases:
                try:
                    await reply_to(ws, message)
                except ConnectionClosed as closed:
                    pytest.fail(f"{message!r} closed the connection: {closed}")
    await assert_echoes(server, bystander)


@pytest.mark.parametrize(
    ("argv", "env", "cwd"),
    [
        (["true", "-x"], {"K": "v"}, None),
    ],
)
async def test_fuzzed_spawns_start_or_fail_cleanly(
    server: RunningServer, bystander: str, argv: list[str], env: dict[str, str], cwd: str | None
) -> None:
    """Spawn requests with random argv tails, env and cwd (the program is always the
    harmless ``true``): each is spawned, or refused with bad_message/spawn_failed."""
    cases: list[dict[str, Any]] = [{"type": "spawn", "argv": argv, "env": env, "cwd": cwd}]
    text = st.text(max_size=12)

    @settings(max_examples=120, suppress_health_check=list(HealthCheck), deadline=None)
    @given(
        st.lists(text, max_size=4),
        st.dictionaries(text, text, max_size=3),
        st.none() | text | st.sampled_from(["/", "/tmp", "/nonexistent", "~", "."]),
    )
    def collect(args: list[str], extra: dict[str, str], directory: str | None) -> None:
        cases.append({"type": "spawn", "argv": ["true", *args], "env": extra, "cwd": directory})

    collect()
    ws = await open_raw(server)
    async with ws:
        for case in cases:
            reply = await reply_to(ws, json.dumps(case))
            if isinstance(reply, Error):
                assert reply.code in ("bad_message", "spawn_failed"), (case, reply)
    await assert_echoes(server, bystander)


async def test_send_keys_is_parsed_in_one_pass_and_bounded(
    server: RunningServer, bystander: str
) -> None:
    """A thousand ``M-`` prefixes once closed the connection (RecursionError), and a
    0.9 MB key held the event loop for a second and took a gigabyte. Now: one pass,
    a bound per key and per message (bad_message past them), nobody else slowed."""
    async with Client.connect(server.url, TOKEN) as client:
        target = await client.spawn(["sh", "-c", "stty raw -echo; od -An -c"])
        ws = await open_raw(server)
        async with ws:
            deep = {"type": "send_keys", "session": target.id, "keys": ["M-" * 999 + "x"]}
            assert isinstance(await reply_to(ws, json.dumps(deep)), Sessions)
            too_long = {
                "type": "send_keys",
                "session": target.id,
                "keys": ["k" * (MAX_KEY_CHARS + 1)],
            }
            too_many = {
                "type": "send_keys",
                "session": target.id,
                "keys": ["k" * MAX_KEY_CHARS] * (MAX_KEYS_CHARS // MAX_KEY_CHARS + 1),
            }
            for message in (too_long, too_many):
                reply = await reply_to(ws, json.dumps(message))
                assert isinstance(reply, Error) and reply.code == "bad_message", reply
            before = _rss_kib()
            # Twelve pipelined messages of a megabyte of "M-" each, then a probe.
            flood = json.dumps(
                {"type": "send_keys", "session": target.id, "keys": ["M-" * 470_000 + "x"]}
            )
            assert len(flood) < MAX_TEXT_MESSAGE
            for _ in range(12):
                await ws.send(flood)
            errors = 0
            while errors < 12:
                with anyio.fail_after(scaled(30)):
                    parsed = SERVER_MESSAGE.validate_json(await ws.recv())
                if isinstance(parsed, Error):
                    assert parsed.code == "bad_message", parsed
                    errors += 1
            assert (_rss_kib() - before) / 1024 < 200
    await assert_echoes(server, bystander)


# --------------------------------------------------------------------------- not reading


def _rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def test_a_client_that_never_reads_its_replies_is_not_read(
    server: RunningServer, bystander: str
) -> None:
    """A flood of ``list`` requests whose replies are never read: the server stops
    reading the requests instead of queueing replies without end."""
    async with Client.connect(server.url, TOKEN) as client:
        for _ in range(50):  # each reply is then ~30 KiB
            await client.spawn(["sleep", "60"])
    ws = await connect(
        server.url, additional_headers=AUTH, max_queue=1, open_timeout=10, write_limit=1
    )
    before = _rss_kib()
    sent = 0
    with anyio.move_on_after(8):
        while True:
            await ws.send('{"type": "list"}')
            sent += 1
    grown_mib = (_rss_kib() - before) / 1024
    # The kernel's socket buffers take a few hundred thousand such tiny requests; had
    # the server answered them all, their replies would be sent x 30 KiB. Bounded, they
    # stay within the reply buffer and the socket buffers.
    assert sent > 1000
    assert grown_mib < 100, (sent, grown_mib)
    await assert_echoes(server, bystander)
    ws.transport.abort()


FLOOD_FRAMES = """
import os, time
from ptyvisor.wire.frames import encode_frame
tty = os.open(os.environ["PTYVISOR_TTY"], os.O_WRONLY)
for i in range(800):
    interaction = {"id": f"i{i}", "kind": "approval", "agent": "test",
                   "title": "x" * 4000, "rows": [{"label": "r", "value": "y" * 4000}] * 10,
                   "created_at": int(time.time() * 1000)}
    payload = {"type": "interaction", "at": int(time.time() * 1000), "interaction": interaction}
    os.write(tty, encode_frame(os.environ["PTYVISOR_SESSION"], os.environ["PTYVISOR_NONCE"],
                               payload))
open("flooded", "w").close()
"""


async def test_events_pushed_to_a_client_that_never_reads_close_it(
    server: RunningServer, bystander: str, tmp_path: Path
) -> None:
    """Events pile up for an attached client that reads nothing (here 800 pending
    interactions of ~44 KiB): past the overflow bound it is closed with a reason."""
    server.config.reply_buffer = 64 * 1024
    script = tmp_path / "flood.py"
    script.write_text(FLOOD_FRAMES)
    flooded = tmp_path / "flooded"

    async def flood_done() -> bool:
        return flooded.exists()

    async with Client.connect(server.url, TOKEN) as client:
        session = await client.spawn(["sh", "-c", "read x; $x"], cwd=str(tmp_path))
        ws = await connect(server.url, additional_headers=AUTH, max_queue=1, open_timeout=10)
        await ws.send(json.dumps({"type": "attach", "session": session.id}))
        await client.input(session.id, f"{sys.executable} flood.py\n")
        await poll(flood_done, wait=30)
        with anyio.fail_after(scaled(30)):
            with pytest.raises(ConnectionClosed):
                while True:
                    await ws.recv()
        assert ws.close_code == 1008, (ws.close_code, ws.close_reason)
        assert "not reading" in (ws.close_reason or "")
    await assert_echoes(server, bystander)


# --------------------------------------------------------------------------- last resort


async def test_a_bug_in_one_connection_ends_only_that_connection(
    server: RunningServer, bystander: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    original = Dispatcher.__call__

    async def dispatch(self: Dispatcher, request: Any) -> Any:
        if getattr(request, "req_id", None) == "explode":
            raise RuntimeError("injected bug")
        return await original(self, request)

    monkeypatch.setattr(Dispatcher, "__call__", dispatch)
    ws = await open_raw(server)
    await ws.send(json.dumps({"type": "list", "req_id": "explode"}))
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            with anyio.fail_after(scaled(15)):
                await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
    failures = [r for r in caplog.records if "injected bug" in (r.exc_text or str(r.exc_info))]
    assert len(failures) == 1
    # The server and every other connection carry on.
    ws2 = await open_raw(server)
    async with ws2:
        assert isinstance(await reply_to(ws2, json.dumps({"type": "list"})), Sessions)
    await assert_echoes(server, bystander)


async def test_fuzzed_http_api_requests_get_answers(server: RunningServer, bystander: str) -> None:
    """The read-only HTTP API (httpapi.py): any path under it, any query, with and
    without the token, gets a well-formed answer, and the bystander still echoes."""
    cases: list[tuple[str, bool]] = []
    segment = st.text(
        alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="/?#%"),
        max_size=20,
    )

    @settings(max_examples=150, suppress_health_check=list(HealthCheck), deadline=None)
    @given(
        st.sampled_from(["/api/sessions", "/metrics"]),
        st.lists(segment | st.just(bystander) | st.just("screen"), max_size=3),
        st.sampled_from(["", "?format=json", "?format=", "?token=x", "?format=json&format=a"]),
        st.booleans(),
    )
    def collect(base: str, parts: list[str], query: str, authorised: bool) -> None:
        cases.append(("/".join([base, *parts]) + query, authorised))

    collect()
    address = urlsplit(server.url).netloc

    def fetch(path: str, authorised: bool) -> int:
        conn = http.client.HTTPConnection(address, timeout=10)
        try:
            headers = {"Authorization": f"Bearer {TOKEN}"} if authorised else {}
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    for path, authorised in cases:
        status = await anyio.to_thread.run_sync(fetch, path, authorised)
        assert status in (200, 400, 401, 403, 404, 409), (path, status)
        if not authorised:  # nothing without the token (404: a path no one serves)
            assert status in (401, 404), (path, status)
    await assert_echoes(server, bystander)
