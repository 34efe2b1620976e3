"""A program as a session sees it (child.py): real programs on real PTYs, started by
the keeper's `spawn.start` and reaped here as an owner would, reporting to `Exit`."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import termios
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
import pytest

from ptyvisor.keeper.proctable import ProcessTable
from ptyvisor.keeper.spawn import start
from ptyvisor.server.child import SIGNALS, Child, Exit
from tests.timeouts import scaled

from ..conftest import alive, poll

pytestmark = pytest.mark.anyio


async def reap(child: Child) -> None:
    """The owner's part: wait for the program and report its status."""
    while True:
        pid, status = os.waitpid(child.pid, os.WNOHANG)  # noqa: ASYNC222 - WNOHANG
        if pid:
            child.exit.reaped(status)
            return
        await anyio.sleep(0.01)


@asynccontextmanager
async def spawned(argv: Sequence[str], tmp_path: Path) -> AsyncIterator[Child]:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    started = start(argv, cwd=str(tmp_path), env=env, cols=80, rows=24)
    child = Child(started.pid, started.fd, started.tty)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reap, child)
            yield child
            if not child.reaped:
                os.kill(child.pid, signal.SIGKILL)
    finally:
        child.close_fd()


async def output_with(child: Child, text: bytes) -> bytes:
    """What the program wrote, read until ``text`` shows."""
    seen = b""

    async def check() -> bool:
        nonlocal seen
        with suppress(BlockingIOError):
            seen += os.read(child.fd, 65536)
        return text in seen

    await poll(check)
    return seen


def status_of(argv: Sequence[str]) -> int:
    pid = os.posix_spawnp(argv[0], list(argv), {})
    return os.waitpid(pid, 0)[1]


async def test_exit_records_a_code_or_a_signal_once() -> None:
    coded = Exit()
    coded.reaped(status_of(["sh", "-c", "exit 3"]))
    assert coded.known and (coded.exit_code, coded.signal) == (3, None)
    coded.reaped(status_of(["sh", "-c", "exit 5"]))  # a second report changes nothing
    assert coded.exit_code == 3

    killed = Exit()
    killed.reaped(status_of(["sh", "-c", "kill -TERM $$"]))
    assert (killed.exit_code, killed.signal) == (None, signal.SIGTERM)
    with anyio.fail_after(scaled(1)):
        await killed.event.wait()


async def test_a_program_that_ignores_hup_is_killed_after_the_grace(tmp_path: Path) -> None:
    script = "trap '' HUP; echo armed; while :; do sleep 0.05; done"
    async with spawned(["sh", "-c", script], tmp_path) as child:
        await output_with(child, b"armed")
        with anyio.fail_after(scaled(15)):
            await child.terminate(ProcessTable(), grace=0.2)
        assert child.reaped and child.signal == signal.SIGKILL


async def test_terminate_hups_first_and_stops_jobs_in_other_process_groups(
    tmp_path: Path,
) -> None:
    """A job-control shell's background job has a process group of its own, in the
    program's session: terminating reaches it too, and HUP is enough for both."""
    script = "set -m; sleep 600 & echo job=$!; wait"
    async with spawned(["sh", "-c", script], tmp_path) as child:
        output = await output_with(child, b"\r\n")
        job = int(output.split(b"job=")[1].split()[0])
        assert os.getpgid(job) != child.pid and os.getsid(job) == child.pid
        with anyio.fail_after(scaled(15)):
            await child.terminate(ProcessTable(), grace=10)
        assert child.reaped and child.signal == signal.SIGHUP
        await poll(lambda: _async(not alive(job)))


async def test_a_stopped_program_still_gets_its_hup(tmp_path: Path) -> None:
    async with spawned(["sleep", "600"], tmp_path) as child:
        child.send_signal(signal.SIGSTOP)
        with anyio.fail_after(scaled(15)):
            await child.terminate(ProcessTable(), grace=10)  # HUP then CONT: no KILL
        assert child.signal == signal.SIGHUP


async def test_terminate_of_a_reaped_program_with_nothing_left_returns_at_once(
    tmp_path: Path,
) -> None:
    async with spawned(["true"], tmp_path) as child:
        await poll(lambda: _async(child.poll()))
        with anyio.fail_after(scaled(1)):
            await child.terminate(ProcessTable(), grace=60)
        assert child.exit_code == 0
        child.send_signal(signal.SIGKILL)  # reaped: no signal to a reused pid, no error
        child.resize(10, 10)  # nor an ioctl


async def test_resize_sets_the_terminal_size_the_program_reads(tmp_path: Path) -> None:
    async with spawned(["sh", "-c", "read x; stty size"], tmp_path) as child:
        child.resize(100, 33)
        winsize = fcntl.ioctl(child.fd, termios.TIOCGWINSZ, b"\0" * 8)
        assert struct.unpack("HHHH", winsize)[:2] == (33, 100)
        assert child.write_some(b"\n") == 1
        assert b"33 100" in await output_with(child, b"33 100")


async def test_write_some_takes_what_the_pty_takes_and_never_blocks(tmp_path: Path) -> None:
    # A program that never reads: the PTY's input queue fills up.
    async with spawned(["sh", "-c", "stty raw -echo; echo ok; sleep 600"], tmp_path) as child:
        await output_with(child, b"ok")
        total = 0
        while (written := child.write_some(b"k" * 4096)) > 0:  # a blocking write hangs here
            total += written
        assert 0 < total < 1 << 20
    assert child.write_some(b"closed") == 0  # its master closed: no error either


async def test_a_closed_master_is_never_touched_again(tmp_path: Path) -> None:
    """Once closed, its number may name another descriptor: a second close, a resize
    or a write must not reach that one."""
    async with spawned(["sleep", "600"], tmp_path) as child:
        child.close_fd()
        master, slave = os.openpty()  # the lowest numbers: likely the one just freed
        try:
            os.dup2(master, child.fd)  # make sure: another terminal under that number
            child.resize(7, 7)
            winsize = fcntl.ioctl(slave, termios.TIOCGWINSZ, b"\0" * 8)
            assert struct.unpack("HHHH", winsize)[:2] != (7, 7)
            child.close_fd()
            os.fstat(child.fd)  # still open
        finally:
            if child.fd not in (master, slave):
                os.close(child.fd)
            os.close(master)
            os.close(slave)


async def test_alive_among_does_not_count_the_reaped_child() -> None:
    exit = Exit()
    child = Child(pid=1234, fd=-1, tty="/dev/null", exit=exit)
    assert child.alive_among([1234]) and child.alive_among([1234, 99])
    exit.reaped(0)
    assert not child.alive_among([1234]) and not child.alive_among([])
    assert child.alive_among([1234, 99])  # a job of its session lives on


def test_the_signal_names_clients_may_send() -> None:
    assert SIGNALS["INT"] == signal.SIGINT and SIGNALS["WINCH"] == signal.SIGWINCH
    assert set(SIGNALS) >= {"HUP", "INT", "TERM", "KILL", "STOP", "CONT"}


async def _async(value: bool) -> bool:
    return value
