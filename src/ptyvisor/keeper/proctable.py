"""Which live processes belong to which session: one ``/proc`` scan, shared.

Stopping a session means signalling every process whose session id is the
program's (job-control shells put their jobs in other process groups of that
session; ``nohup`` children stay in it too), then waiting until none is left.
Finding them means reading ``/proc/<pid>/stat`` for every process on the machine.
Done on the event loop, once per closing session every few milliseconds, 200
closing sessions froze every other session's echo for seconds. So scans run in a
worker thread, and callers that need a scan at the same time share one.
"""

from __future__ import annotations

import os
import time

Scan = dict[int, list[int]]


def scan_sessions() -> Scan | None:
    """Session id → live (not zombie) pids, for every process; None if ``/proc``
    cannot be read (not Linux, or out of descriptors)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    sessions: Scan = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except FileNotFoundError:
            continue  # gone meanwhile
        except OSError:
            return None
        # Fields after the parenthesised command: state ppid pgrp session ...
        fields = stat.rpartition(b")")[2].split()
        # Zombies are already dead (their parent, often init, reaps them).
        if len(fields) > 3 and fields[0] != b"Z":
            sessions.setdefault(int(fields[3]), []).append(int(name))
    return sessions


def descendants(ancestor: int) -> list[int]:
    """Every live process below ``ancestor`` in the process tree (not itself). With
    ``ancestor`` a child subreaper, that is everything its children ever started,
    however they detached (``setsid``, ``nohup``, double forks)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields is None or len(fields) < 2 or fields[0] == b"Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    pending = list(children.get(ancestor, ()))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command: state ppid pgrp session …"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()
    except OSError:
        return None


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None if it is gone
    or a zombie: with the pid, it names one process even after pids are reused."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20 or fields[0] == b"Z":
        return None
    return int(fields[19])


def in_session_tree(pid: int, leader: int, *, max_depth: int = 64) -> bool | None:
    """Whether process ``pid`` belongs to the program ``leader`` started: in its
    process session, or descended from it (Claude Code starts its hooks in sessions
    of their own). None when that cannot be told (``pid`` is gone already)."""
    current = pid
    for _ in range(max_depth):
        fields = _stat_fields(current)
        if fields is None or len(fields) < 4:
            return None if current == pid else False
        if current == leader or int(fields[3]) == leader:
            return True
        current = int(fields[1])
        if current <= 1:
            return False
    return False


class ProcessTable:
    """Shares scans between concurrent callers; each gets a scan begun after it asked."""

    def __init__(self) -> None:
        import anyio  # here: the rest of this module is stdlib only, for the keeper

        self._lock = anyio.Lock()
        self._scan: Scan = {}
        self._started = float("-inf")
        self.scans = 0

    async def members(self, sid: int) -> list[int] | None:
        """Live pids in session ``sid`` as of a scan begun after this call; None if
        the scan failed (the caller cannot tell, and should not conclude "none")."""
        import anyio.to_thread

        asked = time.monotonic()
        async with self._lock:
            if self._started < asked:
                self._started = time.monotonic()
                scan = await anyio.to_thread.run_sync(scan_sessions)
                self.scans += 1
                if scan is None:
                    self._started = float("-inf")
                    return None
                self._scan = scan
            return list(self._scan.get(sid, ()))
