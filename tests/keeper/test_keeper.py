"""The keeper owns the programs: they outlive a crash (``kill -9``) or a planned restart of
the server process, the documented stop leaves nothing behind, and one state
directory has one server. Real ``ptyvisor serve`` processes, real programs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import sqlite3
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import pytest
from websockets.exceptions import InvalidStatus

from ptyvisor.client.client import Client, Output
from ptyvisor.errors import Disconnected
from ptyvisor.keeper.keeper import lock_holder
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.wire.protocol import ActivityChanged, Snapshot

from ..cli.test_commands import DETACH, Term
from ..conftest import (
    PTYVISOR_BIN,
    TOKEN,
    alive,
    child_env,
    children,
    output_until,
    poll,
    serve_refused,
    start_serve,
    succeeds,
    wait_for,
)
from ..server.test_control import BASH, HookRun
from .conftest import COUNTER, Serve, _numbers

T = TypeVar("T")


# --------------------------------------------------------------------------- crash


def test_a_crashed_server_is_replaced_and_nothing_is_lost(serve: Serve) -> None:
    async def scenario() -> None:
        async with Client.connect(serve.url, TOKEN) as client:
            session = await client.spawn(["sh", "-c", COUNTER])
            await client.attach(session.id, since=0)
            seen = b""
            while len(_numbers(seen)) < 20:
                event = await client.next_event()
                if isinstance(event, Output):
                    seen += event.data
            position = client.seq
            assert position is not None
        pid = session.process.pid
        assert pid is not None
        # kill -9 of the server process: the program keeps running meanwhile.
        crashed = time.monotonic()
        os.kill(serve.server_pid(), signal.SIGKILL)
        while True:
            try:
                async with Client.connect(serve.url, TOKEN) as client:
                    back = time.monotonic() - crashed
                    listed = {s.id: s for s in await client.list()}
                    assert listed[session.id].process.pid == pid
                    assert listed[session.id].process.state == "running"
                    attached = await client.attach(session.id, since=position)
                    assert attached.replay == "exact"
                    more = b""
                    while len(_numbers(more)) < 60:
                        event = await client.next_event()
                        if isinstance(event, Output):
                            more += event.data
                    numbers = _numbers(seen + more)
                    assert numbers == list(range(1, len(numbers) + 1)), "nothing lost or twice"
                    await client.close(session.id)
                break
            except OSError:
                await anyio.sleep(0.02)
        assert back < 5, back  # the target is 2 s; measured in scripts/bench_keeper.py
        assert alive(pid) is False

    anyio.run(scenario)
    assert "the server process exited (signal 9)" in serve.err.read_text()


def test_a_stopped_server_is_replaced_and_nothing_is_lost(serve: Serve) -> None:
    """A server process that stops answering (SIGSTOP here; a deadlock alike) was a
    full outage: the keeper now notices the silence on its heartbeat and replaces it
    as it replaces a crashed one, keeping every program."""

    async def before(client: Client) -> tuple[str, int, int]:
        session = await client.spawn(["sh", "-c", COUNTER])
        await client.attach(session.id, since=0)
        seen = b""
        while len(_numbers(seen)) < 20:
            event = await client.next_event()
            if isinstance(event, Output):
                seen += event.data
        assert session.process.pid is not None and client.seq is not None
        return session.id, session.process.pid, client.seq

    session, pid, position = serve.run(before)
    stopped = serve.server_pid()
    os.kill(stopped, signal.SIGSTOP)

    async def after(client: Client) -> bool:
        listed = {s.id: s for s in await client.list()}
        assert listed[session].process.pid == pid and listed[session].process.state == "running"
        attached = await client.attach(session, since=position)
        assert attached.replay == "exact"
        more = b""
        while len(_numbers(more)) < 10:
            event = await client.next_event()
            if isinstance(event, Output):
                more += event.data
        numbers = _numbers(more)
        assert numbers[0] > 20 and numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        await client.close(session)
        return True

    wait_for(lambda: not alive(stopped), "the stopped server to be replaced", timeout=60)
    wait_for(lambda: _quietly(serve, after), "the new server")
    assert serve.server_pid() != stopped
    log = serve.err.read_text()
    assert log.count("has not answered") == 1, log[-2000:]


def test_a_server_stopped_for_a_moment_is_kept(serve: Serve) -> None:
    """Continued well within the heartbeat's patience, the same process goes on."""

    async def lists(client: Client) -> bool:
        await client.list()
        return True

    serve.run(lists)
    server = serve.server_pid()
    os.kill(server, signal.SIGSTOP)
    time.sleep(2)  # the condition under test is a pause of this length
    os.kill(server, signal.SIGCONT)
    wait_for(lambda: _quietly(serve, lists), "serving again")
    assert serve.server_pid() == server
    assert "has not answered" not in serve.err.read_text()


# --------------------------------------------------------------------------- restart


STATEFUL = """
printf '\\033]0;handed over\\007'
echo ready
{bin} emit activity working --agent tester --reason 'busy with it'
read answer
echo "got $answer"
"""


def test_a_planned_restart_hands_over_screen_activity_and_queued_message(
    serve: Serve, tmp_path: Path
) -> None:
    async def before(client: Client) -> tuple[str, Snapshot]:
        session = await client.spawn(
            ["sh", "-c", STATEFUL.format(bin=PTYVISOR_BIN)], env=child_env(), cols=90, rows=20
        )
        attached = await client.attach(session.id, since=0)
        # The frame may have been applied before the attach: then it is in the reply.
        working = attached.session.activity.phase.value == "working"
        while not working:
            event = await client.next_event()
            working = isinstance(event, ActivityChanged) and event.activity.phase.value == "working"
        await client.send_message(session.id, "then do this")
        return session.id, await client.snapshot(session.id)

    session_id, earlier = serve.run(before)
    before_server = serve.server_pid()
    result = subprocess.run(
        [PTYVISOR_BIN, "restart", "--url", serve.url],
        env=serve.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout.strip()) == (0, "restarted"), result.stderr
    assert serve.server_pid() != before_server

    async def after(client: Client) -> None:
        summary = next(s for s in await client.list() if s.id == session_id)
        assert summary.process.pid == earlier.session.process.pid
        assert summary.activity.phase.value == "working"
        assert summary.activity.reason == "busy with it"
        assert summary.queued_message == "then do this"
        assert (summary.size.cols, summary.size.rows) == (90, 20)
        snapshot = await client.snapshot(session_id)
        assert snapshot.screen.title == "handed over"
        assert snapshot.screen.ansi == earlier.screen.ansi
        # And the program goes on, in the same terminal.
        await client.attach(session_id)
        await client.send_input("yes\r")
        seen = b""
        while b"got yes" not in seen:
            event = await client.next_event()
            if isinstance(event, Output):
                seen += event.data

    serve.run(after)


# --------------------------------------------------------------------------- stop

STUBBORN = {
    "ignores HUP": "trap '' HUP; sleep 1000",
    "nohup child": "nohup sleep 1000 >/dev/null 2>&1 & sleep 1000",
    "setsid child": "setsid sleep 1000 & sleep 1000",
    "double fork": "(setsid sh -c 'sleep 1000 &' &); sleep 1000",
    "job control": "bash -ic 'sleep 1000 & (trap \"\" HUP; sleep 1000) & wait'",
}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stopping_leaves_no_process_and_no_zombie(
    tmp_path: Path, env: dict[str, str], signum: int
) -> None:
    running = Serve(tmp_path, env)
    try:

        async def start(client: Client) -> None:
            for script in STUBBORN.values():
                await client.spawn(["sh", "-c", script])

        running.run(start)
        keeper = running.proc.pid

        def everything_started() -> list[int] | None:
            tree = _tree(keeper)
            sleeps = [pid for pid in tree if b"sleep" in _cmdline(pid)]
            return tree if len(sleeps) >= 9 else None

        tree = wait_for(everything_started, "every program's processes")
        orphans = [pid for pid in _orphaned_sleepers() if pid not in tree]
        assert running.stop(signum) == 0
    finally:
        if running.proc.poll() is None:
            running.stop(signal.SIGKILL)
    left = [pid for pid in [*tree, *orphans] if alive(pid)]
    assert left == [], left
    assert not _orphaned_sleepers(), "a detached child escaped to init"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""  # gone meanwhile


def _tree(root: int) -> list[int]:
    found, pending = [], list(children(root))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children(pid))
    return found


def _orphaned_sleepers() -> list[int]:
    """``sleep 1000`` processes anywhere (this test's marker)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and _cmdline(int(name)) == b"sleep\x001000\x00" and alive(int(name)):
            found.append(int(name))
    return found


def test_one_state_directory_has_one_server(
    serve: Serve, tmp_path: Path, env: dict[str, str]
) -> None:
    control = wait_for(
        lambda: next(Path(env["PTYVISOR_STATE_DIR"]).glob("control/*.sock"), None),
        "the control socket",
    )
    inode = os.stat(control).st_ino
    second = serve_refused(["--port", "0"], env)
    assert second.returncode == 1
    assert second.stderr.strip().splitlines() == [
        f"ptyvisor serve: another ptyvisor serve (pid {serve.proc.pid}) is running on "
        f"{env['PTYVISOR_STATE_DIR']}"
    ]
    # The first one's control socket is untouched (it used to be replaced, then
    # deleted by the second one on its way out) and the server still serves.
    assert os.stat(control).st_ino == inode

    async def still_serves(client: Client) -> None:
        await client.list()

    serve.run(still_serves)


# --------------------------------------------------------------------------- attach


def _attach(serve: Serve, session_id: str) -> Term:
    term = Term([PTYVISOR_BIN, "attach", "--url", serve.url, session_id], serve.env, 24, 80)
    term.attached()
    return term


ECHO_LINES = "while read line; do echo got:$line; done"


def test_attach_rides_out_a_crash_and_a_restart_and_keeps_what_was_typed(serve: Serve) -> None:
    async def spawn(client: Client) -> str:
        return (await client.spawn(["sh", "-c", ECHO_LINES])).id

    session = serve.run(spawn)
    term = _attach(serve, session)
    try:
        term.write(b"first\r")
        term.expect(b"got:first")
        # The server process dies, and stays away (its keeper is stopped meanwhile):
        # attach says so, and what is typed meanwhile is sent once it is back.
        os.kill(serve.proc.pid, signal.SIGSTOP)
        try:
            os.kill(serve.server_pid(), signal.SIGKILL)
            term.expect(b"reconnecting", timeout=20)
            term.write(b"while-away\r")
        finally:
            os.kill(serve.proc.pid, signal.SIGCONT)
        offset = term.expect(b"got:while-away", timeout=30)
        # A crash it hardly notices: the same, without a word.
        os.kill(serve.server_pid(), signal.SIGKILL)
        # A planned restart, the same way.
        restarted = subprocess.run(
            [PTYVISOR_BIN, "restart", "--url", serve.url],
            env=serve.env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert restarted.returncode == 0, restarted.stderr
        term.write(b"after-restart\r")
        term.expect(b"got:after-restart", start=offset, timeout=20)
        # Redrawn after the long absence, resumed exactly after the short ones: the
        # screen shows every line once.
        for line in ("got:first", "got:while-away", "got:after-restart"):
            assert term.screen().count(line) == 1, term.screen()
        term.write(DETACH)
        assert term.wait() == 0
        assert f"[detached from {session}; `ptyvisor attach {session}`".encode() in term.output
    finally:
        term.kill()


def test_attach_says_reconnecting_then_that_the_session_is_gone(
    tmp_path: Path, env: dict[str, str]
) -> None:
    first = Serve(tmp_path, env)
    port = first.url.rsplit(":", 1)[1].strip("/")

    async def spawn(client: Client) -> str:
        return (await client.spawn(["sh", "-c", ECHO_LINES])).id

    session = first.run(spawn)
    term = _attach(first, session)
    try:
        # Stopped for good: its programs are stopped too.
        assert first.stop() == 0
        term.expect(b"reconnecting", timeout=20)
        second = Serve(tmp_path, env, "--port", port)
        try:
            assert term.wait(timeout=30) == 1
            assert f"ptyvisor: session {session} is gone".encode() in term.output
        finally:
            second.stop()
    finally:
        term.kill()


def test_a_program_that_exits_at_once_is_reported(serve: Serve) -> None:
    """Its exit may reach the server right behind its start (keeperlink registers the
    program before anything else is read)."""

    async def quick(client: Client) -> None:
        sessions = [await client.spawn(["sh", "-c", "exit 7"]) for _ in range(20)]

        async def all_exited() -> bool:
            listed = {s.id: s for s in await client.list()}
            return all(listed[s.id].process.exit_code == 7 for s in sessions)

        await poll(all_exited, wait=20)

    serve.run(quick)


def test_a_hook_holding_a_request_fails_open_when_the_server_dies(
    serve: Serve, tmp_path: Path
) -> None:
    """Its connection dies with the server process: the hook exits 0 printing nothing,
    and Claude Code shows its own prompt, so nobody is left waiting."""

    async def scenario(client: Client) -> None:
        run = await HookRun.start(client, tmp_path, BASH)
        await run.waiting()
        os.kill(serve.server_pid(), signal.SIGKILL)
        result = await run.result()
        assert (result["rc"], result["stdout"]) == (0, ""), result

    serve.run(scenario)


def test_an_exited_session_stays_listed_across_a_restart_and_a_crash(serve: Serve) -> None:
    async def exit_5(client: Client) -> str:
        session = await client.spawn(["sh", "-c", "echo last words; exit 5"])

        async def exited() -> bool:
            listed = {s.id: s for s in await client.list()}
            return listed[session.id].process.exit_code == 5

        await poll(exited)
        return session.id

    session_id = serve.run(exit_5)

    async def still_there(client: Client) -> None:
        listed = {s.id: s for s in await client.list()}
        assert listed[session_id].process.exit_code == 5
        assert not listed[session_id].past
        await client.attach(session_id, since=0)
        seen = b""
        while b"last words" not in seen:
            event = await client.next_event()
            if isinstance(event, Output):
                seen += event.data

    restarted = subprocess.run(
        [PTYVISOR_BIN, "restart", "--url", serve.url], env=serve.env, timeout=60, check=False
    )
    assert restarted.returncode == 0
    serve.run(still_there)
    os.kill(serve.server_pid(), signal.SIGKILL)
    wait_for(lambda: succeeds(lambda: serve.run(still_there)), "the session after a crash")


def test_a_new_name_survives_a_restart_and_a_crash(serve: Serve) -> None:
    session_id = serve.run(lambda client: client.spawn(["sleep", "600"], name="old-name"))
    renamed = subprocess.run(
        [PTYVISOR_BIN, "rename", "--url", serve.url, "old-name", "new-name"],
        env=serve.env,
        timeout=60,
        check=False,
    )
    assert renamed.returncode == 0

    async def name(client: Client) -> str:
        return next(s.name for s in await client.list() if s.id == session_id.id)

    assert serve.run(name) == "new-name"
    restarted = subprocess.run(
        [PTYVISOR_BIN, "restart", "--url", serve.url], env=serve.env, timeout=60, check=False
    )
    assert restarted.returncode == 0
    assert serve.run(name) == "new-name"
    os.kill(serve.server_pid(), signal.SIGKILL)
    wait_for(lambda: succeeds(lambda: serve.run(name)), "the server after a crash")
    assert serve.run(name) == "new-name"


async def echoed_first(client: Client) -> str:
    """A 40x8 line-echoing session that has echoed ``first``: its id."""
    session = await client.spawn(["sh", "-c", ECHO_LINES], cols=40, rows=8)
    await client.attach(session.id)
    await client.send_input(b"first\r")
    await output_until(client, b"got:first")
    return session.id


def test_a_recording_goes_on_after_a_crash_in_a_new_file(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The adopting server records on: the file so far becomes part 1, and the new
    one starts with the screen as it is, so each plays on its own."""
    recordings = tmp_path / "rec"
    running = Serve(tmp_path, env, "--record", str(recordings), "--record-limit", "65536")
    try:
        session = running.run(echoed_first)
        written = recordings / f"{session}.cast"
        wait_for(
            lambda: written.exists() and "got:first" in written.read_text(),
            "the recording to hold the output so far",
        )
        os.kill(running.server_pid(), signal.SIGKILL)

        async def after(client: Client) -> list[str]:
            await client.attach(session)
            await client.send_input(b"second\r")
            await output_until(client, b"got:second")
            rows = (await client.capture(session)).rows
            await client.close(session)
            return rows

        rows = wait_for(lambda: _quietly(running, after), "the adopting server")
    finally:
        running.stop()
    first, second = recordings / f"{session}.1.cast", recordings / f"{session}.cast"

    def output_of_cast(path: Path) -> str:
        _header, *events = path.read_text().splitlines()
        return "".join(e[2] for e in map(json.loads, events) if e[1] == "o")

    assert "got:first" in output_of_cast(first) and "got:second" not in output_of_cast(first)
    terminal = HeadlessTerminal(40, 8)
    terminal.feed(output_of_cast(second).encode())
    assert [row.rstrip() for row in terminal.display] == rows
    assert "got:first" in "\n".join(rows) and "got:second" in "\n".join(rows)


def test_an_adopting_server_never_follows_a_link_planted_for_the_recording(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A dangling link at ``<id>.cast`` when the adopting server starts its new file
    is moved aside like a file, never followed: its target is never created."""
    recordings, target = tmp_path / "rec", tmp_path / "elsewhere" / "target"
    target.parent.mkdir()
    running = Serve(tmp_path, env, "--record", str(recordings))
    try:
        session = running.run(echoed_first)
        written = recordings / f"{session}.cast"
        wait_for(
            lambda: written.exists() and "got:first" in written.read_text(), "the first recording"
        )
        server = running.server_pid()
        os.kill(server, signal.SIGSTOP)  # nothing writes the file while it is swapped
        written.unlink()
        written.symlink_to(target)
        os.kill(server, signal.SIGKILL)

        async def after(client: Client) -> bool:
            await client.attach(session)
            await client.send_input(b"second\r")
            await output_until(client, b"got:second")
            await client.close(session)
            return True

        wait_for(lambda: _quietly(running, after), "the adopting server")
    finally:
        running.stop()
    assert not os.path.lexists(target)
    assert not written.is_symlink() and "got:second" in written.read_text()
    assert (recordings / f"{session}.1.cast").is_symlink()  # moved aside, untouched


def test_a_corrupt_record_never_costs_a_live_program_after_a_crash(
    serve: Serve, env: dict[str, str]
) -> None:
    """The adopting server reads each program's record for its last activity: one
    that cannot be read once made it stop the live program. It is skipped."""

    async def start(client: Client) -> tuple[str, int]:
        session = await client.spawn(["sh", "-c", ECHO_LINES])
        await client.list(all=True)  # its record is written
        assert session.process.pid is not None
        return session.id, session.process.pid

    session, pid = serve.run(start)
    with sqlite3.connect(Path(env["PTYVISOR_STATE_DIR"]) / "records.sqlite3") as db:
        db.execute("UPDATE sessions SET identity = '{not json' WHERE id = ?", (session,))
    os.kill(serve.server_pid(), signal.SIGKILL)

    async def adopted(client: Client) -> bool:
        listed = {s.id: s for s in await client.list(all=True)}
        assert listed[session].process.pid == pid and listed[session].process.state == "running"
        await client.attach(session)
        await client.send_input(b"still here\r")
        await output_until(client, b"got:still here")
        return True

    wait_for(lambda: _quietly(serve, adopted), "the adopting server")
    assert alive(pid)
    listed = serve.cli("ls", "--all")
    assert listed.returncode == 0 and session in listed.stdout, listed.stderr
    assert "cannot be adopted" not in serve.err.read_text()


def _quietly(serve: Serve, call: Callable[[Client], Awaitable[T]]) -> T | None:
    """``serve.run(call)``, or None while the server is not back."""
    try:
        return serve.run(call)
    except OSError:
        return None


def test_inferred_activity_keeps_its_source_across_a_crash(serve: Serve) -> None:
    """After a crash the records give the last activity back, with where it came from:
    a shell's progress signal stays `terminal` (lower confidence) for the new server."""

    async def progress(client: Client) -> str:
        script = "printf '\\033]9;4;1;40\\007'; exec cat"
        session = await client.spawn(["sh", "-c", script])

        async def inferred() -> bool:
            listed = {s.id: s for s in await client.list()}
            activity = listed[session.id].activity
            return (activity.phase, activity.source) == ("working", "terminal")

        await poll(inferred)
        return session.id

    session_id = serve.run(progress)
    records = Path(serve.env["PTYVISOR_STATE_DIR"]) / "records.sqlite3"

    def recorded() -> bool:
        with contextlib.closing(sqlite3.connect(records)) as db:
            row = db.execute("SELECT source FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return bool(row == ("terminal",))

    wait_for(recorded, "the records to keep the activity's source")
    os.kill(serve.server_pid(), signal.SIGKILL)

    async def after(client: Client) -> tuple[str, str, str | None]:
        activity = {s.id: s for s in await client.list()}[session_id].activity
        return activity.phase.value, activity.source, activity.reason

    back = wait_for(lambda: _quietly(serve, after), "the adopting server")
    assert back == ("working", "terminal", "40%")


def test_the_server_process_phases_are_one_table() -> None:
    """Every phase takes every event it can meet (a missing one is a bug, raised); the
    paths a server's life takes go where the keeper means them to."""
    from ptyvisor.keeper.keeper import SERVER_TRANSITIONS, ServerPhase

    events = {"ready", "exited", "restart", "stop"}
    for phase, takes in SERVER_TRANSITIONS.items():
        expected = {"start", "stop"} if phase is ServerPhase.BACKING_OFF else events
        assert set(takes) == expected, phase
        assert takes["stop"] is ServerPhase.STOPPING
    life = [("start", "starting"), ("ready", "serving"), ("restart", "restarting"),
            ("exited", "backing off"), ("start", "starting"), ("exited", "backing off"),
            ("stop", "stopping")]  # fmt: skip
    phase = ServerPhase.BACKING_OFF
    for event, after in life:
        phase = SERVER_TRANSITIONS[phase][event]  # type: ignore[index]
        assert phase == after, event


@pytest.mark.parametrize("started", ["as the terminal's own process", "from a shell in it"])
def test_closing_the_terminal_serve_runs_in_stops_no_program(
    tmp_path: Path, env: dict[str, str], started: str
) -> None:
    """A closed terminal or an ended login sends SIGHUP, which is not a stop: the
    programs run on, the next client reaches them, and serve logs to the state
    directory from then on. ``ptyvisor stop`` is the stop: every program ends and
    serve lets go of the state directory."""
    state = Path(env["PTYVISOR_STATE_DIR"])
    serve = [PTYVISOR_BIN, "serve", "--port", "0"]
    shell = ["bash", "--norc", "--noprofile", "-i"]
    master, slave = os.openpty()
    leader = subprocess.Popen(
        ["setsid", "--ctty", *(shell if "shell" in started else serve)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**env, "PS1": "$ "},
    )
    os.close(slave)
    seen = bytearray()
    try:
        if "shell" in started:
            os.write(master, (" ".join(serve) + "\r").encode())

        def address() -> str | None:
            if select.select([master], [], [], 0.1)[0]:
                seen.extend(os.read(master, 65536))
            found = re.search(rb"serving on (\S+)", seen)
            return found.group(1).decode() if found else None

        url = wait_for(address, "serve's address in its terminal")
        keeper = lock_holder(state)
        assert keeper is not None

        async def first(client: Client) -> tuple[str, int]:
            session = await echoed_first(client)
            [summary] = await client.list()
            assert summary.process.pid is not None
            return session, summary.process.pid

        session, program = anyio.run(lambda: _with_client(url, first))
        os.close(master)  # the terminal closes
        master = -1
        if "shell" in started:
            leader.wait(timeout=15)

        async def echoes(client: Client) -> int | None:
            [summary] = await client.list()
            await client.attach(session)
            await client.send_input(b"second\r")
            await output_until(client, b"got:second")
            return summary.process.pid

        assert wait_for(lambda: _reachable(url, echoes), "the program after the hangup") == program
        assert lock_holder(state) == keeper and alive(program)
        assert "the terminal closed; serving on" in (state / "serve.log").read_text()

        stopped = subprocess.run(
            [PTYVISOR_BIN, "stop"], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert (stopped.returncode, stopped.stdout.strip()) == (0, "stopped"), stopped.stderr
        assert lock_holder(state) is None and not alive(program) and not alive(keeper)
        again = subprocess.run(
            [PTYVISOR_BIN, "stop"], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert again.returncode == 1 and "no ptyvisor serve is running" in again.stderr
    finally:
        if master >= 0:
            os.close(master)
        holder = lock_holder(state)
        if holder is not None:
            os.kill(holder, signal.SIGKILL)
        leader.kill()
        leader.wait()


def test_serve_without_the_keeper_takes_a_hangup_as_no_stop_either(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """``serve --no-keeper`` (programs end with it) still ends only on SIGTERM or
    SIGINT: a SIGHUP, as from a closed terminal, leaves it serving its program."""
    proc, _page = start_serve(["--port", "0", "--no-keeper"], env=env, stdout=tmp_path / "out")
    url = (tmp_path / "out").read_text().split("serving on ", 1)[1].split()[0]
    try:
        session = anyio.run(lambda: _with_client(url, echoed_first))
        proc.send_signal(signal.SIGHUP)

        async def echoes(client: Client) -> bool:
            await client.attach(session)
            await client.send_input(b"second\r")
            await output_until(client, b"got:second")
            return True

        assert anyio.run(lambda: _with_client(url, echoes))
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def _with_client(url: str, call: Callable[[Client], Awaitable[T]]) -> T:
    async with Client.connect(url, TOKEN) as client:
        return await call(client)


def _reachable(url: str, call: Callable[[Client], Awaitable[T]]) -> T | None:
    """``call`` through a new connection, or None while the server is away (gone, or
    closing connections for a restart)."""
    try:
        return anyio.run(lambda: _with_client(url, call))
    except (OSError, Disconnected, InvalidStatus):
        return None
    except ExceptionGroup as group:  # refused (503) while one hands over to the next
        if group.split((OSError, Disconnected, InvalidStatus))[1] is not None:
            raise
        return None
