"""Which live processes belong to a program (keeper/proctable.py), read from /proc
with real processes: its session's members however they regrouped, everything
below a subreaper however it detached, a pid named with its start time, and scans
shared between callers that ask at once."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from ptyvisor.keeper.proctable import (
    ProcessTable,
    descendants,
    in_session_tree,
    process_start,
    scan_sessions,
)

from ..conftest import wait_for

# A session leader with a job in another process group, a nohup'd child, a
# grandchild that left for a session of its own, an orphan of its session (its
# parent gone, so init's child now) and a zombie: it prints their pids.
FAMILY = """
import os, subprocess, sys
job = subprocess.Popen(["sleep", "600"], process_group=0)
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
kept = subprocess.Popen(["nohup", "sleep", "600"], **quiet)
away = "import subprocess; print(subprocess.Popen(['sleep', '600'], start_new_session=True).pid)"
pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
middle = subprocess.Popen([sys.executable, "-c", away + "; input()"], **pipes)
orphan = subprocess.run(["sh", "-c", "sleep 600 >/dev/null & echo $!"], **pipes)
zombie = subprocess.Popen(["true"])
away = middle.stdout.readline().strip()
print(job.pid, kept.pid, away, orphan.stdout.strip(), zombie.pid, middle.pid, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def family() -> Iterator[tuple[subprocess.Popen[str], list[int]]]:
    leader = subprocess.Popen(
        [sys.executable, "-c", FAMILY],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdout is not None
    pids = [int(pid) for pid in leader.stdout.readline().split()]
    try:
        yield leader, pids
    finally:
        for pid in (leader.pid, *pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        leader.communicate()


def test_a_session_has_its_jobs_but_not_what_left_it_nor_zombies(
    family: tuple[subprocess.Popen[str], list[int]],
) -> None:
    leader, (job, kept, away, orphan, zombie, middle) = family
    wait_for(lambda: process_start(zombie) is None, "the zombie")  # dead, not reaped
    assert os.path.exists(f"/proc/{zombie}")
    scan = scan_sessions()
    assert scan is not None
    assert sorted(scan[leader.pid]) == sorted([leader.pid, job, kept, orphan, middle])
    assert scan[away] == [away]


def test_descendants_are_everything_below_however_it_detached(
    family: tuple[subprocess.Popen[str], list[int]],
) -> None:
    leader, (job, kept, away, _orphan, _zombie, middle) = family
    below = descendants(leader.pid)
    assert sorted(below) == sorted([job, kept, away, middle]), "no zombie, no orphan"
    assert os.getpid() not in below
    assert leader.pid in descendants(os.getpid())


def test_who_belongs_to_a_programs_session_tree(
    family: tuple[subprocess.Popen[str], list[int]],
) -> None:
    leader, (job, _kept, away, orphan, _zombie, _middle) = family
    assert in_session_tree(orphan, leader.pid) is True, "in its session, not below it"
    assert in_session_tree(leader.pid, leader.pid) is True
    assert in_session_tree(job, leader.pid) is True
    assert in_session_tree(away, leader.pid) is True, "descended, in its own session"
    assert in_session_tree(os.getpid(), leader.pid) is False
    assert in_session_tree(2**22 + 1, leader.pid) is None, "gone: cannot be told"


def test_a_start_time_tells_a_process_from_a_later_one_with_its_pid() -> None:
    first = subprocess.Popen(["sleep", "600"])
    started = process_start(first.pid)
    first.kill()
    first.wait()
    assert started is not None
    ticks = os.sysconf("SC_CLK_TCK")
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    assert abs(started / ticks - uptime) < 60, "clock ticks since boot"
    assert process_start(first.pid) is None
    assert process_start(os.getpid()) == process_start(os.getpid())


@pytest.mark.anyio
async def test_callers_at_once_share_a_scan_begun_after_they_asked() -> None:
    table = ProcessTable()
    me = os.getsid(0)
    results: list[list[int] | None] = []

    async def ask() -> None:
        results.append(await table.members(me))

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(ask)
    assert table.scans <= 2, "twenty callers at once: one scan, or two"
    assert all(result is not None and os.getpid() in result for result in results)
    # A process started after a scan is in the next one asked for.
    async with await anyio.open_process(["sleep", "600"]) as later:
        members = await table.members(me)
        assert members is not None and later.pid in members and table.scans >= 2
        later.kill()
