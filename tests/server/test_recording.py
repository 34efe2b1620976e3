"""Recording sessions as asciicast v2 (serve --record, spawn record: true) and export:
real programs under real PTYs, real clients, and `asciinema cat` (PyPI) as the player."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from ptyvisor.client.client import Client, Output
from ptyvisor.config import ServerConfig
from ptyvisor.server.recording import PENDING_LIMIT, Recorder
from ptyvisor.server.recording import Screen as RecordedScreen
from ptyvisor.server.serving import run_server
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.wire.protocol import ProcessChanged
from tests.timeouts import scaled

from ..conftest import PTYVISOR_BIN, TOKEN, RunningServer, child_env, poll, until

pytestmark = pytest.mark.anyio

ASCIINEMA = str(Path(PTYVISOR_BIN).parent / "asciinema")

# Output with a UTF-8 character split across two writes, activity changes between
# outputs, and a line typed in: what a recording must keep, in order.
PROGRAM = f"""
    printf 'start\\n'
    {PTYVISOR_BIN} emit activity working --agent script --reason compiling
    printf '\\342\\202'; sleep 0.1; printf '\\254 euro\\n'
    read line
    {PTYVISOR_BIN} emit activity waiting
    printf 'done:%s\\n' "$line"
"""


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    return ServerConfig(
        token=TOKEN, port=0, state_dir=tmp_path / "state", record_dir=tmp_path / "rec"
    )


def read_cast(path: Path) -> tuple[dict[str, Any], list[list[Any]]]:
    header, *events = path.read_text(encoding="utf-8").splitlines()
    return json.loads(header), [json.loads(line) for line in events]


def played(path: Path) -> bytes:
    """What `asciinema cat` writes for the file: every output event, in order."""
    result = subprocess.run(
        [ASCIINEMA, "cat", str(path)], capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


async def run_to_exit(client: Client, session_id: str) -> bytes:
    """Attach from the first byte, resize, type a line, and return the exact output."""
    await client.attach(session_id, since=0)
    await client.resize(session_id, 100, 30)
    await until(client, lambda e: isinstance(e, Output) and b"euro" in e.data)
    await client.send_input(b"typed\r")
    await until(client, exited)
    return await exact_output(client.url, session_id)


def exited(event: object) -> bool:
    return isinstance(event, ProcessChanged) and event.process.state == "exited"


async def exact_output(url: str, session_id: str) -> bytes:
    """Every byte of the session's output, from a fresh client's exact replay."""
    async with Client.connect(url, TOKEN) as other:
        attached = await other.attach(session_id, since=0)
        assert attached.replay == "exact"
        end = (await other.stats(session_id)).output_bytes
        received = b""
        while len(received) < end:
            event = await other.next_event(15)
            if isinstance(event, Output):
                received += event.data
        return received


async def cli(url: str, command: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The real command line, against the server this test runs."""
    with anyio.fail_after(scaled(60)):
        return await anyio.run_process(
            [PTYVISOR_BIN, command, "--url", url, *args],
            env={**os.environ, "PTYVISOR_TOKEN": TOKEN},
            check=False,
        )


async def closed(client: Client, session_id: str) -> None:
    """Close the session and wait until it is gone (its recording is then complete)."""
    await client.close(session_id)

    async def gone() -> bool | None:
        return True if all(s.id != session_id for s in await client.list()) else None

    await poll(gone)


async def test_serve_record_writes_each_session_as_asciicast(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    session = await client.spawn(
        ["sh", "-c", PROGRAM], env=child_env(), name="recorded", cols=80, rows=24
    )
    path = tmp_path / "rec" / f"{session.id}.cast"
    assert session.recording == str(path)
    output = await run_to_exit(client, session.id)
    await closed(client, session.id)

    header, events = read_cast(path)
    assert header["version"] == 2
    assert (header["width"], header["height"]) == (80, 24)
    assert header["title"] == "recorded"
    assert header["env"]["TERM"] == "xterm-256color"
    assert [e[0] for e in events] == sorted(e[0] for e in events)  # time never goes back
    text = "".join(e[2] for e in events if e[1] == "o")
    assert text == output.decode()  # exact, with the euro sign whole
    assert "€ euro" in text and "done:typed" in text and "7733" not in text
    assert ["r", "100x30"] in [e[1:] for e in events]
    kinds = [(e[1], e[2]) for e in events if e[1] == "m" or "euro" in e[2] or "done" in e[2]]
    labels = [label for kind, label in kinds if kind == "m"]
    assert labels[:2] == ["working: compiling", "waiting"], labels
    order = [label if kind == "m" else "output" for kind, label in kinds]
    assert order.index("working: compiling") < order.index("output")  # before the euro
    assert "stopped" in labels[-1]
    # A player reproduces the program's output.
    assert played(path) == output


async def test_recording_is_per_spawn_too_and_export_writes_the_replay_log(
    tmp_path: Path,
) -> None:
    config = ServerConfig(token=TOKEN, port=0, state_dir=tmp_path / "state")
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, config)
        async with Client.connect(config.url, TOKEN) as client:
            plain = await client.spawn(["sh", "-c", "echo plain"])
            recorded = await client.spawn(["sh", "-c", PROGRAM], env=child_env(), record=True)
            assert plain.recording is None
            by_cli = await cli(config.url, "run", "-d", "--record", "--", "echo", "from-cli")
            assert by_cli.returncode == 0, by_cli.stderr
            cli_id = by_cli.stdout.decode().strip()
            listed = {summary.id: summary for summary in await client.list()}
            assert listed[cli_id].recording == str(tmp_path / "state/recordings" / f"{cli_id}.cast")
            assert recorded.recording == str(tmp_path / "state/recordings" / f"{recorded.id}.cast")
            output = await run_to_exit(client, recorded.id)

            cast = tmp_path / "export.cast"
            result = await cli(config.url, "export", recorded.id[:6], "--asciicast", str(cast))
            assert result.returncode == 0, result.stderr
            assert played(cast) == output
            header, events = read_cast(cast)
            assert header["env"]["TERM"] == "xterm-256color"
            assert (header["width"], header["height"]) == (100, 30)
            labels = [e[2] for e in events if e[1] == "m"]
            assert "working: compiling" in labels and "waiting" in labels
            assert events[-1][0] >= 0.1  # the sleep in the program shows in the timing

            nowhere = str(tmp_path / "no/such/dir/x.cast")
            bad = await cli(config.url, "export", recorded.id[:6], "--asciicast", nowhere)
            assert bad.returncode == 1
            assert (
                bad.stderr.startswith(b"ptyvisor export: cannot write")
                and bad.stderr.count(b"\n") == 1
            ), bad.stderr

            await closed(client, recorded.id)
            assert played(Path(recorded.recording)) == output
            assert not list((tmp_path / "state/recordings").glob(f"{plain.id}*"))

        tg.cancel_scope.cancel()


@pytest.fixture
async def small_files(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, Path]]:
    config = ServerConfig(
        token=TOKEN, port=0, state_dir=tmp_path / "state", record_dir=tmp_path / "rec",
        record_limit=16 * 1024,
    )  # fmt: skip
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, config)
        yield RunningServer(config), tmp_path / "rec"
        tg.cancel_scope.cancel()


async def test_recordings_rotate_and_each_file_plays_on_its_own(
    small_files: tuple[RunningServer, Path],
) -> None:
    """Past the limit a file is rotated (4 kept); the newest starts with the screen as
    it was, so played alone it ends on the session's last screen."""
    server, directory = small_files
    bursts = "for i in $(seq 1 30); do seq $((i*400)) $((i*400+399)); sleep 0.05; done; read x"
    async with Client.connect(server.url, TOKEN) as client:
        session = await client.spawn(["sh", "-c", bursts], cols=60, rows=10)
        await client.attach(session.id)
        await until(client, lambda e: isinstance(e, Output) and b"12399" in e.data, wait=60)
        await client.send_keys(session.id, "C-c")
        await until(client, exited, wait=30)
        last_screen = (await client.capture(session.id)).rows
        await closed(client, session.id)

    files = sorted(directory.glob(f"{session.id}*.cast"))
    names = {p.name for p in files}
    assert names == {f"{session.id}.cast"} | {f"{session.id}.{n}.cast" for n in (1, 2, 3)}
    for path in files:
        header, events = read_cast(path)
        assert (header["version"], header["width"], header["height"]) == (2, 60, 10)
        assert path.stat().st_size < 16 * 1024 + 256 * 1024
    newest = directory / f"{session.id}.cast"
    _, events = read_cast(newest)
    assert events[0][0] == 0 and events[0][1] == "o"  # the screen it starts from
    terminal = HeadlessTerminal(60, 10)
    terminal.feed(played(newest))
    assert [row.rstrip() for row in terminal.display] == last_screen


async def test_a_recording_that_cannot_be_written_costs_only_the_recording(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    config = ServerConfig(
        token=TOKEN, port=0, state_dir=tmp_path / "state", record_dir=blocker / "rec"
    )
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, config)
        async with Client.connect(config.url, TOKEN) as client:
            session = await client.spawn(["cat"])
            await client.attach(session.id)
            await client.send_input(b"still-echoes\r")
            await until(client, lambda e: isinstance(e, Output) and b"still-echoes" in e.data)
            await client.send_input(b"and-again\r")
            await until(client, lambda e: isinstance(e, Output) and b"and-again" in e.data)
            await closed(client, session.id)
        tg.cancel_scope.cancel()


async def test_output_queued_when_the_session_closes_is_written(tmp_path: Path) -> None:
    """A close that lands while the writer waits for a worker thread (every thread
    start is a cancellation point) still writes what was queued: it left the queue
    only once written. One CI run under load lost a session's last line this way."""
    path = tmp_path / "s.cast"

    async def no_screen(seq: int) -> RecordedScreen:
        raise AssertionError("a fresh recording never asks for the screen")

    recorder = Recorder(path, title="t", term="xterm", cols=80, rows=24, screen=no_screen)
    limiter = anyio.to_thread.current_default_thread_limiter()
    release = threading.Event()
    writer = anyio.CancelScope()

    async def write() -> None:
        with writer:
            await recorder.run()

    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        recorder.output(0, b"first ")

        async def written(text: str) -> bool:
            return path.exists() and text in path.read_text()

        await poll(lambda: written("first"))
        limiter.total_tokens = 1
        tg.start_soon(functools.partial(anyio.to_thread.run_sync, release.wait))

        async def taken() -> bool:
            return limiter.borrowed_tokens == 1

        await poll(taken)  # the only worker thread is busy elsewhere
        recorder.output(6, b"last")

        async def waiting() -> bool:
            return limiter.statistics().tasks_waiting == 1

        await poll(waiting)  # the writer holds its batch and waits for a thread
        writer.cancel()
        release.set()
    assert await written("last")


async def test_output_past_the_pending_limit_becomes_a_marked_redraw(tmp_path: Path) -> None:
    """A writer that cannot keep up costs the recording a stretch of output, never
    the program: the file then draws the screen afresh, says so with a marker, and
    still plays to the screen the program left."""
    path = tmp_path / "s.cast"
    source = HeadlessTerminal(40, 6)
    fed = 0

    async def screen(seq: int) -> RecordedScreen:
        assert seq <= fed
        return RecordedScreen(source.snapshot(include_scrollback=False).ansi, fed, 40, 6)

    def output(data: bytes) -> None:
        nonlocal fed
        source.feed(data)
        recorder.output(fed, data)
        fed += len(data)

    recorder = Recorder(path, title="t", term="xterm", cols=40, rows=6, screen=screen)
    limiter = anyio.to_thread.current_default_thread_limiter()
    release = threading.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(recorder.run)
        output(b"before the flood\r\n")

        async def written() -> bool:
            return path.exists() and "before" in path.read_text()

        await poll(written)
        limiter.total_tokens = 1
        tg.start_soon(functools.partial(anyio.to_thread.run_sync, release.wait))

        async def taken() -> bool:
            return limiter.borrowed_tokens == 1

        await poll(taken)  # the writer is stuck until released
        line = b"x" * 1023 + b"\n"
        for n in range(PENDING_LIMIT // len(line) + 64):
            output(b"%d " % n + line)
        output(b"\x1b[2Jafter the flood\r\n")
        release.set()

        async def caught_up() -> bool:
            return "after the flood" in path.read_text()

        await poll(caught_up)
        tg.cancel_scope.cancel()
    _header, events = read_cast(path)
    assert [e[2] for e in events if e[1] == "m"] == ["recording gap"]
    assert sum(len(e[2]) for e in events if e[1] == "o") < PENDING_LIMIT + 64 * 1024
    played_back = HeadlessTerminal(40, 6)
    played_back.feed("".join(e[2] for e in events if e[1] == "o").encode())
    assert played_back.display == source.display
