"""Shared fixtures: a real server on a loopback port, real clients, real PTYs."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import re
import secrets
import select
import socket
import subprocess
import sys
import threading
import time
import tty
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, TypeVar

import anyio
import pytest
from hypothesis import HealthCheck, settings

from ptyvisor.client.client import Client, Event, Output
from ptyvisor.config import ServerConfig
from ptyvisor.server.serving import run_server
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.wire.protocol import Snapshot
from tests.timeouts import FACTOR, scaled

# Hypothesis times each example (200 ms by default) and fails a slow one: on a busy
# 2-core CI machine that is a failure of the machine, not of the code. Tests wait
# for conditions, never for a time (docs/development.md), and so do these.
settings.register_profile("ptyvisor", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ptyvisor")

TOKEN = "test-token-" + "x" * 20
PTYVISOR_BIN = str(Path(sys.executable).parent / "ptyvisor")
"""The installed console script, the way an agent hook would call it."""

T = TypeVar("T")


PAGE_LINE = re.compile(r"^page: (https?://\S+)$", re.MULTILINE)


def start_serve(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    stdout: Path,
    stderr: Path | None = None,
    wrapper: Sequence[str] = (),
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``ptyvisor serve ARGS`` writing to files (``stderr`` None: into ``stdout``)
    and wait for its ``page:`` line, printed last once it listens: (process, page URL).
    A server that exits or never gets there is killed and the test fails with its output.
    ``wrapper`` runs it under another command (``prlimit --nofile=…``).
    """
    with stdout.open("wb") as out, contextlib.ExitStack() as files:
        err = subprocess.STDOUT if stderr is None else files.enter_context(stderr.open("wb"))
        proc = subprocess.Popen(
            [*wrapper, PTYVISOR_BIN, "serve", *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=dict(env),
        )

    def page_line() -> str | None:
        if proc.poll() is not None:
            output = stdout.read_text() + ("" if stderr is None else stderr.read_text())
            raise AssertionError(f"serve exited with {proc.returncode}: {output[-2000:]}")
        match = PAGE_LINE.search(stdout.read_text())
        return match.group(1) if match else None

    try:
        return proc, wait_for(page_line, "serve's page: line")
    except BaseException:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()
        raise


def serve_refused(args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``ptyvisor serve ARGS`` that is expected to refuse to start: its result."""
    return subprocess.run(
        [PTYVISOR_BIN, "serve", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def succeeds(call: Callable[[], object]) -> bool:
    """Whether ``call()`` returns without raising: for `wait_for` on something that
    fails until it works (a server coming back)."""
    try:
        call()
    except Exception:
        return False
    return True


def wait_for(check: Callable[[], T | None], what: str, *, timeout: float = 15) -> T:
    """Poll a cheap synchronous check (files, processes, CLI output) until it gives
    something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def no_background_serve_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A client command starts a serve in the background when none answers (autostart,
    ``serve --detach``); one a test started and did not stop would outlive the suite.
    Any still running on a state directory of this run fails the run, and is killed."""
    yield
    base = str(tmp_path_factory.getbasetemp()).encode()
    left = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes()
            if b"--announce-fd" in cmdline and base in cmdline + (entry / "environ").read_bytes():
                left.append(int(entry.name))
                os.kill(int(entry.name), 9)
    assert not left, f"background serves left running by the tests: {left}"


@dataclass
class RunningServer:
    config: ServerConfig

    @property
    def url(self) -> str:
        return self.config.url

    def connect(self, token: str | None = TOKEN) -> Client:
        return Client(self.url, token)


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    return ServerConfig(token=TOKEN, port=0, state_dir=tmp_path / "state")


@pytest.fixture
async def server(server_config: ServerConfig) -> AsyncIterator[RunningServer]:
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, server_config)
        yield RunningServer(server_config)
        tg.cancel_scope.cancel()


@pytest.fixture
async def client(server: RunningServer) -> AsyncIterator[Client]:
    async with Client.connect(server.url, TOKEN) as connected:
        yield connected


def child_env() -> dict[str, str]:
    """Environment additions so a child finds the ``ptyvisor`` under test first."""
    return {"PATH": f"{Path(PTYVISOR_BIN).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def env_without_ptyvisor(**extra: str) -> dict[str, str]:
    """This environment minus every ``PTYVISOR_`` variable, plus ``extra``: what an
    extension (emit, the JavaScript ones) finds outside a session, or in one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    env.update(extra)
    return env


def extension_session_env(session: str, nonce: str, tty_path: str) -> dict[str, str]:
    """The variables a program started in session ``session`` has for its extensions."""
    return env_without_ptyvisor(
        PTYVISOR_SESSION=session, PTYVISOR_NONCE=nonce, PTYVISOR_TTY=tty_path
    )


async def until(
    client: Client, predicate: Callable[[Event], bool], *, wait: float = 15
) -> list[Event]:
    """Collect events until one satisfies ``predicate``; fails the test on timeout."""
    seen: list[Event] = []
    with anyio.fail_after(scaled(wait)):
        async for event in client.events():
            seen.append(event)
            if predicate(event):
                return seen
    raise AssertionError("event stream ended")


def output_of(events: list[Event]) -> bytes:
    return b"".join(e.data for e in events if isinstance(e, Output))


async def poll(check: Callable[[], Awaitable[T | None]], *, wait: float = 10) -> T:
    """Retry an async check until it returns something truthy."""
    with anyio.fail_after(scaled(wait)):
        while True:
            result = await check()
            if result:
                return result
            await anyio.sleep(0.02)


def redraw(snapshot: Snapshot) -> HeadlessTerminal:
    """What a fresh client terminal shows after writing the snapshot."""
    fresh = HeadlessTerminal(snapshot.size.cols, snapshot.size.rows)
    fresh.feed(snapshot.screen.ansi.encode())
    return fresh


async def screen_showing(client: Client, session_id: str, text: str) -> Snapshot:
    async def check() -> Snapshot | None:
        snapshot = await client.snapshot(session_id)
        return snapshot if text in "\n".join(redraw(snapshot).display) else None

    return await poll(check, wait=15)


async def output_until(
    client: Client, needle: bytes | re.Pattern[bytes], *, wait: float = 15
) -> bytes:
    """Accumulate the attached session's output until ``needle`` appears in it."""
    pattern = needle if isinstance(needle, re.Pattern) else re.compile(re.escape(needle))
    received = b""
    with anyio.fail_after(scaled(wait)):
        while not pattern.search(received):
            event = await client.next_event(wait)
            if isinstance(event, Output):
                received += event.data
    return received


class Pty:
    """A PTY pair in raw mode whose master is drained by a thread, as ptyvisor drains it:
    a 64 KiB frame is more than a PTY buffers, so its writer waits for a reader."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self._data = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while not self._stop.is_set():
            if select.select([self.master], [], [], 0.05)[0]:
                try:
                    chunk = os.read(self.master, 1 << 20)
                except OSError:
                    return
                with self._lock:
                    self._data += chunk

    def read_available(self, quiet: float = 0.2) -> bytes:
        """Everything written to the slave so far (taken), once ``quiet`` s pass with
        nothing new."""
        seen = -1
        while True:
            with self._lock:
                size = len(self._data)
            if size == seen:
                break
            seen = size
            time.sleep(quiet)
        with self._lock:
            data = bytes(self._data)
            self._data.clear()
        return data

    def close(self) -> None:
        self._stop.set()
        self._reader.join()
        os.close(self.slave)
        os.close(self.master)


@pytest.fixture
def pty_pair() -> Iterator[Pty]:
    pair = Pty()
    try:
        yield pair
    finally:
        pair.close()


def children(pid: int) -> set[int]:
    """``pid``'s child processes, as each of its threads lists them (a thread that
    ends meanwhile is skipped: its children pass to another thread)."""
    found: set[int] = set()
    with contextlib.suppress(FileNotFoundError):
        tasks = os.listdir(f"/proc/{pid}/task")
        for task in tasks:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                found.update(int(child) for child in text.split())
    return found


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone, or going while read (ESRCH)
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def control_refuses(path: str, line: bytes) -> bool:
    """Send one line to the control socket at ``path``; True when the server closes
    the connection without a word (a refusal)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(15)
        sock.connect(path)
        try:
            sock.sendall(line)
            return sock.recv(100) == b""
        except (BrokenPipeError, ConnectionResetError):
            return True


@pytest.fixture
async def bystander(server: RunningServer) -> AsyncIterator[str]:
    """A ``cat`` session that must keep echoing whatever else happens."""
    async with Client.connect(server.url, TOKEN) as client:
        yield (await client.spawn(["cat"])).id


async def assert_echoes(server: RunningServer, session_id: str) -> None:
    """A fresh client attached to the ``cat`` session sees its typed line come back."""
    marker = f"echo-{secrets.token_hex(4)}"
    async with Client.connect(server.url, TOKEN) as client:
        await client.attach(session_id)
        await client.send_input(marker + "\n")
        await output_until(client, marker.encode(), wait=15)


ECHO_READS = r"""
import os, sys, tty
tty.setraw(0)
sys.stdout.write("READY\r\n")
sys.stdout.flush()
seen = b""
while True:
    data = os.read(0, 256)
    seen = (seen + data)[-5:]
    if seen == b"modes":
        sys.stdout.write("\x1b[?1h\x1b[?2004hmodes-on\r\n")
    else:
        sys.stdout.write("got " + repr(data) + "\r\n")
    sys.stdout.flush()
"""
"""A program in raw mode that prints what each read brought (``got b'...'``), after
READY; ``modes`` (sent at once or typed) turns on application cursor keys and
bracketed paste."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-timeout's limits grow with the tests' one timeout factor
    (`tests.timeouts`): each test's own ``timeout`` mark, or the configured default."""
    if FACTOR == 1:
        return
    default = float(config.getini("timeout") or 0)
    for item in items:
        mark = item.get_closest_marker("timeout")
        if mark is None:
            if default:
                item.add_marker(pytest.mark.timeout(scaled(default)), append=False)
            continue
        seconds = mark.args[0] if mark.args else mark.kwargs.get("timeout", default)
        options = {key: value for key, value in mark.kwargs.items() if key != "timeout"}
        scaled_mark = pytest.mark.timeout(scaled(float(seconds)), *mark.args[1:], **options)
        item.add_marker(scaled_mark, append=False)


_STDERR: list[TextIO] = []
"""A copy of the run's real stderr, for the watchdog below: a test's own is captured,
and what is captured is lost when the watchdog ends the process."""


def pytest_configure(config: pytest.Config) -> None:
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture()
    _STDERR.append(os.fdopen(os.dup(2), "w"))
    if capture is not None:
        capture.resume_global_capture()


def pytest_unconfigure(config: pytest.Config) -> None:
    while _STDERR:
        _STDERR.pop().close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """The last resort behind pytest-timeout: a test still running at twice its limit
    (plus a minute) ends the run with every thread's stack. pytest-timeout's signal
    ends a test by raising in it, and Hypothesis takes that for a failing example and
    runs it again, with no alarm left: a hang inside a `given` test (one was found in
    test_outbox) would otherwise hold CI until its own limit, saying nothing."""
    mark = item.get_closest_marker("timeout")
    configured = item.config.getoption("timeout", None) or item.config.getini("timeout") or 0
    seconds = float(mark.args[0] if mark and mark.args else configured)
    if mark is not None and not mark.args:
        seconds = float(mark.kwargs.get("timeout", seconds))
    if seconds > 0 and _STDERR:
        faulthandler.dump_traceback_later(2 * seconds + 60, exit=True, file=_STDERR[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
