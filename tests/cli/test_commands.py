"""The ``ptyvisor`` command line end to end: the installed console script, a real
server process, real PTYs for ``run`` and ``attach``. Nothing is mocked."""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import secrets
import select
import shlex
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import ptyprocess
import pytest

from ptyvisor.cli.grammar import build_parser
from ptyvisor.cli.tty_attach import parse_key
from ptyvisor.client.client import Client, Output
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.wire.protocol import Captured, SessionStats, SessionSummary
from tests.timeouts import scaled

from ..conftest import ECHO_READS, start_serve, wait_for
from ..server.test_control import ASK, BASH, WRAPPER

PTYVISOR = str(Path(sys.executable).parent / "ptyvisor")
DETACH = b"\x1d"  # Ctrl-]
HEADER = [
    "ID", "NAME", "PROCESS", "ACTIVITY", "FOR", "AGENT", "REASON", "PENDING", "QUEUED",
    "CLIENTS", "COMMAND",
]  # fmt: skip
SERVING = re.compile(r"^ptyvisor \S+ serving on (ws://\S+)$")

T = TypeVar("T")


# ---------------------------------------------------------------------- helpers


def clean_env(home: Path, state_dir: Path) -> dict[str, str]:
    """The test's environment minus anything ptyvisor reads, pointed at tmp dirs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        PTYVISOR_STATE_DIR=str(state_dir),
        TERM="xterm-256color",
    )
    home.mkdir(parents=True, exist_ok=True)
    return env


@dataclass
class ServerProcess:
    """``ptyvisor serve`` in a subprocess, its stdout/stderr captured to files."""

    proc: subprocess.Popen[bytes]
    url: str
    state_dir: Path
    env: dict[str, str]
    stdout_path: Path
    stderr_path: Path

    @property
    def port(self) -> int:
        port = urlsplit(self.url).port
        assert port is not None
        return port

    def output(self) -> str:
        return self.stdout_path.read_text() + self.stderr_path.read_text()

    def stop(self) -> int:
        """SIGTERM; the server must exit by itself within a few seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=8)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("server did not exit within 8 s of SIGTERM") from None


def start_server(
    base: Path, env: dict[str, str], *extra: str, run_name: str = "serve"
) -> ServerProcess:
    state_dir = Path(env["PTYVISOR_STATE_DIR"])
    stdout_path = base / f"{run_name}.stdout"
    stderr_path = base / f"{run_name}.stderr"
    proc, _ = start_serve(
        ["--port", "0", "--state-dir", str(state_dir), *extra],
        env=env,
        stdout=stdout_path,
        stderr=stderr_path,
    )
    line = stdout_path.read_text().split("\n", 1)[0]
    match = SERVING.match(line)
    assert match, f"unexpected first line: {line!r}"
    return ServerProcess(proc, match.group(1), state_dir, env, stdout_path, stderr_path)


@dataclass
class Setup:
    server: ServerProcess
    token: str
    workdir: Path
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def env(self) -> dict[str, str]:
        """Environment for client commands: the token comes from PTYVISOR_TOKEN."""
        return {**self.server.env, "PTYVISOR_TOKEN": self.token}

    def cli(self, *args: str, timeout: float = 15) -> subprocess.CompletedProcess[str]:
        """A client subcommand with ``--url`` (and the token from the environment)."""
        command, *rest = args
        return run_cli(command, "--url", self.url, *rest, env=self.env, timeout=timeout)

    def ls_json(self) -> list[dict[str, Any]]:
        result = self.cli("ls", "--json")
        assert result.returncode == 0, result.stderr
        sessions = json.loads(result.stdout)
        assert isinstance(sessions, list)
        return sessions

    def ls_rows(self) -> dict[str, str]:
        """``ls`` as a table: session id -> its whole row."""
        result = self.cli("ls")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].split() == HEADER
        return {line.split()[0]: line for line in lines[1:]}

    def client_call(self, call: Callable[[Client], Any]) -> Any:
        """Run ``await call(client)`` on a fresh Python client connection."""

        async def go() -> Any:
            async with Client.connect(self.url, self.token) as client:
                return await call(client)

        return anyio.run(go)

    def spawn(self, argv: list[str], *, cols: int = 80, rows: int = 24) -> str:
        async def spawn(client: Client) -> SessionSummary:
            return await client.spawn(argv, cwd=str(self.workdir), cols=cols, rows=rows)

        summary: SessionSummary = self.client_call(spawn)
        self.cleanups.append(lambda: self.close_quietly(summary.id))
        return summary.id

    def kept_output(self, session_id: str) -> tuple[bytes, SessionStats]:
        """Everything the server's log holds of the session, and its counters."""

        async def read(client: Client) -> tuple[bytes, SessionStats]:
            stats = await client.stats(session_id)
            await client.attach(session_id, since=0)
            output = b""
            with anyio.move_on_after(scaled(5)):
                while len(output) < stats.output_bytes:
                    event = await client.next_event()
                    output += event.data if isinstance(event, Output) else b""
            return output, stats

        result: tuple[bytes, SessionStats] = self.client_call(read)
        return result

    def summary(self, session_id: str) -> SessionSummary | None:
        async def find(client: Client) -> SessionSummary | None:
            return next((s for s in await client.list() if s.id == session_id), None)

        result: SessionSummary | None = self.client_call(find)
        return result

    def wait_summary(
        self, session_id: str, check: Callable[[SessionSummary], bool], what: str
    ) -> SessionSummary:
        def probe() -> SessionSummary | None:
            summary = self.summary(session_id)
            return summary if summary is not None and check(summary) else None

        return wait_for(probe, what)

    def close_quietly(self, session_id: str) -> None:
        async def close(client: Client) -> None:
            if any(s.id == session_id for s in await client.list()):
                await client.close(session_id)

        with contextlib.suppress(Exception):
            self.client_call(close)

    def term(self, *args: str, rows: int = 24, cols: int = 80) -> Term:
        """A client subcommand under a real PTY of the given size."""
        command, *rest = args
        term = Term([PTYVISOR, command, "--url", self.url, *rest], self.env, rows, cols)
        self.cleanups.append(term.kill)
        return term


def run_cli(
    *args: str, env: dict[str, str], timeout: float = 15
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PTYVISOR, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class Term:
    """A process on the slave side of a real PTY; we play the terminal on the master."""

    def __init__(self, argv: list[str], env: dict[str, str], rows: int, cols: int) -> None:
        self.proc = ptyprocess.PtyProcess.spawn(argv, env=env, dimensions=(rows, cols))
        self.size = (rows, cols)
        self.alt_screen = "--no-alt-screen" not in argv
        self.output = b""
        self.eof = False

    def _read(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or self.eof:
            return
        readable, _, _ = select.select([self.proc.fd], [], [], min(remaining, 0.1))
        if not readable:
            return
        try:
            data = os.read(self.proc.fd, 65536)
        except OSError:  # EIO: the slave side is closed
            data = b""
        if data:
            self.output += data
        else:
            self.eof = True

    def expect(self, needle: bytes, *, timeout: float = 10, start: int = 0) -> int:
        """Read until ``needle`` appears in the output after ``start``; its end offset."""
        deadline = time.monotonic() + scaled(timeout)
        while (found := self.output.find(needle, start)) < 0:
            if self.eof or time.monotonic() > deadline:
                raise AssertionError(f"no {needle!r} in output: {self.output[-3000:]!r}")
            self._read(deadline)
        return found + len(needle)

    def read_to_eof(self, *, timeout: float = 10) -> bytes:
        deadline = time.monotonic() + scaled(timeout)
        while not self.eof:
            if time.monotonic() > deadline:
                raise AssertionError(f"no EOF; output so far: {self.output[-3000:]!r}")
            self._read(deadline)
        return self.output

    def attached(self) -> None:
        """Wait for the first screen: from then on the terminal is raw and input is read."""
        self.expect(b"\x1b[!p" if self.alt_screen else b"\x1bc")

    def terminal(self, shell_screen: bytes = b"") -> HeadlessTerminal:
        """A terminal of this size (alternate screen and all) after the output so far,
        its screen holding ``shell_screen`` before the command started."""
        rows, cols = self.size
        terminal = HeadlessTerminal(cols, rows)
        terminal.feed(shell_screen + self.output)
        return terminal

    def screen(self, shell_screen: bytes = b"") -> str:
        """What a terminal of this size shows after all the output so far."""
        return "\n".join(line.rstrip() for line in self.terminal(shell_screen).display)

    def write(self, data: bytes) -> None:
        os.write(self.proc.fd, data)

    def wait(self, *, timeout: float = 10) -> int:
        """The exit status, after reading everything the process wrote."""
        self.read_to_eof(timeout=timeout)
        wait_for(lambda: not self.proc.isalive(), "the process to exit", timeout=timeout)
        assert self.proc.signalstatus is None, f"killed by signal {self.proc.signalstatus}"
        status: int = self.proc.exitstatus
        return status

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            if self.proc.isalive():
                self.proc.kill(signal.SIGKILL)
                self.proc.wait()
        with contextlib.suppress(Exception):
            self.proc.close(force=True)


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    """One server for the session-level tests, given its token with ``--token``."""
    base = tmp_path_factory.mktemp("cli")
    token = "cli-" + secrets.token_urlsafe(24)
    env = clean_env(base / "home", base / "state")
    server = start_server(base, env, "--token", token)
    try:
        yield server, token
    finally:
        code = server.stop()
    assert code == 0, server.stderr_path.read_text()[-2000:]
    # Only the printed page URL carries the token; no log line does.
    assert token not in server.stderr_path.read_text()
    assert server.stdout_path.read_text().count(token) == 1


@pytest.fixture
def setup(module_server: tuple[ServerProcess, str], tmp_path: Path) -> Iterator[Setup]:
    server, token = module_server
    assert server.proc.poll() is None, "the server died"
    current = Setup(server, token, tmp_path)
    yield current
    for cleanup in reversed(current.cleanups):
        cleanup()


def in_shell(*argv: str) -> str:
    return shlex.join(argv)


# ---------------------------------------------------------------------- serve and the token


def listening_addresses(port: int) -> list[str]:
    """Local addresses (hex, as in /proc/net/tcp*) of sockets listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as handle:
            for line in handle.readlines()[1:]:
                fields = line.split()
                address, _, hex_port = fields[1].partition(":")
                if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                    found.append(address)
    return found


def test_serve_token_file_loopback_and_restart(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    env = clean_env(tmp_path / "home", state_dir)
    server = start_server(tmp_path, env, run_name="first")
    outputs: list[str] = []
    try:
        assert server.url == f"ws://127.0.0.1:{server.port}/"

        # A 0700 state dir holding a 0600 token.
        assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
        token_file = state_dir / "token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        assert len(token) >= 32

        # Listening on loopback only.
        with socket.create_connection(("127.0.0.1", server.port), timeout=5):
            pass
        if Path("/proc/net/tcp").exists():
            assert listening_addresses(server.port) == ["0100007F"]  # 127.0.0.1, nothing else

        # A client finds the stored token by itself (PTYVISOR_STATE_DIR, no PTYVISOR_TOKEN).
        listed = run_cli("ls", "--url", server.url, env=env)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.split() == HEADER
        outputs += [listed.stdout, listed.stderr]

        # A wrong token is refused with a clear message and status 1.
        wrong = "wrong-" + secrets.token_hex(8)
        refused = run_cli("ls", "--url", server.url, "--token", wrong, env=env)
        assert refused.returncode == 1
        assert refused.stdout == ""
        assert "refused" in refused.stderr
        assert "token" in refused.stderr
        assert "Traceback" not in refused.stderr
        outputs += [refused.stdout, refused.stderr]
        # The page URL (printed once, like Jupyter's) logs a browser in; visiting it
        # and the auth check must not put the token in any log line.
        stdout = server.stdout_path.read_text()
        page = f"page: http://127.0.0.1:{server.port}/?token={token}"
        assert stdout.splitlines().count(page) == 1, stdout
        assert stdout.count(token) == 1
        http_port = server.port
        for path, headers in [
            (f"/?token={token}", {}),
            (f"/?token={wrong}", {}),
            ("/api/auth", {"Authorization": f"Bearer {token}"}),
        ]:
            connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=5)
            connection.request("GET", path, headers=headers)
            connection.getresponse().read()
            connection.close()
    finally:
        assert server.stop() == 0
    logs = [server.stderr_path.read_text()]
    assert "serving on" in server.output()

    # A restart keeps the token, and the same client still gets in.
    server = start_server(tmp_path, env, run_name="second")
    try:
        assert (state_dir / "token").read_text().strip() == token
        listed = run_cli("ls", "--url", server.url, "--token", token, env=env)
        assert listed.returncode == 0, listed.stderr
        outputs += [listed.stdout, listed.stderr]
    finally:
        assert server.stop() == 0
    logs.append(server.stderr_path.read_text())

    for text in outputs + logs:
        assert token not in text
    for text in logs:
        assert wrong not in text


def test_unreachable_server_is_a_clean_error(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", tmp_path / "state")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"ws://127.0.0.1:{port}/"
    result = run_cli("ls", "--url", url, "--token", "x", "--no-autostart", env=env)
    assert result.returncode == 1
    assert "cannot reach the server" in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------- ls, kill, close


def test_ls_table_and_json(setup: Setup) -> None:
    live = setup.spawn(["cat"])
    ready = setup.spawn(
        ["sh", "-c", in_shell(PTYVISOR, "emit", "activity", "waiting") + "; exec cat"]
    )
    setup.wait_summary(ready, lambda s: s.activity.phase.value == "waiting", "the waiting report")

    rows = setup.ls_rows()
    blank = r"-\s+-\s+-\s+-"  # agent, reason, pending, queued
    assert re.search(rf"^{live}\s+cat\s+running\s+Live\s+\d+s\s+{blank}\s+0\s+cat$", rows[live])
    assert re.search(rf"^{ready}\s+sh\s+running\s+Ready\s+\d+s\s+{blank}\s+0\s+sh -c ", rows[ready])

    sessions = {s["id"]: s for s in setup.ls_json()}
    assert sessions[live]["argv"] == ["cat"]
    assert sessions[live]["name"] == "cat"
    assert sessions[live]["process"]["state"] == "running"
    assert sessions[live]["activity"]["phase"] == "unavailable"
    assert sessions[ready]["activity"]["phase"] == "waiting"
    assert sessions[ready]["cwd"] == str(setup.workdir)
    # Every summary round-trips through the protocol model.
    for raw in sessions.values():
        SessionSummary.model_validate(raw)


def test_ls_shows_agent_reason_queued_and_fits_the_terminal(setup: Setup) -> None:
    script = in_shell(
        PTYVISOR, "emit", "activity", "working", "--agent", "tester", "--reason", "editing x.py"
    )
    busy = setup.spawn(["sh", "-c", script + "; exec cat"])
    setup.wait_summary(busy, lambda s: s.activity.phase.value == "working", "working")
    assert setup.cli("send", busy, "then stop").returncode == 0
    row = setup.ls_rows()[busy]
    assert re.search(r"\s+Working\s+\d+s\s+tester\s+editing x\.py\s+-\s+yes\s+0\s+sh -c ", row)
    # COMMAND is shell-quoted: the script is one word.
    assert row.endswith("sh -c " + shlex.quote(script + "; exec cat")), row
    # On a terminal, rows are cut to its width.
    narrow = setup.term("ls", cols=60)
    assert narrow.wait() == 0
    lines = [line for line in narrow.screen().splitlines() if line.strip()]
    assert lines[0].startswith("ID") and all(len(line) <= 60 for line in lines), lines
    assert any(line.endswith("…") for line in lines), lines


HOSTILE_NAME = "evil\x1b]52;c;cm0gLXJm\x07\x9b2J\x1b]8;;http://x/\x1b\\"
HOSTILE_REASON = "429 \x1b[2J\x1b[Hall good\u202e\nforged line"


def test_nothing_a_session_says_reaches_the_terminal_of_whoever_runs_the_cli(
    setup: Setup,
) -> None:
    """Names any client may set and reasons an agent (or a provider's error body)
    reports are shown, never sent: ``ls``, ``ls --all``, ``events`` and the error
    listing candidates print their control characters as escapes."""
    script = in_shell(PTYVISOR, "emit", "activity", "failed", "--reason", HOSTILE_REASON)
    first = setup.spawn(["sh", "-c", script + "; exec cat"])
    second = setup.spawn(["cat"])
    setup.wait_summary(first, lambda s: s.activity.phase.value == "failed", "the failure")
    for session in (first, second):
        renamed = setup.cli("rename", session, HOSTILE_NAME)
        assert renamed.returncode == 0, renamed.stderr
    named = setup.cli("run", "-d", "--name", HOSTILE_NAME, "--", "sleep", "600")
    assert named.returncode == 0, named.stderr
    setup.cleanups.append(lambda: setup.close_quietly(named.stdout.strip()))
    outputs = {
        "ls": setup.cli("ls"),
        "ls --all": setup.cli("ls", "--all"),
        "events": setup.cli("events", first),
        "ambiguous": setup.cli("kill", HOSTILE_NAME),
    }
    assert outputs["ambiguous"].returncode == 1
    for what, result in outputs.items():
        text = result.stdout + result.stderr
        controls = [c for c in text if c != "\n" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)]
        assert controls == [] and "\u202e" not in text, (what, text)
    assert "evil\\x1b]52;c;" in outputs["ls"].stdout  # shown, not sent
    assert "\\x1b[2J" in outputs["events"].stdout
    assert outputs["ambiguous"].stderr.count("\n") == 1  # one line, whatever the names
    # The table keeps one row per session.
    assert {first, second} <= set(setup.ls_rows())
    # serve's log named it when it started: shown there too, on its one line.
    log = setup.server.stderr_path.read_text()
    assert "evil\\x1b]52" in log
    assert not [c for c in log if c != "\n" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)]


# ---------------------------------------------------------------------- answer


def held_hook(setup: Setup, payload: dict[str, Any]) -> tuple[str, str]:
    """A session holding a real Claude hook on the control socket: (session, pending row)."""
    (setup.workdir / "payload.json").write_text(json.dumps(payload))
    (setup.workdir / "wrap.py").write_text(WRAPPER)
    session = setup.spawn(["sh", "-c", f"setsid {sys.executable} wrap.py claude-code & read x"])

    def pending_row() -> str | None:
        row = setup.ls_rows().get(session, "")
        return row if " req-" in row else None

    row = wait_for(pending_row, "the pending row")
    prefix = row.split(" req-", 1)[1].split()[0]

    def held() -> bool:
        # An answer that never fits: gone until the hook's request is held, then bad.
        probe = setup.cli("answer", "req-" + prefix, "--suggestion", "99")
        assert probe.returncode == 1, probe
        return "goes only with" in probe.stderr

    wait_for(held, "the held request")
    return session, row


def hook_result(setup: Setup) -> dict[str, Any]:
    path = setup.workdir / "result.json"
    result: dict[str, Any] = wait_for(
        lambda: json.loads(path.read_text()) if path.exists() else None, "the hook's result"
    )
    return result


def test_answer_allows_from_the_cli_and_ls_shows_it_pending(setup: Setup) -> None:
    session, row = held_hook(setup, BASH)
    assert re.search(r"\s+req-[0-9a-f]{8} approval: Bash\s+-\s+0\s+sh -c ", row), row
    ident = row.split(" req-", 1)[1].split()[0]
    answered = setup.cli("answer", "req-" + ident[:4], "--session", session, "--allow")
    assert (answered.returncode, answered.stdout) == (0, "answered\n"), answered
    output = json.loads(hook_result(setup)["stdout"])
    assert output["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    again = setup.cli("answer", "req-" + ident, "--deny")
    assert again.returncode == 1
    assert "is not waiting" in again.stderr


def test_answer_questions_and_bad_choices_from_the_cli(setup: Setup) -> None:
    _, row = held_hook(setup, ASK)
    assert "question: Which colour?" in row, row
    ident = "req-" + row.split(" req-", 1)[1].split()[0]
    bad = setup.cli("answer", ident, "--choose", "q0=Green", "--choose", "q1=A")
    assert bad.returncode == 1
    assert "'Green' is not an option of question 'q0'" in bad.stderr, bad.stderr
    usage = setup.cli("answer", ident, "--choose", "q0")
    assert (usage.returncode, "Q=LABEL" in usage.stderr) == (2, True), usage
    answered = setup.cli(
        "answer", ident, "--text", "q0=Purple", "--choose", "q1=A", "--choose", "q1=C"
    )
    assert answered.returncode == 0, answered.stderr
    output = json.loads(hook_result(setup)["stdout"])
    updated = output["hookSpecificOutput"]["decision"]["updatedInput"]
    assert updated["answers"] == {"Which colour?": "Purple", "Which letters?": "A, C"}


def test_answer_denies_with_a_message(setup: Setup) -> None:
    _, row = held_hook(setup, BASH)
    ident = "req-" + row.split(" req-", 1)[1].split()[0]
    assert setup.cli("answer", ident, "--deny", "--message", "not today").returncode == 0
    output = json.loads(hook_result(setup)["stdout"])
    decision = output["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "deny", "message": "not today"}


def test_send_and_unsend_a_message(setup: Setup) -> None:
    idle = setup.spawn(["cat"])
    refused = setup.cli("send", idle, "hello")
    assert refused.returncode == 1
    assert "is not running a turn" in refused.stderr
    busy = setup.spawn(
        ["sh", "-c", in_shell(PTYVISOR, "emit", "activity", "working") + "; exec cat"]
    )
    setup.wait_summary(busy, lambda s: s.activity.phase.value == "working", "working")
    sent = setup.cli("send", busy, "then run the tests")
    assert (sent.returncode, sent.stdout) == (0, "queued\n"), sent.stderr
    sessions = {s["id"]: s for s in setup.ls_json()}
    assert sessions[busy]["queued_message"] == "then run the tests"
    assert sessions[idle]["queued_message"] is None
    assert setup.cli("unsend", busy).returncode == 0
    assert setup.summary(busy).queued_message is None  # type: ignore[union-attr]


def test_kill_then_close(setup: Setup) -> None:
    session = setup.spawn(["cat"])
    killed = setup.cli("kill", session)
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout == ""
    setup.wait_summary(session, lambda s: s.process.state == "exited", "the program to exit")

    row = setup.ls_rows()[session]
    assert re.search(rf"^{session}\s+cat\s+killed by SIGHUP\s+Stopped\s", row), row
    summary = next(s for s in setup.ls_json() if s["id"] == session)
    assert summary["process"]["signal"] == signal.SIGHUP
    assert summary["activity"]["phase"] == "stopped"  # asked for: not a failure
    assert summary["activity"]["reason"] == "killed"

    closed = setup.cli("close", session)
    assert closed.returncode == 0, closed.stderr
    assert session not in {s["id"] for s in setup.ls_json()}


@pytest.mark.parametrize("command", ["kill", "close"])
def test_unknown_session_is_an_error(setup: Setup, command: str) -> None:
    result = setup.cli(command, "snosuchid")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip() == "ptyvisor: no session 'snosuchid' (there are none)"


def test_attach_unknown_session_is_an_error(setup: Setup) -> None:
    term = setup.term("attach", "snosuchid")
    assert term.wait() == 1
    assert b"no session 'snosuchid'" in term.output
    assert b"Traceback" not in term.output


# ---------------------------------------------------------------------- run


def test_run_passes_output_and_exit_status(setup: Setup) -> None:
    script = "echo hello-from-run; stty size; exit 3"
    term = setup.term("run", "--name", "three", "--", "sh", "-c", script, rows=27, cols=91)
    assert term.wait() == 3
    screen = term.screen()
    assert "hello-from-run\n27 91\n" in screen, term.output  # spawned at the size of its terminal
    assert b"Traceback" not in term.output

    named = [s for s in setup.ls_json() if s["name"] == "three"]
    assert len(named) == 1
    setup.cleanups.append(lambda: setup.close_quietly(named[0]["id"]))
    assert named[0]["process"]["state"] == "exited"
    assert named[0]["process"]["exit_code"] == 3
    row = setup.ls_rows()[named[0]["id"]]
    assert re.search(r"\s+three\s+exited 3\s+Failed\s", row), row


def test_run_detach_leaves_named_session_running(setup: Setup) -> None:
    name = "n-" + secrets.token_hex(3)
    term = setup.term("run", "--name", name, "--", "sh", "-c", "echo run-started; exec cat")
    term.expect(b"run-started")
    term.write(DETACH)
    assert term.wait() == 0
    match = re.search(rb"\[detached from (s[0-9a-f]+);", term.output)
    assert match, term.output
    session = match.group(1).decode()
    setup.cleanups.append(lambda: setup.close_quietly(session))

    row = setup.ls_rows()[session]
    assert re.search(rf"^{session}\s+{name}\s+running\s+Live\s", row), row


@pytest.mark.parametrize("command", [["run", "--", "cat"], ["attach", "sanysession"]])
def test_run_and_attach_need_a_terminal(setup: Setup, command: list[str]) -> None:
    before = {s["id"] for s in setup.ls_json()}
    result = setup.cli(*command)  # stdin is /dev/null
    assert result.returncode == 2
    assert result.stderr == f"ptyvisor {command[0]}: standard input is not a terminal\n"
    assert {s["id"] for s in setup.ls_json()} == before  # no session left behind


# ---------------------------------------------------------------------- attach


def test_attach_types_detaches_and_reattaches_to_the_screen(setup: Setup) -> None:
    session = setup.spawn(
        ["sh", "-c", "echo before-attach; while read line; do echo got:$line; done"]
    )
    setup.wait_summary(session, lambda s: s.process.state == "running", "the session")

    first = setup.term("attach", session)
    first.expect(b"before-attach")  # the snapshot of what was printed before
    first.write(b"typed-text\r")
    first.expect(b"got:typed-text")
    first.write(DETACH)
    assert first.wait() == 0
    assert f"[detached from {session}; `ptyvisor attach {session}` to return]".encode() in (
        first.output
    )

    summary = setup.summary(session)
    assert summary is not None
    assert summary.process.state == "running"
    assert re.search(rf"^{session}\s+sh\s+running\s", setup.ls_rows()[session])

    second = setup.term("attach", session)
    offset = second.expect(b"before-attach")
    second.expect(b"got:typed-text", start=offset)  # the earlier screen, drawn again
    second.write(b"again\r")
    second.expect(b"got:again")
    second.write(DETACH)
    assert second.wait() == 0


def test_attach_ends_with_the_program_exit_status(setup: Setup) -> None:
    session = setup.spawn(["sh", "-c", "read line; echo bye:$line; exit 5"])
    term = setup.term("attach", session)
    term.attached()
    term.write(b"now\r")
    assert term.wait() == 5, term.output[-3000:]
    # CI once saw the echo of "now" and the exit, and neither the line after the echo
    # nor a server-side screen with it: what the server kept says where it was lost.
    if b"bye:now" not in term.output:
        kept, stats = setup.kept_output(session)
        pytest.fail(f"terminal: {term.output[-3000:]!r}\nserver kept: {kept!r}\n{stats!r}")

    # Attaching to a program that has already exited shows its screen and its status.
    again = setup.term("attach", session)
    assert again.wait() == 5
    assert b"bye:now" in again.output


def test_attach_forwards_terminal_size(setup: Setup) -> None:
    session = setup.spawn(
        ["sh", "-c", "while read line; do echo size:$(stty size):end; done"], cols=80, rows=24
    )
    term = setup.term("attach", session, rows=33, cols=101)
    term.attached()
    # The size at start goes with the attach (nobody else holds one): the first query sees it.
    term.write(b"\r")
    term.expect(b"size:33 101:end")

    term.proc.setwinsize(40, 120)  # SIGWINCH to the attach process

    def resized() -> bool:
        term.write(b"\r")
        with contextlib.suppress(AssertionError):
            term.expect(b"size:40 120:end", timeout=0.3)
            return True
        return False

    wait_for(resized, "the new size to reach the program")
    summary = setup.summary(session)
    assert summary is not None
    assert (summary.size.cols, summary.size.rows) == (120, 40)
    term.write(DETACH)
    assert term.wait() == 0


def test_attach_takes_the_size_back_with_its_first_key(setup: Setup) -> None:
    """Two terminals attached to one session: the program has the size of the one
    that typed last (attaching alone takes nothing); a --view-only one never types."""
    session = setup.spawn(
        ["sh", "-c", "while read line; do echo size:$(stty size):$line; done"], cols=80, rows=24
    )
    big = setup.term("attach", session, rows=33, cols=101)
    big.attached()
    big.write(b"big1\r")
    big.expect(b"size:33 101:big1")
    small = setup.term("attach", session, rows=20, cols=60)
    small.attached()
    summary = setup.summary(session)
    assert summary is not None and (summary.size.cols, summary.size.rows) == (101, 33)
    small.write(b"small1\r")
    small.expect(b"size:20 60:small1")
    big.write(b"big2\r")
    big.expect(b"size:33 101:big2")
    watcher = setup.term("attach", session, "--view-only", rows=10, cols=40)
    watcher.attached()
    watcher.write(b"watcher\r")
    watcher.expect(b"watching only")
    big.write(b"big3\r")
    watcher.expect(b"size:33 101:big3")
    assert b":watcher" not in big.output
    for term in (big, small, watcher):
        term.write(DETACH)
        assert term.wait() == 0


# ---------------------------------------------------------------------- schema, emit


def test_schema_is_json(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", tmp_path / "state")
    result = run_cli("schema", env=env)
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    assert {"client_to_server", "server_to_client"} <= schema.keys()
    assert not (tmp_path / "state").exists()


def test_emit_outside_a_session_is_silent(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", tmp_path / "state")
    result = subprocess.run(
        [PTYVISOR, "emit", "activity", "waiting"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=10,
        check=False,
        start_new_session=True,  # no controlling terminal to fall back on either
    )
    assert result.returncode == 0
    assert result.stdout == b""
    assert result.stderr == b""


# ---------------------------------------------------------------------- scripting


def test_run_detached_prints_only_the_id_and_needs_no_terminal(setup: Setup) -> None:
    started = setup.cli("run", "-d", "--name", "background", "--", "sh", "-c", "exec sleep 600")
    assert started.returncode == 0, started.stderr
    session = started.stdout.strip()
    assert re.fullmatch(r"s[0-9a-f]{8}", session), started.stdout
    setup.cleanups.append(lambda: setup.close_quietly(session))
    summary = setup.summary(session)
    assert summary is not None
    assert (summary.name, summary.process.state) == ("background", "running")
    # Its name is a reference too.
    assert setup.cli("kill", "background").returncode == 0
    setup.wait_summary(session, lambda s: s.process.state == "exited", "the kill")


def test_session_references_are_ids_names_or_prefixes(setup: Setup) -> None:
    first = setup.spawn(["sleep", "600"])
    second = setup.spawn(["sleep", "600"])
    # A unique prefix works.
    assert setup.cli("send", first[:-1], "hello").returncode == 1  # not an agent: not_running
    unsent = setup.cli("unsend", first[:-1])
    assert unsent.returncode == 0, unsent.stderr
    # Unknown: one line, with the candidates.
    unknown = setup.cli("kill", "no-such-session")
    assert unknown.returncode == 1
    assert unknown.stderr.count("\n") == 1, unknown.stderr
    assert "no session 'no-such-session'" in unknown.stderr
    assert first in unknown.stderr and second in unknown.stderr
    # Ambiguous: an empty-ish prefix both ids share names both.
    ambiguous = setup.cli("kill", "s")
    assert ambiguous.returncode == 1
    assert "could be any of" in ambiguous.stderr
    assert first in ambiguous.stderr and second in ambiguous.stderr
    still = setup.summary(first)
    assert still is not None and still.process.state == "running"


def test_run_says_how_the_program_ended(setup: Setup) -> None:
    exited = setup.term("run", "--name", "three", "--", "sh", "-c", "exit 3")
    assert exited.wait() == 3
    assert b"[exited 3]" in exited.output
    killed = setup.term("run", "--", "sh", "-c", "kill -TERM $$")
    assert killed.wait() == 128 + signal.SIGTERM
    assert b"[killed by SIGTERM]" in killed.output
    # Attaching to one that has already exited says so.
    again = setup.term("attach", "three")
    assert again.wait() == 3
    assert re.search(rb"\[s[0-9a-f]{8} had already ended: exited 3\]", again.output)


def captured(setup: Setup, session: str, *args: str) -> str:
    result = setup.cli("capture", session, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def wait_screen(setup: Setup, session: str, line: str) -> str:
    """Poll ``capture`` until a line of the screen is exactly ``line``."""

    def shows() -> str | None:
        # The Python client's capture polls quickly; the tests read the CLI's too.
        screen: Captured = setup.client_call(lambda client: client.capture(session))
        return "\n".join(screen.rows) if line in screen.rows else None

    return wait_for(shows, f"{line!r} on the screen")


def test_send_keys_follows_the_programs_modes(setup: Setup) -> None:
    script = setup.workdir / "echo_reads.py"
    script.write_text(ECHO_READS)
    session = setup.spawn([sys.executable, str(script)])
    wait_screen(setup, session, "READY")

    def sends(*args: str) -> None:
        result = setup.cli("send-keys", session, *args)
        assert result.returncode == 0, result.stderr

    sends("Up")
    wait_screen(setup, session, r"got b'\x1b[A'")
    sends("-l", "modes")
    wait_screen(setup, session, "modes-on")
    for args, expected in [
        (["Up"], r"got b'\x1bOA'"),  # application cursor keys now
        (["Home"], r"got b'\x1bOH'"),
        (["C-c"], r"got b'\x03'"),
        (["M-x"], r"got b'\x1bx'"),
        (["F5"], r"got b'\x1b[15~'"),
        (["BSpace"], r"got b'\x7f'"),
        (["-l", "Enter"], r"got b'Enter'"),
        (["two\nlines"], r"got b'\x1b[200~two\rlines\x1b[201~'"),  # a bracketed paste
        (["-p", "pasted"], r"got b'\x1b[200~pasted\x1b[201~'"),
        (["hi", "Space", "there", "Tab"], r"got b'hi there\t'"),
    ]:
        sends(*args)
        wait_screen(setup, session, expected)
    state = json.loads(captured(setup, session, "--json"))
    assert state["modes"]["application_cursor_keys"] is True
    assert state["modes"]["bracketed_paste"] is True
    assert state["rows"][state["cursor"]["row"]] == ""
    assert state["size"] == {"cols": 80, "rows": 24}


def test_what_the_server_refuses_is_one_line_not_a_traceback(setup: Setup) -> None:
    """The client sends what it is given and the server checks it (it built some
    requests with validation, and too many keys were a pydantic traceback here): the
    server's typed error, said in one line."""
    session = setup.spawn(["cat"])
    huge = setup.cli("send-keys", session, *["a" * 100_000] * 6)  # > 512 Ki in all
    assert huge.returncode == 1 and "Traceback" not in huge.stderr
    assert huge.stderr.startswith("ptyvisor: ") and len(huge.stderr.splitlines()) == 1


def test_capture_plain_coloured_and_with_scrollback(setup: Setup) -> None:
    session = setup.spawn(
        ["sh", "-c", r"seq 100; printf '\033[31mred\033[0m plain   \n'; exec sleep 600"]
    )
    wait_screen(setup, session, "red plain")
    screen = captured(setup, session)  # colours gone, trailing blanks trimmed
    assert "100" in screen.splitlines() and "1" not in screen.splitlines()
    coloured = captured(setup, session, "--ansi")
    assert "\x1b[0;31mred\x1b[0m plain\n" in coloured
    lines = captured(setup, session, "--scrollback", "5").splitlines()
    visible = screen.splitlines()
    assert lines[5:] == visible
    assert lines[:5] == [str(n) for n in range(int(visible[0]) - 5, int(visible[0]))]
    everything = captured(setup, session, "--all").splitlines()
    assert everything[:3] == ["1", "2", "3"] and everything[-1] == "red plain"
    bad = setup.cli("capture", session, "--scrollback", "-3")
    assert bad.returncode == 2 and "N >= 0" in bad.stderr


def test_wait_for_phase_text_exit_and_quiet(setup: Setup) -> None:
    script = (
        f"{PTYVISOR} emit activity working --agent tester; read x; echo 'hello world'; "
        f"{PTYVISOR} emit activity waiting --agent tester; read y; exit 3"
    )
    session = setup.spawn(["sh", "-c", script])
    setup.wait_summary(session, lambda s: s.activity.phase.value == "working", "working")

    def waiter(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [PTYVISOR, "wait", "--url", setup.url, session, *args],
            env=setup.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    ready = waiter("--phase", "waiting", "needs_input", "--timeout", "120")
    text = waiter("--text", "^hello", "--timeout", "120")
    both = waiter("--phase", "waiting", "--text", r"wor\w+$", "--timeout", "120")
    exited = waiter("--exit", "--timeout", "120")
    assert setup.cli("wait", session, "--phase", "waiting", "--timeout", "0.3").returncode == 124
    for proc in (ready, text, both, exited):
        assert proc.poll() is None, proc.communicate()  # the condition does not hold yet
    assert setup.cli("send-keys", session, "Enter").returncode == 0
    for proc in (ready, text, both):
        _, errors = proc.communicate(timeout=60)
        assert proc.returncode == 0, errors
    assert exited.poll() is None
    assert setup.cli("send-keys", session, "Enter").returncode == 0
    _, errors = exited.communicate(timeout=60)
    assert exited.returncode == 0, errors
    # The program has exited: a condition its final state does not meet ends at once.
    never = setup.cli("wait", session, "--text", "^goodbye", "--timeout", "600", timeout=60)
    assert never.returncode == 124
    assert "can no longer hold" in never.stderr
    working = setup.cli("wait", session, "--phase", "working", "--timeout", "600", timeout=60)
    assert working.returncode == 124
    # Quiet: the program printed its last line a while ago (a fresh waiter counts
    # from its own start).
    assert setup.cli("wait", session, "--quiet", "0.2", "--timeout", "60").returncode == 0


def test_wait_times_out_and_checks_its_arguments(setup: Setup) -> None:
    session = setup.spawn(["sleep", "600"])
    slow = setup.cli("wait", session, "--exit", "--timeout", "0.2")
    assert slow.returncode == 124
    assert "timed out after 0.2 s" in slow.stderr
    bad = setup.cli("wait", session, "--text", "(unclosed")
    assert bad.returncode == 2 and "regular expression" in bad.stderr
    gone = setup.cli("wait", "no-such", "--exit")
    assert gone.returncode == 1 and "no session 'no-such'" in gone.stderr


def test_rename_and_refer_by_the_new_name(setup: Setup) -> None:
    session = setup.spawn(["sleep", "600"])
    renamed = setup.cli("rename", session[:-1], "worker")
    assert renamed.returncode == 0, renamed.stderr
    assert renamed.stdout == ""
    assert next(s["name"] for s in setup.ls_json() if s["id"] == session) == "worker"
    assert setup.cli("rename", "worker", "builder").returncode == 0
    empty = setup.cli("rename", "builder", "")
    assert empty.returncode == 1 and empty.stderr.count("\n") == 1, empty.stderr
    killed = setup.cli("kill", "builder")
    assert killed.returncode == 0, killed.stderr
    setup.wait_summary(session, lambda s: s.process.state == "exited", "the kill by name")


def test_events_prints_the_timeline_and_follows_changes(setup: Setup) -> None:
    script = (
        f"{PTYVISOR} emit activity working --agent tester --reason 'step one'; "
        f"{PTYVISOR} emit activity waiting --agent tester; read x; "
        f"{PTYVISOR} emit activity working --agent tester --reason 'step two'; read y; exit 3"
    )
    session = setup.spawn(["sh", "-c", script])
    setup.wait_summary(session, lambda s: s.activity.phase.value == "waiting", "waiting")
    listed = setup.cli("events", session, "--json")
    assert listed.returncode == 0, listed.stderr
    events = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(e["phase"], e["reason"]) for e in events][-2:] == [
        ("working", "step one"),
        ("waiting", None),
    ]
    text = setup.cli("events", session)
    assert re.search(r"\d\d:\d\d:\d\d  Working\s+step one$", text.stdout, re.MULTILINE), text.stdout
    assert re.search(r"\d\d:\d\d:\d\d  Ready$", text.stdout, re.MULTILINE), text.stdout

    follow = subprocess.Popen(
        [PTYVISOR, "events", "--url", setup.url, session, "--follow", "--json"],
        env=setup.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert follow.stdout is not None
    first = [json.loads(follow.stdout.readline()) for _ in events]  # the timeline first
    assert first == events
    assert setup.cli("send-keys", session, "Enter").returncode == 0
    change = json.loads(follow.stdout.readline())
    assert (change["type"], change["phase"], change["reason"]) == (
        "activity",
        "working",
        "step two",
    )
    assert setup.cli("send-keys", session, "Enter").returncode == 0
    rest, errors = follow.communicate(timeout=60)
    assert follow.returncode == 0, errors
    tail = [json.loads(line) for line in rest.splitlines()]
    assert tail[-1]["type"] == "process" and tail[-1]["exit_code"] == 3
    assert tail[-2]["type"] == "activity" and tail[-2]["phase"] == "failed"
    done = setup.cli("events", session)
    assert done.stdout.rstrip().endswith("process exited 3"), done.stdout


def test_version_url_forms_state_dir_and_bad_detach_key(setup: Setup, tmp_path: Path) -> None:
    for flag in ("-V", "--version"):
        shown = run_cli(flag, env=setup.env)
        assert shown.returncode == 0 and re.fullmatch(r"ptyvisor \S+\n", shown.stdout)
    # The http:// page URL serve prints (with its ?token=) works as --url.
    http = setup.url.replace("ws://", "http://") + f"?token={setup.token}"
    listed = run_cli("ls", "--url", http, env=setup.env)
    assert listed.returncode == 0, listed.stderr
    # The token is found in --state-dir when nothing else gives it.
    state = tmp_path / "other-state"
    state.mkdir(mode=0o700)
    (state / "token").write_text(setup.token + "\n")
    env = {k: v for k, v in setup.env.items() if k != "PTYVISOR_TOKEN"}
    found = run_cli("ls", "--url", setup.url, "--state-dir", str(state), env=env)
    assert found.returncode == 0, found.stderr
    # A bad detach key is refused before anything starts.
    before = len(setup.ls_json())
    bad = setup.cli("run", "--detach-key", "xyz", "--", "true")
    assert bad.returncode == 2
    assert "detach key" in bad.stderr and "Traceback" not in bad.stderr
    assert len(setup.ls_json()) == before
    # tmux's spelling works too.
    assert parse_key("C-]") == parse_key("^]") == b"\x1d"
    assert parse_key("C-a") == parse_key("^A") == b"\x01"
    with pytest.raises(ValueError, match="not a control key"):
        parse_key("^1")


def test_run_in_a_terminal_of_no_size_starts_at_80x24(setup: Setup) -> None:
    term = setup.term("run", "--", "sh", "-c", "echo size:$(stty size):end", rows=0, cols=0)
    assert term.wait() == 0
    assert b"size:24 80:end" in term.output, term.output


def test_run_in_place_shows_all_of_a_quick_commands_output(setup: Setup) -> None:
    """`run --no-alt-screen` replays from the first byte: a command that ends before
    the attach still leaves all its lines in the shell's scrollback, not just its last
    screen."""
    term = setup.term("run", "--no-alt-screen", "--", "seq", "1", "300")
    assert term.wait() == 0
    lines = term.output.replace(b"\r", b"").split(b"\n")
    assert [n for n in range(1, 301) if str(n).encode() not in lines] == [], term.output
    assert b"\x1bc" not in term.output  # the shell's screen is not wiped


def test_every_command_and_option_explains_itself() -> None:
    """Each subcommand has a description and a help line; each option a help line,
    which names its default when it has one."""
    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in subcommands._choices_actions}
    missing = []
    for name, sub in subcommands.choices.items():
        if not sub.description or not helps.get(name):
            missing.append(f"{name}: description or help")
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            where = f"{name} {'/'.join(action.option_strings) or action.dest}"
            has_default = action.option_strings and action.default not in (None, False, [])
            if not action.help:
                missing.append(f"{where}: help")
            elif has_default and "default" not in action.help:
                missing.append(f"{where}: its default ({action.default!r})")
    assert not missing, missing


def test_completion_scripts_complete_commands_options_and_choices(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", tmp_path / "state")
    script = run_cli("completion", "bash", env=env)
    assert script.returncode == 0, script.stderr

    def complete(*words: str) -> list[str]:
        probe = (
            f"{script.stdout}\nCOMP_WORDS=(ptyvisor {' '.join(words)}); "
            f"COMP_CWORD={len(words)}; _ptyvisor; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        )
        done = subprocess.run(
            ["bash", "--norc", "-c", probe], capture_output=True, text=True, check=True
        )
        return done.stdout.split()

    assert complete("sen") == ["send", "send-keys"]
    assert "--follow" in complete("events", "--f")
    assert complete("run", "--agent", "c") == ["claude-code", "codex", "copilot", "cline"]
    assert complete("wait", "x", "--phase", "wa") == ["waiting"]
    zsh = run_cli("completion", "zsh", env=env)
    assert zsh.returncode == 0 and "bashcompinit" in zsh.stdout
    assert script.stdout in zsh.stdout


SHELL_SCREEN = b"$ shell-history-line\r\n$ ptyvisor attach\r\n"
"""What the user's terminal showed before the command: it must come back on detach."""
SWITCHING = (
    "echo main-one; read a; printf '\\033[?1049h\\033[Hin-alt\\n'; read b; "
    "printf '\\033[?1049l'; echo main-two; printf '\\033c'; echo after-reset; "
    "printf '\\033[3J'; read c; echo last-words"
)


def test_attach_draws_on_the_alternate_screen_and_gives_the_shell_screen_back(
    setup: Setup,
) -> None:
    """As with tmux: the program shows on the terminal's alternate screen, its own
    screen switches, full reset and erase-scrollback do not break out of it, and
    detaching brings the shell's screen back; when the program ends, its last screen
    is printed into the shell."""
    session = setup.spawn(["sh", "-c", SWITCHING])
    term = setup.term("attach", session)
    term.attached()
    term.expect(b"main-one")

    def shows(*texts: str) -> Callable[[], bool]:
        def check() -> bool:
            term._read(time.monotonic() + 0.1)
            terminal = term.terminal(SHELL_SCREEN)
            screen = "\n".join(terminal.display)
            return terminal.modes.alternate_screen and all(t in screen for t in texts)

        return check

    assert "shell-history-line" not in term.screen(SHELL_SCREEN)
    term.write(b"x\r")  # the program enters its alternate screen
    wait_for(shows("in-alt"), "the program's alternate screen")
    assert "main-one" not in term.screen(SHELL_SCREEN)
    term.write(b"y\r")  # it leaves it, resets the terminal, erases the scrollback
    wait_for(shows("after-reset"), "the program's main screen, drawn again")
    assert b"\x1bc" not in term.output and b"\x1b[3J" not in term.output
    assert b"\x1b[?1049l" not in term.output  # ours stays on: it is the only one
    term.write(DETACH)
    assert term.wait() == 0
    back = term.terminal(SHELL_SCREEN)
    assert not back.modes.alternate_screen
    assert back.display[0].rstrip() == "$ shell-history-line"
    assert "in-alt" not in term.screen(SHELL_SCREEN)
    assert "after-reset" not in term.screen(SHELL_SCREEN)
    assert "[detached from" in term.screen(SHELL_SCREEN)

    again = setup.term("attach", session)
    again.attached()
    again.expect(b"after-reset")
    again.write(b"z\r")  # the program ends: its last screen stays in the shell
    assert again.wait() == 0
    lines = again.screen(SHELL_SCREEN).splitlines()
    assert lines[:2] == ["$ shell-history-line", "$ ptyvisor attach"]
    assert lines[2:5] == ["after-reset", "z", "last-words"], lines  # z: the echo
    assert lines[5] == "[exited 0]"
    # Attached once it has ended: its last screen, then how it ended.
    late = setup.term("attach", session)
    assert late.wait() == 0
    lines = late.screen(SHELL_SCREEN).splitlines()
    assert lines[2:5] == ["after-reset", "z", "last-words"], lines
    assert lines[5].endswith("had already ended: exited 0]"), lines


def test_attach_can_draw_in_place(setup: Setup) -> None:
    """--no-alt-screen: the program's own switches reach the terminal as they are."""
    session = setup.spawn(["sh", "-c", SWITCHING])
    term = setup.term("attach", "--no-alt-screen", session)
    term.attached()
    term.write(b"x\r")
    term.expect(b"in-alt")
    assert term.terminal().modes.alternate_screen
    term.write(b"y\r")
    term.expect(b"after-reset")
    assert not term.terminal().modes.alternate_screen
    term.write(DETACH)
    assert term.wait() == 0
    assert not term.terminal().modes.alternate_screen
    assert b"\x1b[?1049h\x1b[H\x1b[2J" not in term.output  # never entered one of its own


def test_the_detach_key_twice_reaches_the_program(setup: Setup) -> None:
    session = setup.spawn(["sh", "-c", 'while read line; do echo "got:$line" | cat -v; done'])
    term = setup.term("attach", session)
    term.attached()
    term.write(DETACH + DETACH + b"x\r")  # twice: the program gets one, as vim would
    term.expect(b"got:^]x")
    term.write(DETACH)  # once, then nothing: detach
    assert term.wait() == 0
    assert b"[detached from" in term.output
    summary = setup.summary(session)
    assert summary is not None and summary.process.state == "running"
