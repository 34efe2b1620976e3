"""Session records: kept in SQLite across restarts and reboots, never holding output,
environment values or the nonce; ``ls --all`` and ``resume`` read them."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptyvisor.client.client import Client
from ptyvisor.config import ServerConfig
from ptyvisor.errors import ServerError
from ptyvisor.server.identity import Identity
from ptyvisor.server.records import FILE, MIGRATIONS, Records
from ptyvisor.server.serving import run_server
from tests.timeouts import scaled

from ..conftest import (
    PTYVISOR_BIN,
    TOKEN,
    RunningServer,
    assert_echoes,
    child_env,
    output_until,
    poll,
)
from .test_httpapi import AUTH
from .test_webpage import get

pytestmark = pytest.mark.anyio

SECRET_VALUE = "env-value-never-kept-0xC0FFEE"
OLD_IDENTITY = Identity(
    id="sold",
    name="old",
    argv=["sh"],
    command=["sh"],
    cwd="/",
    agent=None,
    created_at=1,
    nonce="",
)
OUTPUT = "output-never-kept-0xBEEF"


async def serving(config: ServerConfig, scenario: object) -> None:
    """Run ``scenario(client)`` against a fresh in-process server on ``config``."""
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, config)
        async with Client.connect(config.url, TOKEN) as client:
            await scenario(client)  # type: ignore[operator]
        tg.cancel_scope.cancel()


async def test_records_outlive_the_server_and_keep_no_secrets(tmp_path: Path) -> None:
    config = ServerConfig(token=TOKEN, port=0, state_dir=tmp_path / "state")
    ids: dict[str, str] = {}
    nonce = ""

    async def first(client: Client) -> None:
        nonlocal nonce
        script = (
            f'echo "{OUTPUT} N=$PTYVISOR_NONCE."; '
            f"{PTYVISOR_BIN} emit activity working --agent tester --reason 'on it'; "
            f"{PTYVISOR_BIN} emit activity waiting --native-session-id native-42; read x"
        )
        session = await client.spawn(
            ["sh", "-c", script], env={**child_env(), "SECRET": SECRET_VALUE}, name="kept"
        )
        ids["kept"] = session.id
        await client.attach(session.id, since=0)
        nonce = (await output_until(client, b".\r\n")).decode().split("N=")[1].split(".")[0]

        async def waiting() -> bool:
            listed = {s.id: s for s in await client.list()}
            return listed[session.id].activity.phase.value == "waiting"

        await poll(waiting)
        killed = await client.spawn(["sleep", "60"], name="killed")
        ids["killed"] = killed.id
        await client.kill(killed.id)
        exited = await client.spawn(["sh", "-c", "exit 3"], name="exited")
        ids["exited"] = exited.id

        async def done() -> bool:
            listed = {s.id: s for s in await client.list()}
            return listed[exited.id].process.state == "exited"

        await poll(done)

    await serving(config, first)

    path = config.state_dir / FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    records = Records(config.state_dir)
    assert records.schema_version == len(MIGRATIONS)
    everything = b"".join(
        p.read_bytes() for p in config.state_dir.iterdir() if p.name.startswith(FILE)
    )
    for secret in (nonce, SECRET_VALUE, OUTPUT):
        assert secret.encode() not in everything, secret
    kept = await records.get(ids["kept"])
    assert kept is not None
    assert (kept.name, kept.agent, kept.native_session_id) == ("kept", "tester", "native-42")
    assert kept.identity.nonce == ""
    timeline = await records.timeline(ids["kept"])
    assert [phase for _, phase, _ in timeline][:2] == ["working", "waiting"]
    assert timeline[0][2] == "on it"
    ended = {name: await records.get(ident) for name, ident in ids.items()}
    assert ended["killed"] is not None and ended["killed"].ended == "killed"
    assert ended["exited"] is not None and (ended["exited"].ended, ended["exited"].exit_code) == (
        "exited",
        3,
    )
    # The in-process server stopped its programs on the way out.
    assert kept.ended == "server"
    records.close()

    async def second(client: Client) -> None:
        listed = {s.id: s for s in await client.list(all=True)}
        assert set(ids.values()) <= set(listed)
        assert all(listed[i].past for i in ids.values())
        assert listed[ids["kept"]].activity.native_session_id == "native-42"
        assert {s.id for s in await client.list()}.isdisjoint(ids.values())
        # A plain command has no conversation: only rerun starts it again.
        with pytest.raises(ServerError) as refused:
            await client.resume(ids["exited"])
        assert refused.value.code == "not_resumable"
        again = await client.resume(ids["exited"], rerun=True)
        assert (again.name, again.resumed_from, again.argv) == (
            "exited",
            ids["exited"],
            ["sh", "-c", "exit 3"],
        )
        with pytest.raises(ServerError) as unknown:
            await client.resume("s00000000")
        assert unknown.value.code == "unknown_session"
        running = await client.spawn(["sleep", "60"])
        with pytest.raises(ServerError) as busy:
            await client.resume(running.id)
        assert busy.value.code == "not_resumable"

    await serving(config, second)


def test_migrations_run_once_and_in_order(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    records = Records(tmp_path)
    assert records.schema_version == len(MIGRATIONS)
    records.close()
    again = Records(tmp_path)  # opening again applies nothing twice
    assert again.schema_version == len(MIGRATIONS)
    again.close()
    with sqlite3.connect(tmp_path / FILE) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "transitions"} <= tables


async def test_timeline_is_served_for_live_and_past_sessions(tmp_path: Path) -> None:
    """The page's timeline comes from the server: the recorded transitions, with how
    long each lasted, for a running session and after the server is gone."""
    config = ServerConfig(token=TOKEN, port=0, state_dir=tmp_path / "state")
    ids: dict[str, str] = {}

    async def first(client: Client) -> None:
        script = (
            f"{PTYVISOR_BIN} emit activity working --agent tester --reason 'step one'; "
            f"{PTYVISOR_BIN} emit activity waiting; read x"
        )
        session = await client.spawn(["sh", "-c", script], env=child_env(), name="timed")
        ids["timed"] = session.id

        async def waiting() -> bool:
            timeline = await client.timeline(session.id)
            return [t.phase.value for t in timeline.transitions][-2:] == ["working", "waiting"]

        await poll(waiting)
        timeline = await client.timeline(session.id)
        assert timeline.ended_at is None
        working = timeline.transitions[-2]
        assert working.reason == "step one"
        assert working.at <= timeline.transitions[-1].at
        await client.kill(session.id)

        async def stopped() -> bool:
            timeline = await client.timeline(session.id)
            return timeline.ended_at is not None and timeline.transitions[-1].phase.value == (
                "stopped"
            )

        await poll(stopped)
        last = (await client.timeline(session.id)).transitions[-1]
        assert last.reason == "killed"
        with pytest.raises(ServerError) as unknown:
            await client.timeline("s" + "0" * 8)
        assert unknown.value.code == "unknown_session"

    await serving(config, first)

    async def second(client: Client) -> None:
        timeline = await client.timeline(ids["timed"])
        assert [t.phase.value for t in timeline.transitions][-3:] == [
            "working",
            "waiting",
            "stopped",
        ]
        assert timeline.ended_at is not None

    await serving(config, second)


async def test_an_older_database_gains_the_source_and_keeps_its_sessions(
    tmp_path: Path,
) -> None:
    """Version 1 kept no activity source: migrated, its sessions read as `process`; new
    writes keep theirs (so a server adopting after a crash shows the right one)."""
    identity = json.dumps(OLD_IDENTITY.to_json())
    with sqlite3.connect(tmp_path / FILE) as db:
        db.executescript(f"BEGIN; {MIGRATIONS[0]}; PRAGMA user_version = 1; COMMIT;")
        db.execute(
            "INSERT INTO sessions (id, identity, name, cols, rows, created_at, phase) "
            "VALUES ('sold', ?, 'old', 80, 24, 1, 'waiting')",
            (identity,),
        )
    records = Records(tmp_path)
    assert records.schema_version == len(MIGRATIONS)
    old = await records.get("sold")
    assert old is not None and old.phase == "waiting" and old.source is None
    records.activity(
        "sold",
        phase="working",
        since=5,
        reason="command",
        native_session_id=None,
        agent=None,
        source="terminal",
    )
    kept = await records.get("sold")
    assert kept is not None and (kept.phase, kept.source) == ("working", "terminal")
    records.close()


FAKE_CLAUDE = """\
#!{python}
# A stand-in for the `claude` binary: shows the argv it was started with, reports
# each conversation id listed in REPORT as the real extension would, and waits.
import json, os, sys, time
from pathlib import Path
from ptyvisor.wire.frames import encode_frame

print("ARGV " + json.dumps(sys.argv[1:]), flush=True)
for native in Path({report!r}).read_text().splitlines():
    payload = {{"type": "activity", "phase": "waiting", "at": time.time_ns() // 10**6,
               "agent": "claude-code", "native_session_id": native}}
    frame = encode_frame(os.environ["PTYVISOR_SESSION"], os.environ["PTYVISOR_NONCE"], payload)
    os.write(1, frame)
print("REPORTED", flush=True)
sys.stdin.readline()
"""
INJECTED = "--dangerously-skip-permissions"
CONVERSATION = "5f1c2a8e-8b1e-4a56-9a0e-3c6d9f1b2a77"


async def test_a_reported_id_never_becomes_an_option_of_the_resumed_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anything holding the nonce can report an id: one that is not shaped like the
    agent's (an option, for one) is refused as it arrives and again when a resume
    builds argv, and a good one goes in as one ``--resume=<id>`` word."""
    bin_dir, report = tmp_path / "bin", tmp_path / "report"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=sys.executable, report=str(report)))
    claude.chmod(0o755)
    # The server's own PATH: a resumed program gets the server's environment.
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    config = ServerConfig(token=TOKEN, port=0, state_dir=tmp_path / "state")
    ids: dict[str, str] = {}

    async def reported(client: Client, native: str) -> tuple[str, bytes]:
        report.write_text(native + "\n")
        session = await client.spawn([], agent="claude-code", cwd=str(tmp_path))
        await client.attach(session.id, since=0)
        argv = await output_until(client, b"REPORTED")
        await client.send_input("\n")

        async def exited() -> bool:
            listed = {s.id: s for s in await client.list()}
            return listed[session.id].process.state == "exited"

        await poll(exited)
        return session.id, argv

    async def first(client: Client) -> None:
        ids["injected"], _ = await reported(client, INJECTED)
        stats = await client.stats(ids["injected"])
        assert stats.frames_rejected.get("native_id") == 1
        listed = {s.id: s for s in await client.list(all=True)}
        assert listed[ids["injected"]].activity.native_session_id is None
        with pytest.raises(ServerError) as refused:
            await client.resume(ids["injected"])
        assert refused.value.code == "not_resumable"

        ids["good"], _ = await reported(client, CONVERSATION)
        assert {s.id: s for s in await client.list()}[
            ids["good"]
        ].activity.native_session_id == CONVERSATION
        report.write_text("")
        resumed = await client.resume(ids["good"])
        await client.attach(resumed.id, since=0)
        line = (await output_until(client, b"REPORTED")).decode().split("ARGV ", 1)[1]
        argv = json.loads(line.split("\r\n", 1)[0])
        assert f"--resume={CONVERSATION}" in argv
        assert INJECTED not in argv and "--resume" not in argv
        await client.close(resumed.id)

    await serving(config, first)

    # A record written by an older version, which took any id: refused, not launched.
    records = Records(config.state_dir)
    records.activity(
        ids["good"],
        phase="waiting",
        since=1,
        reason=None,
        native_session_id=INJECTED,
        agent="claude-code",
        source="extension",
    )
    records.close()

    async def second(client: Client) -> None:
        with pytest.raises(ServerError) as refused:
            await client.resume(ids["good"])
        assert refused.value.code == "not_resumable"
        assert "refused" in refused.value.message and INJECTED in refused.value.message
        afresh = await client.resume(ids["good"], rerun=True)
        await client.attach(afresh.id, since=0)
        line = (await output_until(client, b"REPORTED")).decode().split("ARGV ", 1)[1]
        argv = json.loads(line.split("\r\n", 1)[0])
        assert INJECTED not in argv and not any(a.startswith("--resume") for a in argv)
        await client.close(afresh.id)

    await serving(config, second)


async def test_a_record_that_cannot_be_read_costs_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A row whose identity is not JSON (or whose column holds the wrong type) once
    made ``list {all}`` close every client asking with 1011: it is skipped, counted
    and logged once, and everything else is listed."""
    config = ServerConfig(token=TOKEN, port=0, state_dir=tmp_path / "state")

    async def scenario(client: Client) -> None:
        live = await client.spawn(["sleep", "600"], name="live")
        for name in ("broken", "wrong-type", "fine"):
            done = await client.spawn(["true"], name=name)

            async def exited(ident: str = done.id) -> bool:
                return any(s.id == ident and s.past for s in await client.list(all=True))

            await client.close(done.id)
            await poll(exited)
        ids = {s.name: s.id for s in await client.list(all=True)}
        with sqlite3.connect(config.state_dir / FILE) as db:
            for name in ("live", "broken"):
                db.execute("UPDATE sessions SET identity = '{not json' WHERE id = ?", (ids[name],))
            db.execute("UPDATE sessions SET cols = 'wide' WHERE id = ?", (ids["wrong-type"],))
        for _ in range(2):
            listed = {s.name: s for s in await client.list(all=True)}
            assert set(listed) == {"live", "fine"}, listed
            assert not listed["live"].past and listed["fine"].past
        metrics = (await get(RunningServer(config), "/metrics", **AUTH)).body.decode()
        assert "ptyvisor_records_unreadable 3" in metrics, metrics
        with pytest.raises(ServerError) as refused:
            await client.resume(ids["broken"])
        assert refused.value.code == "unknown_session"
        await client.close(live.id)

    await serving(config, scenario)
    skipped = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(skipped) == 3, [r.getMessage() for r in skipped]  # once each


LOCK_HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


async def test_records_locked_by_another_process_never_hold_the_loop(
    tmp_path: Path,
) -> None:
    """Another process holding the database's write lock made ``list {all}``,
    ``timeline`` and ``get`` wait out the 2 s busy timeout on the event loop: now they
    wait in a worker thread, another session echoes meanwhile, and the writes that
    waited land once the lock is gone."""
    config = ServerConfig(token=TOKEN, port=0, state_dir=tmp_path / "state")

    async def scenario(client: Client) -> None:
        echo = await client.spawn(["cat"])
        renamed = await client.spawn(["sleep", "600"])
        await client.list(all=True)  # its record is written
        holder = await anyio.open_process(
            [sys.executable, "-c", LOCK_HOLDER, str(config.state_dir / FILE)]
        )
        assert holder.stdin is not None and holder.stdout is not None
        try:
            with anyio.fail_after(scaled(30)):
                assert (await holder.stdout.receive()).strip() == b"locked"
            await client.rename(renamed.id, "waits")
            order: list[str] = []

            async def list_all() -> None:
                async with Client.connect(config.url, TOKEN) as other:
                    await other.list(all=True)
                    await other.timeline(renamed.id)
                order.append("records")

            async with anyio.create_task_group() as tg:
                tg.start_soon(list_all)
                await assert_echoes(RunningServer(config), echo.id)
                order.append("echo")
            assert order == ["echo", "records"]
        finally:
            await holder.stdin.send(b"\n")
            with anyio.fail_after(scaled(30)):
                await holder.wait()

        async def landed() -> bool:
            with sqlite3.connect(config.state_dir / FILE) as db:
                row = db.execute("SELECT name FROM sessions WHERE id = ?", (renamed.id,))
                return bool(row.fetchone() == ("waits",))

        await poll(landed, wait=30)
        await client.close(renamed.id)

    await serving(config, scenario)


COLUMN_VALUES = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=8),
)
IDENTITIES = st.one_of(
    st.just(json.dumps(OLD_IDENTITY.to_json())),
    st.text(max_size=30),
    st.dictionaries(
        st.sampled_from(["id", "name", "argv", "command", "cwd", "agent", "created_at", "nonce"]),
        st.one_of(st.none(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=4))),
    ).map(json.dumps),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(IDENTITIES, st.lists(COLUMN_VALUES, min_size=5, max_size=5))
def test_any_row_is_read_or_skipped_never_raised(
    tmp_path_factory: pytest.TempPathFactory, identity: str, values: list[object]
) -> None:
    """Whatever a row holds, reading the records gives it whole or leaves it out."""
    state = tmp_path_factory.mktemp("rows")
    records = Records(state)
    records.close()
    with sqlite3.connect(state / FILE) as db:
        db.execute(
            "INSERT INTO sessions (id, identity, name, cols, rows, created_at, agent, pid, "
            "native_session_id, phase) VALUES ('sx', ?, 'x', 80, 24, 1, ?, ?, ?, ?)",
            (identity, *values[:4]),
        )
        db.execute("UPDATE sessions SET exit_code = ? WHERE id = 'sx'", (values[4],))
    records = Records(state)
    try:
        listed = anyio.run(records.all)
        got = anyio.run(records.get, "sx")
    finally:
        records.close()
    assert listed == ([] if got is None else [got])
    assert (got is None) == ("sx" in records.unreadable)
