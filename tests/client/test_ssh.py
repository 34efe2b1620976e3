"""Servers on other machines through a real OpenSSH server (Debian's openssh-server,
which .ci/run installs): started here on a free loopback port, with its own host key
and an authorized key in a temporary directory, and the client's own ``ssh`` told
about it with ``PTYVISOR_SSH="ssh -F CONFIG"``.

Two host names reach it, by port: ``far`` leads to a server this module starts (the
remote machine's), ``fresh`` to a state directory where none runs, so the first
command there starts one. sshd gives each login a HOME, PATH and ``PTYVISOR_*`` of
its own (``SetEnv``), as another machine would have.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptyvisor
from ptyvisor.client.client import Client, Output
from ptyvisor.client.ssh import Target, parse_target, ssh_argv
from tests.timeouts import scaled

from ..cli import test_commands as cli_tests
from ..cli.test_commands import (
    PTYVISOR,
    Setup,
    clean_env,
    held_hook,
    hook_result,
    run_cli,
    start_server,
    wait_screen,
)
from ..conftest import children, wait_for
from ..server.test_control import BASH
from ..sshd import free_port, local_sshd


@dataclass
class Sshd:
    """The OpenSSH server, and what a client on this machine needs to reach it."""

    config: Path
    far_state: Path
    far_url: str
    fresh_state: Path
    fresh_url: str
    login_state: Path
    login_url: str

    @property
    def env(self) -> dict[str, str]:
        """A client's environment: no token of the far machine, and a wrong local one
        (which must never be what is offered there)."""
        home = self.config.parent / "local-home"
        env = clean_env(home, home / "state")
        env.update(PTYVISOR_SSH=f"ssh -F {self.config}", PTYVISOR_TOKEN="this-machine-only")
        return env


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    base = tmp_path_factory.mktemp("ssh")
    far = start_server(base, clean_env(base / "far-server-home", base / "far-state"))
    fresh_state, fresh_url = base / "fresh-state", f"ws://127.0.0.1:{free_port()}/"
    login_state, login_url = base / "login-state", f"ws://127.0.0.1:{free_port()}/"
    path = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    hosts = {
        name: {"PATH": path, "PTYVISOR_STATE_DIR": str(state), "PTYVISOR_URL": url}
        for name, state, url in (
            ("far", far.state_dir, far.url),
            ("fresh", fresh_state, fresh_url),
            ("login", login_state, login_url),
        )
    }
    try:
        with local_sshd(base, hosts) as config:
            yield Sshd(
                config, far.state_dir, far.url, fresh_state, fresh_url, login_state, login_url
            )
    finally:
        for state in (fresh_state, login_state):
            subprocess.run(
                [PTYVISOR, "stop", "--state-dir", str(state)],
                capture_output=True,
                timeout=60,
                check=False,
            )
        assert far.stop() == 0


class Far(Setup):
    """`Setup`'s helpers, every one through ``ssh://far``."""

    ssh_env: dict[str, str]

    @property
    def url(self) -> str:
        return "ssh://far"

    @property
    def env(self) -> dict[str, str]:
        return self.ssh_env

    def client_call(self, call: Callable[[Client], Any]) -> Any:
        async def go() -> Any:
            async with Client.connect(self.url, None) as client:
                return await call(client)

        return anyio.run(go)


@pytest.fixture
def far(sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Far]:
    """The far machine, for the CLI and for this process's own clients."""
    monkeypatch.setenv("PTYVISOR_SSH", sshd.env["PTYVISOR_SSH"])
    setup = Far(server=None, token="", workdir=tmp_path)  # type: ignore[arg-type]
    setup.ssh_env = sshd.env
    yield setup
    for cleanup in reversed(setup.cleanups):
        cleanup()


# ---------------------------------------------------------------------- the tests


def test_the_cli_works_there_as_here(far: Far) -> None:
    """``run -d``, ``ls``, ``send-keys``, ``wait`` and ``capture`` on the far machine;
    ``-H`` before the command as docker has it, or after it."""
    started = run_cli("-H", "ssh://far", "run", "-d", "--name", "over-there", "--",
                      "sh", "-c", "echo far away; exec cat", env=far.env, timeout=60)  # fmt: skip
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    far.cleanups.append(lambda: far.close_quietly(session))
    listed = json.loads(far.cli("ls", "--json", timeout=60).stdout)
    assert [s["name"] for s in listed if s["id"] == session] == ["over-there"]
    wait_screen(far, session, "far away")
    typed = run_cli("send-keys", session, "-H", "ssh://far", "typed there", "Enter",
                    env=far.env, timeout=60)  # fmt: skip
    assert typed.returncode == 0, typed.stderr
    waited = far.cli("wait", session, "--text", "^typed there$", "--timeout", "60", timeout=90)
    assert waited.returncode == 0, waited.stderr
    assert "typed there" in far.cli("capture", session, timeout=60).stdout


def test_an_answer_goes_through_to_the_hook_there(far: Far) -> None:
    session, row = held_hook(far, BASH)
    ident = row.split(" req-", 1)[1].split()[0]
    answered = far.cli("answer", "req-" + ident, "--session", session, "--allow", timeout=60)
    assert (answered.returncode, answered.stdout) == (0, "answered\n"), answered
    output = json.loads(hook_result(far)["stdout"])
    assert output["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


def test_attach_replays_exactly_across_a_lost_channel(far: Far) -> None:
    """The Python client over ssh: attached from the start, the channel killed midway
    (the ssh process, as a network would drop it), and resumed: every line once."""
    session = far.spawn(
        ["sh", "-c", "i=0; while [ $i -lt 400 ]; do i=$((i+1)); echo line-$i; sleep 0.005; done"]
    )

    async def follow() -> bytes:
        async with Client.connect("ssh://far", None) as client:
            received = bytearray()
            events = client.events()
            await client.attach(session, since=0)
            async for event in events:
                if isinstance(event, Output):
                    received += event.data
                if b"line-100\r\n" in received:
                    break
            assert client._channel is not None
            client._channel.process.kill()  # the channel drops under the client
            await client.reconnect(resume=True)
            async for event in events:
                if isinstance(event, Output):
                    received += event.data
                if b"line-400\r\n" in received:
                    return bytes(received)
        raise AssertionError("the stream ended early")

    received = anyio.run(follow)
    assert received.split(b"\r\n")[:400] == [b"line-%d" % n for n in range(1, 401)]


def test_a_command_there_starts_a_server_when_none_answers(sshd: Sshd) -> None:
    env = sshd.env
    refused = run_cli("ls", "-H", "ssh://fresh", "--no-autostart", env=env, timeout=60)
    assert refused.returncode == 1
    assert refused.stderr.startswith("ptyvisor: cannot reach the server: ssh://fresh: no server")
    first = run_cli("-H", "ssh://fresh", "ls", env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert f"ssh://fresh: started a server on {sshd.fresh_url}" in first.stderr
    assert (sshd.fresh_state / "serve.lock").is_file()
    again = run_cli("-H", "ssh://fresh", "ls", env=env, timeout=60)
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_a_host_that_is_down_or_lacks_ptyvisor_is_one_line(sshd: Sshd, tmp_path: Path) -> None:
    env = sshd.env
    down = run_cli("-H", f"ssh://127.0.0.1:{free_port()}", "ls", env=env, timeout=60)
    assert down.returncode == 1 and len(down.stderr.splitlines()) == 1, down.stderr
    assert "cannot reach the server: ssh://127.0.0.1:" in down.stderr
    lacking = {**env, "PTYVISOR_REMOTE_COMMAND": "no-such-ptyvisor"}
    missing = run_cli("-H", "ssh://far", "ls", env=lacking, timeout=60)
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1, missing.stderr
    assert "no-such-ptyvisor" in missing.stderr and "not found" in missing.stderr


@pytest.mark.parametrize(
    "url",
    ["ssh://-oProxyCommand=x", "ssh://-l@host", "ssh://host/path", "ssh://u:pw@host", "ssh://h:0",
     "ssh://host?x=1", "ssh://ho st", "ssh://host:99999", "ssh://"],
)  # fmt: skip
def test_a_host_or_user_never_reads_as_an_option(url: str) -> None:
    with pytest.raises(ValueError):
        parse_target(url)


def test_what_ssh_is_asked() -> None:
    assert parse_target("ssh://me@example.org:2222") == Target("example.org", "me", 2222)
    assert parse_target("ssh://[::1]") == Target("::1")
    argv = ssh_argv(Target("example.org", "me", 2222), autostart=False)
    assert argv[-3:] == ["--", "example.org", "ptyvisor dial-stdio --no-autostart"]
    assert argv[:4] == ["ssh", "-T", "-e", "none"] and argv[6:8] == ["-l", "me"]


def test_dial_stdio_alone_bridges_to_the_server(sshd: Sshd) -> None:
    """What runs at the far end, run directly: its greeting carries the token of its
    own machine, then the server's bytes follow."""
    env = {**sshd.env, "PTYVISOR_STATE_DIR": str(sshd.far_state)}
    env.pop("PTYVISOR_TOKEN")
    with subprocess.Popen(
        [PTYVISOR, "dial-stdio", "--no-autostart"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**env, "PTYVISOR_URL": sshd.far_url},
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        greeting = json.loads(proc.stdout.readline())
        token = (sshd.far_state / "token").read_text().strip()
        assert greeting["dial_stdio"] == 1 and greeting["token"] == token
        proc.stdin.write(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        proc.stdin.flush()
        assert proc.stdout.readline().startswith(b"HTTP/1.1 ")  # the server's own answer
        proc.stdin.close()  # our end: the server then ends, and so does dial-stdio
        assert proc.wait(timeout=30) == 0


def test_contexts_name_machines_and_ls_shows_them_all(far: Far, sshd: Sshd) -> None:
    env = far.env  # its HOME holds the contexts
    session = far.spawn(["sh", "-c", "echo listed; exec cat"])
    for args in (["add", "far", "ssh://far"], ["add", "down", f"ssh://127.0.0.1:{free_port()}"]):
        added = run_cli("context", *args, env=env)
        assert added.returncode == 0, added.stderr
    shown = run_cli("context", "ls", env=env).stdout.splitlines()
    assert [line.split() for line in shown] == [
        ["NAME", "URL"], ["*", "default", "ws://127.0.0.1:7733/"], ["down", shown[2].split()[1]],
        ["far", "ssh://far"],
    ]  # fmt: skip
    by_flag = run_cli("--context", "far", "ls", "--json", env=env, timeout=60)
    assert session in by_flag.stdout, by_flag.stderr
    assert run_cli("context", "use", "far", env=env).returncode == 0
    in_use = run_cli("ls", "--json", env=env, timeout=60)
    assert session in in_use.stdout, in_use.stderr
    here = run_cli("ls", "--no-autostart", env={**env, "PTYVISOR_CONTEXT": "default"})
    assert here.returncode == 1 and "7733" in here.stderr  # this machine's: none runs here

    everywhere = run_cli("ls", "--all-contexts", env=env, timeout=90)
    assert everywhere.returncode == 0, everywhere.stderr
    lines = everywhere.stdout.splitlines()
    assert lines[0].split()[:2] == ["HOST", "ID"]
    assert any(line.split()[:2] == ["far", session] for line in lines)
    assert any(line.startswith("default  (cannot be reached: ") for line in lines)
    assert any(line.startswith("down  (cannot be reached: ") for line in lines)

    async def by_name() -> list[str]:
        async with ptyvisor.connect("far") as remote:
            return [s.id for s in await remote.sessions()]

    os.environ["XDG_CONFIG_HOME"] = str(Path(env["HOME"]) / ".config")
    try:
        assert session in anyio.run(by_name)  # the Python API takes a context's name
    finally:
        del os.environ["XDG_CONFIG_HOME"]
    unknown = run_cli("--context", "nowhere", "ls", env=env)
    assert (
        unknown.returncode == 1
        and unknown.stderr == "ptyvisor: no context 'nowhere' (ptyvisor context ls)\n"
    )


def test_a_serve_started_in_an_ssh_login_outlives_it(sshd: Sshd) -> None:
    """Logging out of the SSH session ``serve`` was started from hangs up its terminal
    (SIGHUP), which is not a stop: the program runs on, with the same pid, and the
    next client reaches it."""
    env = sshd.env
    port = str(urlsplit(sshd.login_url).port)
    login = subprocess.Popen(
        ["ssh", "-F", str(sshd.config), "-tt", "login", f"ptyvisor serve --port {port}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert login.stdout is not None
        os.set_blocking(login.stdout.fileno(), False)
        seen = bytearray()

        def serving() -> bool:
            with contextlib.suppress(BlockingIOError, TypeError):
                seen.extend(login.stdout.read() or b"")  # type: ignore[union-attr]
            assert login.poll() is None, seen.decode(errors="replace")
            return b"serving on" in seen

        wait_for(serving, "serve in the SSH login")
        started = run_cli("-H", "ssh://login", "run", "-d", "--", "sh", "-c", "echo up; exec cat",
                          env=env, timeout=60)  # fmt: skip
        assert started.returncode == 0, started.stderr
        session = started.stdout.strip()

        def pid() -> int:
            listed = run_cli("-H", "ssh://login", "ls", "--json", "--no-autostart",
                             env=env, timeout=60)  # fmt: skip
            assert listed.returncode == 0, listed.stderr
            [summary] = json.loads(listed.stdout)
            assert summary["id"] == session and summary["process"]["state"] == "running"
            return int(summary["process"]["pid"])

        before = pid()
        login.kill()  # the connection ends: sshd hangs up the login's terminal
        login.wait(timeout=30)
        log = sshd.login_state / "serve.log"
        wait_for(lambda: log.exists() and "the terminal closed" in log.read_text(), "SIGHUP")
        assert pid() == before
        typed = run_cli("-H", "ssh://login", "send-keys", session, "still here", "Enter",
                        "--no-autostart", env=env, timeout=60)  # fmt: skip
        assert typed.returncode == 0, typed.stderr
        waited = run_cli("-H", "ssh://login", "wait", session, "--text", "^still here$",
                         "--timeout", "60", "--no-autostart", env=env, timeout=90)  # fmt: skip
        assert waited.returncode == 0, waited.stderr
    finally:
        login.kill()
        login.wait()
        for pipe in (login.stdin, login.stdout):
            if pipe is not None:
                pipe.close()


@pytest.mark.parametrize(
    "same_as_here",
    [
        cli_tests.test_attach_types_detaches_and_reattaches_to_the_screen,
        cli_tests.test_send_keys_follows_the_programs_modes,
        cli_tests.test_wait_for_phase_text_exit_and_quiet,
        cli_tests.test_capture_plain_coloured_and_with_scrollback,
    ],
    ids=lambda test: test.__name__.removeprefix("test_"),
)
def test_what_the_cli_does_here_it_does_there(
    far: Far, same_as_here: Callable[[Setup], None]
) -> None:
    """The CLI's own tests of this machine's server, every command through ssh://."""
    same_as_here(far)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60).map(lambda rest: "ssh://" + rest))
def test_any_url_gives_a_safe_target_or_is_refused(url: str) -> None:
    try:
        target = parse_target(url)
    except ValueError:
        return
    for part in (target.host, target.user or "x"):
        assert not part.startswith("-") and part.isprintable() and " " not in part
    argv = ssh_argv(target)
    assert argv[argv.index("--") + 1] == target.host
    assert target.port is None or 0 < target.port < 65536


def test_a_caller_that_gives_up_on_a_slow_host_leaves_no_ssh_behind(
    far: Far, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A timeout around connecting (``ls --all-contexts`` has one per host) ends the
    wait at once, and the ssh that was still connecting is ended, not left running."""
    # Never greets; the comment swallows " dial-stdio", so nothing there starts a server.
    monkeypatch.setenv("PTYVISOR_REMOTE_COMMAND", "sleep 30 #")

    def our_ssh() -> list[int]:
        return [pid for pid in children(os.getpid()) if _cmdline(pid).startswith(b"ssh\0")]

    async def connect() -> None:
        async with Client.connect("ssh://far", None):
            raise AssertionError("connected to a host that never greets")

    async def give_up() -> float:
        async with anyio.create_task_group() as tg:
            tg.start_soon(connect)
            with anyio.fail_after(scaled(20)):
                while not our_ssh():  # noqa: ASYNC110 - a process, no event to wait on
                    await anyio.sleep(0.02)
            started = time.monotonic()
            tg.cancel_scope.cancel()  # the caller gives up while ssh is connecting
        return time.monotonic() - started

    assert anyio.run(give_up) < 2
    wait_for(lambda: not our_ssh(), "the abandoned ssh to end", timeout=3)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
