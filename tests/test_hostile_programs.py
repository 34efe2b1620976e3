"""Nothing a program inside a session, or a hook on the control socket, sends can crash
or wedge the server: bad control lines, forged or absurd frames, names that are not
UTF-8, spawns that cannot exec, a bug in one session's code, many sessions closing at
once. Real server, real PTYs, real sockets."""

from __future__ import annotations

import base64
import json
import os
import resource
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptyvisor.client.client import Client
from ptyvisor.errors import ServerError
from ptyvisor.keeper.proctable import ProcessTable
from ptyvisor.server.session import Session
from ptyvisor.wire.frames import encode_frame

from .conftest import RunningServer, assert_echoes, children, control_refuses, output_until, poll

pytestmark = pytest.mark.anyio


class Inside:
    """A session whose terminal and secret the test knows, to write frames into it as
    a hook (or a program that learned the nonce) would."""

    def __init__(self, client: Client, session_id: str, tty: str, nonce: str) -> None:
        self.client = client
        self.session = session_id
        self.tty = tty
        self.nonce = nonce

    @classmethod
    async def start(cls, client: Client) -> Inside:
        script = 'echo "T=$PTYVISOR_TTY N=$PTYVISOR_NONCE."; exec cat >/dev/null'
        session = await client.spawn(["sh", "-c", script])
        await client.attach(session.id, since=0)
        seen = (await output_until(client, b".\r\n")).decode()
        tty = seen.split("T=", 1)[1].split(" ", 1)[0]
        nonce = seen.split("N=", 1)[1].split(".", 1)[0]
        return cls(client, session.id, tty, nonce)

    def write(self, data: bytes) -> None:
        fd = os.open(self.tty, os.O_WRONLY | os.O_NOCTTY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def frame(self, payload: dict[str, Any]) -> bytes:
        return encode_frame(self.session, self.nonce, payload)

    async def frames_taken(self) -> int:
        stats = await self.client.stats(self.session)
        return stats.frames_applied + stats.frames_ignored + sum(stats.frames_rejected.values())

    async def send_frames(self, frames: list[bytes]) -> None:
        """Write frames and wait until the session has accounted for each of them."""
        before = await self.frames_taken()
        for frame in frames:
            # From a thread: a full PTY blocks the write until the server, on this
            # very event loop, reads it.
            await anyio.to_thread.run_sync(self.write, frame)

        async def all_taken() -> bool:
            return await self.frames_taken() >= before + len(frames)

        await poll(all_taken, wait=20)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# --------------------------------------------------------------------------- control socket


async def test_control_socket_survives_nesting_and_bad_nonces(
    server: RunningServer, client: Client, bystander: str
) -> None:
    path = server.config.control_path
    inside = await Inside.start(client)
    lines = [
        b"[" * 1000 + b"]" * 1000 + b"\n",  # RecursionError in the parser, no session needed
        b"[" * 100_000 + b"\n",
        json.dumps({"op": "request", "session": inside.session, "nonce": "\ud800"}).encode()
        + b"\n",
        b'{"op": "take_message", "session": "'
        + inside.session.encode()
        + b'", "nonce": "\\ud800"}\n',
        b'{"op": "request", "session": "\\udcff", "nonce": 1e999}\n',
        b'{"op": "request", "session": 7, "nonce": NaN}\n',
        b"\xff\xfe not utf-8\n",
        b"\n",
    ]
    for line in lines:
        assert await anyio.to_thread.run_sync(control_refuses, path, line), line[:80]
    await assert_echoes(server, bystander)


async def test_fuzzed_control_lines_are_refused(
    server: RunningServer, client: Client, bystander: str
) -> None:
    path = server.config.control_path
    inside = await Inside.start(client)
    cases: list[bytes] = []
    values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=8), children, max_size=3)
        ),
        max_leaves=8,
    )

    @settings(max_examples=150, suppress_health_check=list(HealthCheck), deadline=None)
    @given(
        st.sampled_from(["request", "take_message", "decision", ""]),
        st.sampled_from([inside.session, "s00000000", ""]),
        values,
        values,
        st.binary(max_size=40),
    )
    def collect(op: str, session: str, nonce: object, interaction: object, junk: bytes) -> None:
        body = {"op": op, "session": session, "nonce": nonce, "interaction": interaction}
        cases.append(json.dumps(body).encode() + b"\n")
        cases.append(junk.replace(b"\n", b"") + b"\n")

    collect()
    for line in cases:
        # None of these has the nonce, and the test process is outside the session.
        assert await anyio.to_thread.run_sync(control_refuses, path, line), line[:80]
    await assert_echoes(server, bystander)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_control_socket_memory_is_capped_in_total(
    server: RunningServer, bystander: str
) -> None:
    """300 connections each sending most of a 1 MiB line and waiting: what the server
    buffers for them together stays within its total cap (32 MiB); the rest are closed."""
    path = server.config.control_path
    chunk = b"x" * (900 * 1024)
    before = _rss_mib()

    def flood() -> int:
        sockets = []
        closed = 0
        try:
            for _ in range(300):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(15)
                sock.connect(path)
                sockets.append(sock)
                try:
                    sock.sendall(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    closed += 1
            time.sleep(0.5)
            for sock in sockets:
                sock.setblocking(False)
                try:
                    if sock.recv(1) == b"":
                        closed += 1
                except BlockingIOError:
                    pass
                except (ConnectionResetError, BrokenPipeError):
                    closed += 1
            return closed
        finally:
            for sock in sockets:
                sock.close()

    closed = await anyio.to_thread.run_sync(flood)
    assert closed >= 250, closed  # 32 MiB holds ~36 such lines
    assert _rss_mib() - before < 120, _rss_mib() - before
    await assert_echoes(server, bystander)


# --------------------------------------------------------------------------- frames


async def test_a_frame_from_the_far_future_is_rejected_and_stale_ones_are_ignored(
    server: RunningServer, client: Client
) -> None:
    inside = await Inside.start(client)
    await inside.send_frames([inside.frame({"type": "activity", "phase": "working", "at": 10**30})])
    stats = await client.stats(inside.session)
    assert stats.frames_rejected == {"future": 1}
    assert stats.frames_applied == 0

    # A frame a moment ahead counts as stamped now: it cannot hold activity still.
    await inside.send_frames(
        [inside.frame({"type": "activity", "phase": "working", "at": now_ms() + 60_000})]
    )
    await inside.send_frames(
        [inside.frame({"type": "activity", "phase": "waiting", "at": now_ms()})]
    )
    summary = next(s for s in await client.list() if s.id == inside.session)
    assert summary.activity.phase.value == "waiting"

    # Replaying an older frame changes nothing and is not counted as applied.
    applied = (await client.stats(inside.session)).frames_applied
    await inside.send_frames([inside.frame({"type": "activity", "phase": "failed", "at": 5})])
    stats = await client.stats(inside.session)
    assert (stats.frames_applied, stats.frames_ignored) == (applied, 1)
    summary = next(s for s in await client.list() if s.id == inside.session)
    assert summary.activity.phase.value == "waiting"


async def test_fuzzed_authentic_frames_never_break_a_session(
    server: RunningServer, client: Client, bystander: str
) -> None:
    """Authentic frames (right session and nonce) with random payloads: each is applied,
    ignored or rejected; the session list, snapshots and the bystander keep working."""
    inside = await Inside.start(client)
    texts = st.text(max_size=30) | st.text(
        alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2
    )
    leaves = st.none() | st.booleans() | st.integers(-(2**64), 2**64) | texts
    values = st.recursive(
        leaves,
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3)
        ),
        max_leaves=10,
    )
    interaction = st.fixed_dictionaries(
        {"id": texts, "kind": st.sampled_from(["approval", "question", "x"]), "agent": texts},
        optional={"created_at": leaves, "title": values, "rows": values, "questions": values},
    )
    payloads = st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["activity", "interaction", "interaction_cleared", "subagent_stopped", "x"]
            )
        },
        optional={
            "at": st.integers(0, 2**40) | leaves,
            "phase": st.sampled_from(["working", "waiting", "needs_input", "failed"]) | texts,
            "interaction": interaction | values,
            "reason": values,
            "agent": values,
            "id": values,
            "agent_id": values,
        },
    )
    frames: list[bytes] = []

    @settings(max_examples=250, suppress_health_check=list(HealthCheck), deadline=None)
    @given(payloads)
    def collect(payload: dict[str, Any]) -> None:
        try:
            frames.append(inside.frame(payload))
        except ValueError:  # not encodable (a lone surrogate): raw, as a hostile hook might
            raw = json.dumps(payload).encode()
            body = base64.urlsafe_b64encode(raw).rstrip(b"=")
            frames.append(
                b"\x1b]7733;ptyvisor;1;%s;%s;%s\x07"
                % (inside.session.encode(), inside.nonce.encode(), body)
            )

    collect()
    for start in range(0, len(frames), 25):
        await inside.send_frames(frames[start : start + 25])
        assert any(s.id == inside.session for s in await client.list())
    await client.snapshot(inside.session)
    await assert_echoes(server, bystander)


# --------------------------------------------------------------------------- names and spawns


async def test_names_that_are_not_utf8_are_kept_exactly(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    directory = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\x80"))
    os.mkdir(directory)
    argument = os.fsdecode(b"arg-\xff")
    show = "import os, sys; print(repr(os.getcwdb()), repr(os.fsencode(sys.argv[1])))"
    session = await client.spawn([sys.executable, "-c", show, argument], cwd=directory)
    assert session.cwd.endswith("caf\ufffd")
    assert session.argv[-1] == "arg-\ufffd"
    assert session.raw is not None and session.raw.cwd is not None
    assert base64.b64decode(session.raw.cwd).endswith(b"caf\x80")
    assert session.raw.argv is not None and session.raw.argv[-1] is not None
    assert base64.b64decode(session.raw.argv[-1]) == b"arg-\xff"
    assert session.raw.argv[0] is None  # exact names need no bytes
    await client.attach(session.id, since=0)
    output = await output_until(client, b"arg-")
    assert b"caf\\x80'" in output and b"b'arg-\\xff'" in output
    # And the list, which one such session used to break for every client.
    listed = {s.id: s for s in await client.list()}
    assert listed[session.id].cwd == session.cwd


async def test_a_program_that_cannot_exec_is_a_spawn_error_and_leaves_nothing(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    junk = tmp_path / "not-a-program"
    junk.write_bytes(b"\x7fELF garbage")
    junk.chmod(0o755)
    children_before = children(os.getpid())
    with pytest.raises(ServerError) as refused:
        await client.spawn([str(junk)])
    assert refused.value.code == "spawn_failed"
    assert "Exec format error" in refused.value.message
    with pytest.raises(ServerError) as refused:
        await client.spawn(["true"], cwd=str(junk))
    assert refused.value.code == "spawn_failed"
    assert children(os.getpid()) == children_before  # the failed child was reaped


# --------------------------------------------------------------------------- last resort


async def test_a_bug_in_one_session_ends_only_that_session(
    server: RunningServer,
    client: Client,
    bystander: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: Any,
) -> None:
    original = Session._ingest

    def ingest(self: Session, data: bytes) -> None:
        if self.name == "doomed" and b"boom" in data:
            raise RuntimeError("injected session bug")
        original(self, data)

    monkeypatch.setattr(Session, "_ingest", ingest)
    doomed = await client.spawn(["sh", "-c", "read x; echo boom; sleep 60"], name="doomed")
    await client.input(doomed.id, "go\n")

    async def gone() -> bool:
        return all(s.id != doomed.id for s in await client.list())

    await poll(gone, wait=15)
    failures = [r for r in caplog.records if r.name == "ptyvisor.server.supervisor" and r.exc_info]
    assert len(failures) == 1, failures
    assert "injected session bug" in caplog.text
    assert doomed.process.pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(doomed.process.pid, 0)  # its program was stopped and reaped
    await assert_echoes(server, bystander)


# --------------------------------------------------------------------------- many closing


async def test_concurrent_scans_are_shared() -> None:
    table = ProcessTable()
    results: list[list[int] | None] = []

    async def ask() -> None:
        results.append(await table.members(os.getsid(0)))

    async with anyio.create_task_group() as tg:
        for _ in range(100):
            tg.start_soon(ask)
    assert table.scans <= 2, table.scans
    assert all(result is not None and os.getpid() in result for result in results)


async def test_closing_many_sessions_at_once(
    server: RunningServer, client: Client, bystander: str
) -> None:
    sessions = [await client.spawn(["sh", "-c", "trap '' HUP; sleep 60"]) for _ in range(40)]
    async with anyio.create_task_group() as tg:
        for session in sessions:
            tg.start_soon(client.close, session.id)
        # Meanwhile another session still echoes.
        await assert_echoes(server, bystander)
    listed = {s.id for s in await client.list()}
    assert listed == {bystander}
    for session in sessions:
        assert session.process.pid is not None
        with pytest.raises(ProcessLookupError):
            os.kill(session.process.pid, 0)
