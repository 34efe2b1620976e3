"""Session records: what ran, where, what became of it — kept after the session ends, the
server stops or the machine reboots, so that a past agent can be resumed.

SQLite (stdlib ``sqlite3``) in ``<state_dir>/records.sqlite3``, mode 0600, WAL. Kept:
the session's identity *without its nonce* (id, name, argv, command — what was asked
for —, agent, cwd), its size, when it was created and ended, its exit code or
signal and how it ended (``exited``, ``killed`` when a client asked, ``lost`` when the
server went away without seeing it end), the agent's ``native_session_id``, the last
activity and its reason, and the activity timeline (each transition with its time,
the last `TIMELINE_LIMIT` per session). Never output, environment values, the
contents of interactions, queued messages or the nonce.

Writes are queued and committed by a background task (`run`) a moment later, so no
write ever happens on the PTY read path; `flush` commits at once (on the way out). A
failing database is logged once and otherwise ignored: records are a convenience,
the sessions are what matters.

The schema has a version (``PRAGMA user_version``) and every change to it is a
migration in `MIGRATIONS`, applied in order at open.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ptyvisor.config import ensure_state_dir

log = logging.getLogger(__name__)

FILE = "records.sqlite3"
TIMELINE_LIMIT = 1000
"""Transitions kept per session (the oldest go first)."""
SESSION_LIMIT = 10_000
"""Sessions kept (the oldest ended ones go first)."""
FLUSH_SECONDS = 0.1

MIGRATIONS: list[str] = [
    # 1: sessions and their activity timeline.
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        identity TEXT NOT NULL,
        name TEXT NOT NULL,
        agent TEXT,
        cols INTEGER NOT NULL,
        rows INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        pid INTEGER,
        ended_at INTEGER,
        ended TEXT,
        exit_code INTEGER,
        signal INTEGER,
        native_session_id TEXT,
        phase TEXT,
        phase_since INTEGER,
        reason TEXT,
        resumed_from TEXT
    );
    CREATE INDEX sessions_by_creation ON sessions (created_at);
    CREATE TABLE transitions (
        session TEXT NOT NULL,
        at INTEGER NOT NULL,
        phase TEXT NOT NULL,
        reason TEXT
    );
    CREATE INDEX transitions_by_session ON transitions (session, at);
    """,
    # 2: where the last activity came from (extension, terminal, process).
    "ALTER TABLE sessions ADD COLUMN source TEXT",
]


@dataclass(frozen=True)
class Record:
    """One session as the records know it."""

    id: str
    identity: dict[str, Any]
    """session.Identity as JSON, with an empty nonce."""
    name: str
    agent: str | None
    cols: int
    rows: int
    created_at: int
    pid: int | None
    ended_at: int | None
    ended: str | None
    exit_code: int | None
    signal: int | None
    native_session_id: str | None
    phase: str | None
    phase_since: int | None
    reason: str | None
    resumed_from: str | None
    source: str | None
    """Where the last activity came from (activity.ActivitySource); None before it was kept."""


class Records:
    def __init__(self, state_dir: Path) -> None:
        path = ensure_state_dir(state_dir) / FILE
        # Made 0600 before SQLite opens it (it would use the umask).
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        path.chmod(0o600)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=2000")
        self._migrate()
        self._queue: list[Callable[[sqlite3.Connection], object]] = []
        self._wake: anyio.Event | None = None
        self._failed = False

    def _migrate(self) -> None:
        version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            self._db.executescript(f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;")

    @property
    def schema_version(self) -> int:
        value: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        return value

    # ------------------------------------------------------------------ writes (queued)

    def _later(self, write: Callable[[sqlite3.Connection], object]) -> None:
        self._queue.append(write)
        if self._wake is not None:
            self._wake.set()

    def started(
        self,
        identity: dict[str, Any],
        *,
        name: str,
        cols: int,
        rows: int,
        pid: int,
        resumed_from: str | None = None,
    ) -> None:
        kept = {**identity, "nonce": ""}  # never the secret
        values = (
            identity["id"],
            json.dumps(kept),
            name,
            identity.get("agent"),
            cols,
            rows,
            identity["created_at"],
            pid,
            resumed_from,
        )
        self._later(
            lambda db: db.execute(
                "INSERT OR IGNORE INTO sessions (id, identity, name, agent, cols, rows, "
                "created_at, pid, resumed_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
        )

    def activity(
        self,
        session: str,
        *,
        phase: str,
        since: int,
        reason: str | None,
        native_session_id: str | None,
        agent: str | None,
        source: str | None = None,
    ) -> None:
        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE sessions SET phase = ?, phase_since = ?, reason = ?, "
                "native_session_id = COALESCE(?, native_session_id), "
                "agent = COALESCE(agent, ?), source = ? WHERE id = ?",
                (phase, since, reason, native_session_id, agent, source, session),
            )
            last = db.execute(
                "SELECT phase, reason FROM transitions WHERE session = ? "
                "ORDER BY rowid DESC LIMIT 1",
                (session,),
            ).fetchone()
            if last != (phase, reason):
                db.execute(
                    "INSERT INTO transitions (session, at, phase, reason) VALUES (?, ?, ?, ?)",
                    (session, since, phase, reason),
                )
                db.execute(
                    "DELETE FROM transitions WHERE session = ? AND rowid NOT IN (SELECT rowid "
                    "FROM transitions WHERE session = ? ORDER BY rowid DESC LIMIT ?)",
                    (session, session, TIMELINE_LIMIT),
                )

        self._later(write)

    def resized(self, session: str, cols: int, rows: int) -> None:
        self._later(
            lambda db: db.execute(
                "UPDATE sessions SET cols = ?, rows = ? WHERE id = ?", (cols, rows, session)
            )
        )

    def renamed(self, session: str, name: str) -> None:
        self._later(
            lambda db: db.execute("UPDATE sessions SET name = ? WHERE id = ?", (name, session))
        )

    def ended(
        self,
        session: str,
        *,
        at: int,
        how: str,
        exit_code: int | None,
        signal: int | None,
    ) -> None:
        """``how``: ``exited`` (by itself), ``killed`` (a client asked), ``lost``."""
        self._later(
            lambda db: db.execute(
                "UPDATE sessions SET ended_at = ?, ended = ?, exit_code = ?, signal = ? "
                "WHERE id = ? AND ended IS NULL",
                (at, how, exit_code, signal, session),
            )
        )

    def lost(self, live: Iterable[str], at: int) -> None:
        """At start: sessions recorded as running that nothing runs any more ended
        without anyone seeing how (a reboot, a ``kill -9`` of everything)."""
        live_ids = list(live)
        marks = ",".join("?" * len(live_ids))
        condition = f"ended IS NULL AND id NOT IN ({marks})" if live_ids else "ended IS NULL"
        self._later(
            lambda db: db.execute(
                f"UPDATE sessions SET ended_at = ?, ended = 'lost' WHERE {condition}",
                (at, *live_ids),
            )
        )

    # ------------------------------------------------------------------ committing

    async def run(self) -> None:
        """Commit queued writes a moment after they come; runs until cancelled."""
        self._wake = anyio.Event()
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await anyio.sleep(FLUSH_SECONDS)
                self.flush()
        finally:
            self.flush()

    def flush(self) -> None:
        queue, self._queue = self._queue, []
        if not queue:
            return
        try:
            self._db.execute("BEGIN")
            for write in queue:
                write(self._db)
            self._prune()
            self._db.execute("COMMIT")
        except sqlite3.Error:
            if not self._failed:
                self._failed = True
                log.exception("session records cannot be written; carrying on without them")
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

    def _prune(self) -> None:
        self._db.execute(
            "DELETE FROM sessions WHERE ended IS NOT NULL AND id NOT IN (SELECT id FROM "
            "sessions ORDER BY created_at DESC LIMIT ?)",
            (SESSION_LIMIT,),
        )
        self._db.execute("DELETE FROM transitions WHERE session NOT IN (SELECT id FROM sessions)")

    def close(self) -> None:
        self.flush()
        self._db.close()

    # ------------------------------------------------------------------ reads

    def get(self, session: str) -> Record | None:
        self.flush()
        row = self._db.execute(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session,))
        found = row.fetchone()
        return None if found is None else _record(found)

    def all(self, *, limit: int = 1000) -> list[Record]:
        """The most recent sessions, newest first."""
        self.flush()
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM sessions ORDER BY created_at DESC LIMIT ?", (limit,)
        )
        return [_record(row) for row in rows]

    def timeline(self, session: str) -> list[tuple[int, str, str | None]]:
        """(at, phase, reason), oldest first."""
        self.flush()
        rows = self._db.execute(
            "SELECT at, phase, reason FROM transitions WHERE session = ? ORDER BY rowid",
            (session,),
        )
        return [(int(at), str(phase), reason) for at, phase, reason in rows]


_COLUMNS = (
    "id, identity, name, agent, cols, rows, created_at, pid, ended_at, ended, exit_code, "
    "signal, native_session_id, phase, phase_since, reason, resumed_from, source"
)


def _record(row: tuple[Any, ...]) -> Record:
    (ident, identity, *rest) = row
    return Record(ident, json.loads(identity), *rest)
