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

Nothing on the event loop waits on the database: another process may hold its write
lock for the whole busy timeout. Writes are queued (a list append) and committed by a
background task (`run`) a moment later in a worker thread; reads (`get`, `all`,
`timeline`) are awaited and run in the same single worker thread, after the writes
queued before them. A failing database is logged once and otherwise ignored: records
are a convenience, the sessions are what matters. A row that cannot be read back (a
corrupt identity, a wrong type) is skipped, counted (`unreadable`) and logged once,
and never costs anything else: reads go on without it.

The schema has a version (``PRAGMA user_version``) and every change to it is a
migration in `MIGRATIONS`, applied in order at open.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ptyvisor.config import ensure_state_dir
from ptyvisor.errors import BadIdentity, RecordsUnavailable, UnreadableRecord
from ptyvisor.server.identity import Identity

T = TypeVar("T")

log = logging.getLogger(__name__)

FILE = "records.sqlite3"
TIMELINE_LIMIT = 1000
"""Transitions kept per session (the oldest go first)."""
SESSION_LIMIT = 10_000
"""Sessions kept (the oldest ended ones go first)."""
FLUSH_SECONDS = 0.1
MAX_QUEUED = 100_000
"""Writes kept waiting while another process holds the database's write lock."""
SQLITE_BUSY, SQLITE_LOCKED = 5, 6

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
    identity: Identity
    """With an empty nonce: the records never keep it."""
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
        """Opens (and migrates) the database: blocking, so a server calls `open`."""
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
        self._locked = False
        self._lock = threading.Lock()
        """One user of the connection at a time (the worker thread, or a flush at exit)."""
        self._worker = anyio.CapacityLimiter(1)
        self.unreadable: set[str] = set()
        """Ids of rows skipped because they could not be read (each logged once)."""

    @classmethod
    async def open(cls, state_dir: Path) -> Records:
        """`Records` opened in a worker thread: the loop never waits on the file's lock."""
        return await anyio.to_thread.run_sync(cls, state_dir)

    def _migrate(self) -> None:
        version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            self._db.executescript(f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;")

    @property
    def schema_version(self) -> int:
        with self._lock:
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
        """Commit queued writes a moment after they come; runs until cancelled, and
        commits what is left on the way out."""
        self._wake = anyio.Event()
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await anyio.sleep(FLUSH_SECONDS)
                await self.commit()
                if self._queue:  # locked by another process: try again
                    self._wake.set()
        finally:
            with anyio.CancelScope(shield=True):
                await self.commit()

    async def commit(self) -> None:
        """What is queued, committed now (in the worker thread)."""
        await self._in_worker(self.flush)

    async def _in_worker(self, call: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(call, limiter=self._worker)

    def flush(self) -> None:
        """Commit what is queued, in the calling thread: blocking (see `commit`)."""
        with self._lock:
            queue, self._queue = self._queue, []
            if not queue:
                return
            try:
                self._db.execute("BEGIN")
                for write in queue:
                    write(self._db)
                self._prune()
                self._db.execute("COMMIT")
            except sqlite3.Error as error:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if getattr(error, "sqlite_errorcode", None) in (SQLITE_BUSY, SQLITE_LOCKED):
                    # Another process holds the write lock: these wait for the next try
                    # (the oldest go past `MAX_QUEUED`).
                    self._queue[:0] = queue[-MAX_QUEUED:]
                    if not self._locked:
                        self._locked = True
                        log.warning("session records are locked by another process; writes wait")
                elif not self._failed:
                    self._failed = True
                    log.exception("session records cannot be written; carrying on without them")
            else:
                self._locked = False

    def _prune(self) -> None:
        self._db.execute(
            "DELETE FROM sessions WHERE ended IS NOT NULL AND id NOT IN (SELECT id FROM "
            "sessions ORDER BY created_at DESC LIMIT ?)",
            (SESSION_LIMIT,),
        )
        self._db.execute("DELETE FROM transitions WHERE session NOT IN (SELECT id FROM sessions)")

    def close(self) -> None:
        """Commit what is left and close: blocking, for the way out (see `aclose`)."""
        self.flush()
        with self._lock:
            self._db.close()

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._in_worker(self.close)

    # ------------------------------------------------------------------ reads

    async def get(self, session: str) -> Record | None:
        """The session's record; None when there is none, or it cannot be read.
        Raises `RecordsUnavailable`."""
        return await self._read(lambda: self._get(session))

    async def all(self, *, limit: int = 1000) -> list[Record]:
        """The most recent readable sessions, newest first. Raises `RecordsUnavailable`."""
        return await self._read(lambda: self._all(limit))

    async def timeline(self, session: str) -> list[tuple[int, str, str | None]]:
        """(at, phase, reason), oldest first. Raises `RecordsUnavailable`."""
        return await self._read(lambda: self._timeline(session))

    async def _read(self, query: Callable[[], T]) -> T:
        def read() -> T:
            self.flush()  # what was queued before this read is in what it reads
            with self._lock:
                try:
                    return query()
                except sqlite3.Error as error:
                    raise RecordsUnavailable(str(error)) from None

        return await self._in_worker(read)

    def _get(self, session: str) -> Record | None:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session,))
        found = row.fetchone()
        return None if found is None else self._readable(found)

    def _all(self, limit: int) -> list[Record]:
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM sessions ORDER BY created_at DESC LIMIT ?", (limit,)
        )
        return [record for row in rows.fetchall() if (record := self._readable(row)) is not None]

    def _timeline(self, session: str) -> list[tuple[int, str, str | None]]:
        rows = self._db.execute(
            "SELECT at, phase, reason FROM transitions WHERE session = ? ORDER BY rowid",
            (session,),
        )
        return [
            (at, phase, reason)
            for at, phase, reason in rows.fetchall()
            if isinstance(at, int) and isinstance(phase, str) and isinstance(reason, str | None)
        ]

    def _readable(self, row: tuple[Any, ...]) -> Record | None:
        try:
            return _record(row)
        except UnreadableRecord as why:
            ident = str(row[0])
            if ident not in self.unreadable:
                self.unreadable.add(ident)
                log.warning("session record %s cannot be read (%s); skipped", ident, why)
            return None


_COLUMNS = (
    "id, identity, name, agent, cols, rows, created_at, pid, ended_at, ended, exit_code, "
    "signal, native_session_id, phase, phase_since, reason, resumed_from, source"
)


_TYPES: tuple[tuple[type | tuple[type, ...], bool], ...] = (
    (str, False),  # id
    (str, False),  # identity
    (str, False),  # name
    (str, True),  # agent
    (int, False),  # cols
    (int, False),  # rows
    (int, False),  # created_at
    (int, True),  # pid
    (int, True),  # ended_at
    (str, True),  # ended
    (int, True),  # exit_code
    (int, True),  # signal
    (str, True),  # native_session_id
    (str, True),  # phase
    (int, True),  # phase_since
    (str, True),  # reason
    (str, True),  # resumed_from
    (str, True),  # source
)
"""Each column of `_COLUMNS`: its type, and whether it may be NULL. SQLite keeps what
it is given, so a row written by anything else is checked, not trusted."""


def _record(row: tuple[Any, ...]) -> Record:
    """The row as a `Record`; raises `UnreadableRecord`."""
    for value, (kind, nullable) in zip(row, _TYPES, strict=True):
        if not (isinstance(value, kind) or (nullable and value is None)):
            raise UnreadableRecord(f"a column holds {type(value).__name__}")
    ident, identity, *rest = row
    try:
        data = json.loads(identity)
    except ValueError:
        raise UnreadableRecord("its identity is not JSON") from None
    if not isinstance(data, dict):
        raise UnreadableRecord("its identity is not an object")
    try:
        return Record(ident, Identity.from_json(data), *rest)
    except BadIdentity as bad:
        raise UnreadableRecord(str(bad)) from None
