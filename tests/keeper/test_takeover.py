"""Upgrading the keeper in place (keeper/takeover.py, ``ptyvisor restart --upgrade``):
the keeper re-executes itself with the installed code, keeping its pid, its programs
and their terminals, so no program notices and a client replays exactly across it;
an installed version that cannot take over says so and only the server restarts."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import anyio

from ptyvisor.cli.commands import handles
from ptyvisor.client.client import Client, Output
from ptyvisor.keeper import takeover

from ..conftest import TOKEN, alive
from .conftest import COUNTER, Serve, _numbers

SRC = Path(takeover.__file__).resolve().parents[1]


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_the_keeper_replaces_itself_and_no_program_notices(serve: Serve) -> None:
    keeper = serve.proc.pid
    old_server = serve.server_pid()

    async def scenario() -> None:
        async with Client.connect(serve.url, TOKEN) as client:
            session = await client.spawn(["sh", "-c", COUNTER])
            pid = session.process.pid
            assert pid is not None
            await client.attach(session.id, since=0)
            seen = b""
            while len(_numbers(seen)) < 20:
                event = await client.next_event()
                if isinstance(event, Output):
                    seen += event.data
            upgraded = await anyio.to_thread.run_sync(
                lambda: serve.cli("restart", "--upgrade", timeout=90)
            )
            assert (upgraded.returncode, upgraded.stdout.strip()) == (0, "restarted"), upgraded
            # The keeper is the same process running the installed code afresh.
            assert cmdline(keeper).split()[-2:-1] == ["--take-over"], cmdline(keeper)
            assert serve.proc.poll() is None
            assert serve.server_pid() != old_server
            await client.reconnect(resume=True)
            more = b""
            while len(_numbers(seen + more)) < len(_numbers(seen)) + 60:
                event = await client.next_event()
                if isinstance(event, Output):
                    more += event.data
            numbers = _numbers(seen + more)
            assert numbers == list(range(1, len(numbers) + 1)), "nothing lost or twice"
            [summary] = await client.list()
            assert (summary.process.pid, summary.process.state) == (pid, "running")
            assert alive(pid)
            await client.close(session.id)
            assert not alive(pid)  # and the new keeper still owns it: close stops it

    anyio.run(scenario)
    log = serve.err.read_text()
    assert "upgrading in place: re-executing the keeper" in log
    assert f"upgraded in place: this keeper (pid {keeper}) kept 1 programs" in log
    assert serve.stop() == 0  # the upgraded keeper stops as any does


def test_an_installed_version_that_cannot_take_over_changes_nothing(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The installed code is asked first: here a copy of ptyvisor whose keeper state
    version is another says no, so the keeper stays as it is and only the server
    process restarts (with that code), its programs untouched."""
    installed = tmp_path / "installed"
    shutil.copytree(SRC, installed / "ptyvisor", ignore=shutil.ignore_patterns("__pycache__"))
    module = installed / "ptyvisor" / "keeper" / "takeover.py"
    module.write_text(
        module.read_text().replace("ACCEPTS = frozenset({1})", "ACCEPTS = frozenset({2})")
    )
    serve = Serve(tmp_path, {**env, "PYTHONPATH": str(installed)})
    try:
        keeper, old_server = serve.proc.pid, serve.server_pid()
        program = serve.run(lambda client: client.spawn(["sh", "-c", "exec cat"])).process.pid
        assert program is not None
        before = cmdline(keeper)
        upgraded = serve.cli("restart", "--upgrade", timeout=90)
        assert upgraded.returncode == 0, upgraded.stderr
        assert cmdline(keeper) == before and serve.server_pid() != old_server
        assert alive(program)
        said = "takes over from keeper state versions [2], not 1); restarting the server"
        assert (
            f"the installed ptyvisor cannot take over from this keeper (this ptyvisor {said}"
            in (serve.err.read_text())
        )
    finally:
        serve.stop()


def test_a_keeper_that_cannot_upgrade_is_never_sent_the_signal() -> None:
    """An earlier keeper does not catch SIGUSR1, whose default is to exit: `restart
    --upgrade` checks first (SigCgt), and says so instead."""
    catching = "import signal, time; signal.signal(signal.SIGUSR1, lambda *a: None); print(1, flush=True); time.sleep(60)"  # noqa: E501
    with subprocess.Popen([sys.executable, "-c", catching], stdout=subprocess.PIPE) as one:
        assert one.stdout is not None and one.stdout.readline()
        assert handles(one.pid, signal.SIGUSR1) and not handles(one.pid, signal.SIGUSR2)
        one.kill()
    with subprocess.Popen(["sleep", "60"]) as other:
        assert not handles(other.pid, signal.SIGUSR1)
        other.kill()
    assert not handles(2**22 + 1, signal.SIGUSR1)  # no such process


def test_a_state_of_another_version_is_refused_before_anything() -> None:
    assert takeover.main(["--accepts", "1"]) == 0
    assert takeover.main(["--accepts", "7"]) == 1
    state = takeover.State(
        {}, False, False, lock=3, tcp=4, control=None, programs=[], handover=None
    )
    state.version = 7
    try:
        takeover.read(takeover.write(state))
    except ValueError as refused:
        assert "not a keeper state this version takes" in str(refused)
    else:
        raise AssertionError("a state of version 7 was taken")
