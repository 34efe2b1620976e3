"""The sessions of a server (supervisor.py), without the server: real programs under
real PTYs, real records. What may be started again and how, what a listing holds
when one session's summary breaks, and who is told of a change."""

from __future__ import annotations

import logging
import sys

import anyio
import pytest

from ptyvisor.errors import NotResumable, UnknownSession
from ptyvisor.server.outbox import Outbox
from ptyvisor.server.session import Session
from ptyvisor.server.supervisor import Supervisor
from ptyvisor.wire.protocol import SessionSummary
from tests.timeouts import scaled

from ..conftest import child_env, poll

pytestmark = pytest.mark.anyio
EXIT_3 = [sys.executable, "-c", "print('ran'); raise SystemExit(3)"]


async def start(supervisor: Supervisor, argv: list[str], name: str | None = None) -> Session:
    return await supervisor.spawn(argv, cwd="/", env=child_env(), name=name, cols=80, rows=24)


async def ended(session: Session) -> Session:
    with anyio.fail_after(scaled(30)):
        await session.exited.wait()
    return session


async def test_a_plain_command_is_run_again_not_resumed(supervisor: Supervisor) -> None:
    first = await ended(await start(supervisor, EXIT_3, name="three"))
    with pytest.raises(NotResumable, match="plain command"):
        await supervisor.resume(first.id, rerun=False)
    again = await supervisor.resume(first.id, rerun=True)
    summary = again.summary()
    assert (summary.argv, summary.name, summary.resumed_from) == (EXIT_3, "three", first.id)
    assert again.id != first.id


async def test_a_running_session_or_none_at_all_is_not_started_again(
    supervisor: Supervisor,
) -> None:
    running = await start(supervisor, ["cat"])
    with pytest.raises(NotResumable, match="still running"):
        await supervisor.resume(running.id, rerun=True)
    with pytest.raises(UnknownSession):
        await supervisor.resume("s0nosuch0", rerun=True)


async def test_a_closed_session_is_listed_from_its_record_and_run_again_from_it(
    supervisor: Supervisor,
) -> None:
    gone = await ended(await start(supervisor, EXIT_3))
    await supervisor.close(gone.id)
    assert supervisor.find(gone.id) is None and supervisor.summaries() == []

    async def listed() -> SessionSummary | None:
        past = {s.id: s for s in await supervisor.all_summaries()}
        return past.get(gone.id)

    summary = await poll(listed)
    assert summary.past and summary.argv == EXIT_3
    assert (summary.process.state, summary.process.exit_code) == ("exited", 3)
    again = await supervisor.resume(gone.id, rerun=True)  # from the record alone
    assert again.summary().resumed_from == gone.id
    transitions, ended_at = await supervisor.timeline(gone.id)
    assert ended_at is not None and ended_at >= summary.created_at
    assert isinstance(transitions, list)


async def test_one_summary_that_breaks_leaves_the_others_listed_logged_once(
    supervisor: Supervisor, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, fine = await start(supervisor, ["cat"]), await start(supervisor, ["cat"])

    def bug() -> SessionSummary:
        raise RuntimeError("a bug in one session's summary")

    monkeypatch.setattr(broken, "summary", bug)
    with caplog.at_level(logging.ERROR):
        for _ in range(3):
            assert [s.id for s in supervisor.summaries()] == [fine.id]
            assert [s.id for s in await supervisor.all_summaries()] == [fine.id]
    assert sum("cannot be summarised" in r.getMessage() for r in caplog.records) == 1


async def test_watchers_hear_of_each_change_until_they_stop_watching(
    supervisor: Supervisor,
) -> None:
    watcher = Outbox()
    supervisor.watch(watcher)
    assert watcher.sessions_dirty  # the list as it is now, first
    watcher.sessions_dirty = False
    session = await start(supervisor, ["cat"])
    assert watcher.sessions_dirty
    watcher.sessions_dirty = False
    session.rename("renamed")
    assert watcher.sessions_dirty
    supervisor.unwatch(watcher)
    watcher.sessions_dirty = False
    await supervisor.close(session.id)
    assert not watcher.sessions_dirty


async def test_a_timeline_of_no_session_is_refused(supervisor: Supervisor) -> None:
    with pytest.raises(UnknownSession):
        await supervisor.timeline("s0nosuch0")
