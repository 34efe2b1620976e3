"""The WebSocket server over real connections: auth, Origin, bad messages, spawn
failures, the session-list stream, resize, signals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from ptyvisor.client.client import Client
from ptyvisor.errors import ServerError
from ptyvisor.wire.protocol import SERVER_MESSAGE, ActivityChanged, Error, Hello, Sessions

from ..conftest import PTYVISOR_BIN, TOKEN, RunningServer, output_until, poll, until

pytestmark = pytest.mark.anyio


async def status_of(url: str, **headers: str) -> int:
    try:
        async with connect(url, additional_headers=headers, open_timeout=5):
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


async def test_token_required(server: RunningServer) -> None:
    assert await status_of(server.url) == 401
    assert await status_of(server.url, Authorization="Bearer wrong") == 401
    assert await status_of(server.url, Authorization=f"Bearer {TOKEN}") == 101
    assert await status_of(f"{server.url}?token=wrong") == 401
    assert await status_of(f"{server.url}?token={TOKEN}") == 101


async def test_browser_origin_checked(server: RunningServer) -> None:
    url = f"{server.url}?token={TOKEN}"
    host = server.url.split("//")[1].rstrip("/")
    assert await status_of(url, Origin=f"http://{host}") == 101
    assert await status_of(url, Origin="http://evil.example") == 403
    assert await status_of(url, Origin="null") == 403
    server.config.allowed_origins.append("http://app.example:3000")
    assert await status_of(url, Origin="http://app.example:3000") == 101
    assert await status_of(url, Origin="http://evil.example") == 403


async def test_bad_messages_get_typed_errors(server: RunningServer) -> None:
    async with connect(server.url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
        assert isinstance(SERVER_MESSAGE.validate_json(await ws.recv()), Hello)

        async def reply_to(message: str | bytes) -> Error | Sessions:
            await ws.send(message)
            parsed = SERVER_MESSAGE.validate_json(await ws.recv())
            assert isinstance(parsed, Error | Sessions)
            return parsed

        cases: list[tuple[str | bytes, str]] = [
            ("{not json", "bad_json"),
            (json.dumps({"type": "launch_missiles", "req_id": 7}), "unknown_type"),
            (json.dumps(["list"]), "bad_message"),  # not an object
            (json.dumps({"type": "spawn", "argv": [], "req_id": 8}), "bad_message"),
            (json.dumps({"type": "resize", "session": "s1", "cols": 0, "rows": 5}), "bad_message"),
            (json.dumps({"type": "list", "extra": 1}), "bad_message"),
            (json.dumps({"type": "attach", "session": "nope"}), "unknown_session"),
            (json.dumps({"type": "kill", "session": "bad id!"}), "bad_message"),
            (b"input before attach", "not_attached"),
            ("x" * (2 * 1024 * 1024), "too_large"),
            (json.dumps({"type": "spawn", "argv": ["/no/such/program"]}), "spawn_failed"),
            (json.dumps({"type": "spawn", "argv": ["sh"], "cwd": "/no/such/dir"}), "spawn_failed"),
        ]
        for message, code in cases:
            reply = await reply_to(message)
            assert isinstance(reply, Error), message[:80]
            assert reply.code == code, (message[:80], reply)
        req = await reply_to(json.dumps({"type": "launch_missiles", "req_id": 7}))
        assert req.req_id == 7
        # The connection still works, and no half-made session was left behind.
        listed = await reply_to(json.dumps({"type": "list"}))
        assert isinstance(listed, Sessions)
        assert listed.sessions == []


async def test_spawn_failure_reasons(client: Client) -> None:
    with pytest.raises(ServerError, match="command not found: no-such-cmd-xyz"):
        await client.spawn(["no-such-cmd-xyz"])
    with pytest.raises(ServerError, match="working directory does not exist"):
        await client.spawn(["sh"], cwd="/definitely/not/here")
    assert await client.list() == []


async def test_session_list_stream(server: RunningServer, client: Client) -> None:
    await client.watch_sessions()
    first = await until(client, lambda e: isinstance(e, Sessions))
    assert isinstance(first[-1], Sessions) and first[-1].sessions == []
    session = await client.spawn(["sh", "-c", "read x"], name="waiter")
    pushed = await until(
        client, lambda e: isinstance(e, Sessions) and any(s.id == session.id for s in e.sessions)
    )
    summary = next(s for s in pushed[-1].sessions if s.id == session.id)  # type: ignore[union-attr]
    assert summary.name == "waiter"
    assert summary.argv == ["sh", "-c", "read x"]
    assert summary.process.state == "running"
    assert summary.activity.phase == "unavailable"
    await client.close(session.id)
    await until(client, lambda e: isinstance(e, Sessions) and not e.sessions)


async def test_resize_reaches_program_and_snapshot(client: Client) -> None:
    session = await client.spawn(["sh", "-c", "while read x; do stty size; done"], cols=80, rows=24)
    await client.attach(session.id, since=0)
    await client.resize(session.id, 132, 43)
    await client.send_input(b"\r")
    assert b"43 132" in await output_until(client, b"43 132")
    snapshot = await client.snapshot(session.id)
    assert (snapshot.size.cols, snapshot.size.rows) == (132, 43)
    await client.close(session.id)


async def test_signal_and_input_message(client: Client) -> None:
    session = await client.spawn(
        ["sh", "-c", "trap 'echo got-usr1' USR1; echo trap-set; while :; do sleep 0.05; done"]
    )
    await client.attach(session.id, since=0)
    await output_until(client, b"trap-set")  # the trap is installed before the signal
    await client.signal(session.id, "USR1")
    await output_until(client, b"got-usr1")
    await client.kill(session.id)
    summary = await poll(lambda: _exited_summary(client, session.id))
    assert summary.process.signal is not None or summary.process.exit_code != 0
    with pytest.raises(ServerError, match="exited"):
        await client.signal(session.id, "TERM")
    with pytest.raises(ServerError, match="unknown_session"):
        await client.input("s00000000", "hi")


async def _exited_summary(client: Client, session_id: str):  # type: ignore[no-untyped-def]
    for s in await client.list():
        if s.id == session_id and s.process.state == "exited":
            return s
    return None


@pytest.mark.parametrize("prompt", [True, False], ids=["prompt drawn", "never drawn"])
async def test_an_early_ready_report_waits_for_the_prompt(
    client: Client, tmp_path: Path, prompt: bool
) -> None:
    """Qwen Code reports Ready (SessionStart) before it draws its prompt and reads keys:
    the report is applied once its input box shows (while it still draws: not the quiet
    rule), or, if that never shows, once the output has gone quiet."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stop, done = tmp_path / "drawn", tmp_path / "done"
    box = "echo '> Type your message or @path/to/file'" if prompt else "true"
    fake = bin_dir / "qwen"  # a stand-in: reports Ready, draws, then (maybe) its box
    fake.write_text(
        "#!/bin/sh\n"
        f"{PTYVISOR_BIN} emit activity waiting --agent qwen-code\n"
        f"while [ ! -e {stop} ]; do echo drawing; sleep 0.05; done\n"
        f"while [ ! -e {done} ]; do {box}; sleep 0.05; done\n"
        "exec cat\n"
    )
    fake.chmod(0o755)
    summary = await client.spawn([], agent="qwen-code", env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    await client.attach(summary.id)

    async def report_taken() -> bool:
        return (await client.stats(summary.id)).frames_applied == 1

    await poll(report_taken)
    await output_until(client, re.compile(rb"(?:drawing\r\n){25}"))  # > 1 s of drawing
    listed = {s.id: s for s in await client.list()}
    assert listed[summary.id].activity.phase.value == "starting"
    stop.touch()
    if not prompt:
        done.touch()  # and it goes quiet
    events = await until(
        client, lambda e: isinstance(e, ActivityChanged) and e.activity.phase.value == "waiting"
    )
    ready = events[-1]
    assert isinstance(ready, ActivityChanged)
    assert (ready.activity.source, ready.activity.agent) == ("extension", "qwen-code")
    assert not done.exists() or not prompt, "Ready came only when the output went quiet"
    done.touch()
    await client.close(summary.id)


async def test_agent_sessions_show_the_command_asked_for(client: Client, tmp_path: Path) -> None:
    # A stand-in `claude` on the child's PATH: the launch is real, the agent is not.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text("#!/bin/sh\nexec cat\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    summary = await client.spawn(["--model", "x"], agent="claude-code", env=env)
    assert summary.argv[:2] == ["claude", "--settings"]  # the extension, this session only
    assert summary.command == ["claude", "--model", "x"]
    plain = await client.spawn(["sh", "-c", "exec cat"])
    assert plain.command == plain.argv == ["sh", "-c", "exec cat"]
    for session in (summary, plain):
        await client.close(session.id)


async def test_capture_past_the_scrollback_held_is_all_of_it(client: Client) -> None:
    """Through a real server: 277 lines held, 278 or 287 asked, 277 given."""
    session = await client.spawn(["sh", "-c", "seq 1 300; read x"], cols=40, rows=24)
    await client.attach(session.id, since=0)
    await output_until(client, b"300\r\n")
    held = await client.capture(session.id, scrollback=-1)
    assert held.scrollback[-1] == str(300 - 23) and len(held.scrollback) == 277
    for asked in (276, 277, 278, 287, 10**6):
        captured = await client.capture(session.id, scrollback=asked)
        assert captured.scrollback == held.scrollback[-asked:], asked
