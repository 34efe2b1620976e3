"""Process lifecycle: exit → stopped/failed, killing the whole group, no zombies, no
leaked fds, query replies answered by the server only when no terminal is attached."""

from __future__ import annotations

import os
import re
import signal
import sys

import pytest

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.client.client import Client
from ptyvisor.wire.protocol import ProcessChanged, SessionSummary

from .conftest import RunningServer, alive, output_until, poll, until

pytestmark = pytest.mark.anyio


async def finished(client: Client, session_id: str) -> SessionSummary:
    async def check() -> SessionSummary | None:
        for summary in await client.list():
            if summary.id == session_id and summary.process.state == "exited":
                return summary
        return None

    return await poll(check)


@pytest.mark.parametrize(
    ("script", "phase", "exit_code", "reason"),
    [
        ("exit 0", ActivityPhase.STOPPED, 0, None),
        ("exit 3", ActivityPhase.FAILED, 3, "exited with status 3"),
    ],
)
async def test_exit_status_sets_final_activity(
    client: Client, script: str, phase: ActivityPhase, exit_code: int, reason: str | None
) -> None:
    session = await client.spawn(["sh", "-c", script])
    summary = await finished(client, session.id)
    assert summary.process.exit_code == exit_code
    assert summary.process.signal is None
    assert summary.activity.phase is phase
    assert summary.activity.reason == reason


async def test_signal_death_is_failed(client: Client) -> None:
    session = await client.spawn(["sh", "-c", "kill -KILL $$"])
    summary = await finished(client, session.id)
    assert summary.process.signal == signal.SIGKILL
    assert summary.activity.phase is ActivityPhase.FAILED
    assert summary.activity.reason == "killed by SIGKILL"
    assert summary.process.ended == "exited"


async def test_a_kill_from_a_client_is_stopped_not_failed(client: Client) -> None:
    """A user's Kill shows as stopped (reason "killed"); the signal stays visible."""
    session = await client.spawn(["sleep", "600"])
    await client.request({"type": "kill", "session": session.id})
    summary = await finished(client, session.id)
    assert summary.process.signal == signal.SIGHUP
    assert summary.process.ended == "killed"
    assert summary.activity.phase is ActivityPhase.STOPPED
    assert summary.activity.reason == "killed"


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_kill_terminates_whole_group_and_reaps(client: Client) -> None:
    fds_before = open_fds()
    # Job control puts each background job in its own process group, and the
    # second one ignores HUP: only the KILL after the grace period stops it.
    script = "set -m; sleep 300 & echo job1=$!; (trap '' HUP; sleep 300) & echo job2=$!; wait"
    session = await client.spawn(["bash", "-c", script])
    await client.attach(session.id, since=0)
    text = (await output_until(client, re.compile(rb"job2=\d+\r\n"))).decode()
    pids = [int(text.split(f"{name}=")[1].split()[0]) for name in ("job1", "job2")]
    assert all(alive(pid) for pid in pids)
    await client.close(session.id)
    assert session.process.pid is not None
    for pid in [*pids, session.process.pid]:
        assert not alive(pid), f"pid {pid} survived close"
    with pytest.raises(ChildProcessError):
        os.waitpid(session.process.pid, os.WNOHANG)  # noqa: ASYNC222 - reaped: no zombie
    assert open_fds() <= fds_before | {"anyio"}, "master/pidfd leaked"


DSR_PROBE = r"""
import os, select, sys, termios, tty
tty.setraw(0)
os.write(1, b"\x1b[6n")
r, _, _ = select.select([0], [], [], 1.5)
reply = os.read(0, 100) if r else b"none"
r, _, _ = select.select([0], [], [], 0.5)
extra = os.read(0, 100) if r else b""
show = lambda b: b.replace(b"\x1b", b"^")
os.write(1, b"\r\nREPLY=" + show(reply) + b" EXTRA=" + show(extra) + b"\r\n")
sys.stdin.read(1)
"""


async def test_server_answers_queries_only_without_a_terminal(client: Client) -> None:
    # Nobody attached: the server answers from its headless terminal, exactly once.
    alone = await client.spawn([sys.executable, "-c", DSR_PROBE])
    await client.attach(alone.id, since=0, answers_queries=False)
    assert b"REPLY=^[1;1R EXTRA=\r\n" in await output_until(client, b"EXTRA=\r\n")
    await client.close(alone.id)

    # A terminal emulator is attached and answers itself: the server stays silent.
    attached = await client.spawn([sys.executable, "-c", DSR_PROBE])
    await client.attach(attached.id, since=0, answers_queries=True)
    await output_until(client, b"\x1b[6n")
    await client.send_input(b"\x1b[1;1R")
    assert b"REPLY=^[1;1R EXTRA=\r\n" in await output_until(client, b"EXTRA=")
    await client.close(attached.id)


async def test_process_events_reach_attached_client(server: RunningServer, client: Client) -> None:
    session = await client.spawn(["sh", "-c", "read x; exit 7"])
    await client.attach(session.id, since=0)
    await client.send_input(b"\r")
    events = await until(client, lambda e: isinstance(e, ProcessChanged))
    change = events[-1]
    assert isinstance(change, ProcessChanged)
    assert change.process.state == "exited" and change.process.exit_code == 7
