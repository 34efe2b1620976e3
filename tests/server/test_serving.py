"""``ptyvisor serve`` as a user starts it: options checked at start, a warning beyond
loopback, TLS, the Host check against DNS rebinding, and running out of descriptors.
Real server processes and real sockets."""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect

from ptyvisor.client.client import Client
from ptyvisor.errors import ServerError
from ptyvisor.wire.protocol import SERVER_MESSAGE, Hello
from tests.timeouts import scaled

from ..conftest import (
    TOKEN,
    RunningServer,
    children,
    output_until,
    poll,
    serve_refused,
    start_serve,
    succeeds,
    wait_for,
)
from ..keeper.test_keeper import _cmdline


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    return {**base, "PTYVISOR_STATE_DIR": str(tmp_path / "state"), "PTYVISOR_TOKEN": TOKEN}


@contextlib.contextmanager
def serving(
    tmp_path: Path, env: dict[str, str], *args: str, wrapper: tuple[str, ...] = ()
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """A running ``serve`` (port 0): (process, ws URL, its stderr file); stopped after."""
    stdout, stderr = tmp_path / "serve.out", tmp_path / "serve.err"
    proc, _ = start_serve(
        ["--port", "0", *args], env=env, stdout=stdout, stderr=stderr, wrapper=wrapper
    )
    url = stdout.read_text().split("serving on ", 1)[1].split()[0]
    try:
        yield proc, url, stderr
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--replay-bytes", "0"], "--replay-bytes must be between"),
        (["--replay-bytes", "-5"], "--replay-bytes must be between"),
        (["--client-buffer", "-1"], "--client-buffer must be between"),
        (["--render-lag", "0"], "--render-lag must be between"),
        (["--scrollback", "-1"], "--scrollback must be between"),
        (["--port", "70000"], "--port must be between"),
        (["--tls-cert", "/nonexistent"], "--tls-cert and --tls-key go together"),
        (["--tls-cert", "/nonexistent", "--tls-key", "/nonexistent"], "no such file"),
        (["--tls-cert", "/tmp", "--tls-key", "/tmp"], "/tmp is a directory, not a file"),
    ],
)
def test_bad_options_are_refused_at_start_in_one_line(
    env: dict[str, str], args: list[str], says: str
) -> None:
    result = serve_refused(["--port", "0", *args], env)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.stderr


def test_recordings_go_only_where_nobody_else_can_write(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A directory others can write to is refused unless it is sticky and ours."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    refused = serve_refused(["--port", "0", "--record", str(shared)], env)
    assert refused.returncode == 2
    assert f"others can write to {shared}" in refused.stderr, refused.stderr
    shared.chmod(0o1777)  # sticky and ours: nobody else can replace our files
    with serving(tmp_path, env, "--record", str(shared)) as (proc, _url, _stderr):
        assert proc.poll() is None


def test_an_unresolvable_host_and_an_unusable_state_directory_are_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    unknown = serve_refused(["--port", "0", "--host", "no-such-host.invalid"], env)
    assert unknown.returncode == 1
    assert "cannot listen on no-such-host.invalid:0" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    a_file = tmp_path / "file"
    a_file.write_text("not a directory")
    unusable = serve_refused(["--port", "0", "--state-dir", str(a_file / "state")], env)
    assert unusable.returncode != 0
    lines = unusable.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot use the state directory" in lines[0], unusable.stderr


def test_a_port_in_use_is_one_line(env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve_refused(["--port", str(port)], env)
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert f"(pid {os.getpid()}, " in result.stderr  # who holds it
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_listening_beyond_loopback_warns(tmp_path: Path, env: dict[str, str]) -> None:
    with serving(tmp_path, env, "--host", "0.0.0.0") as (_, _, stderr):
        warning = stderr.read_text()
    assert "warning: listening on 0.0.0.0" in warning
    assert "token crosses the network in clear" in warning


def make_certificate(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_tls_serves_wss_and_https(tmp_path: Path, env: dict[str, str]) -> None:
    cert, key = make_certificate(tmp_path)
    trust = ssl.create_default_context(cafile=str(cert))
    args = ("--host", "0.0.0.0", "--tls-cert", str(cert), "--tls-key", str(key))
    with serving(tmp_path, env, *args) as (_, url, stderr):
        assert url.startswith("wss://")
        assert "token crosses the network" not in stderr.read_text()
        port = url.rsplit(":", 1)[1].strip("/")
        page = (tmp_path / "serve.out").read_text()
        assert f"page: https://0.0.0.0:{port}/?token=" in page

        async def hello() -> None:
            async with connect(
                f"wss://127.0.0.1:{port}/",
                ssl=trust,
                additional_headers={"Authorization": f"Bearer {TOKEN}"},
                open_timeout=10,
            ) as ws:
                assert isinstance(SERVER_MESSAGE.validate_json(await ws.recv()), Hello)

        anyio.run(hello)
        request = urllib.request.Request(
            f"https://127.0.0.1:{port}/api/auth", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, context=trust, timeout=10) as response:
            assert response.status == 204
        # Plain HTTP on the TLS port gets nowhere.
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/auth", timeout=10)


# --------------------------------------------------------------------------- Host


def http_status(port: int, request: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode())
        head = sock.recv(4096).decode("latin-1")
    return int(head.split(" ", 2)[1])


def auth_request(host: str, origin: str | None = None, *, upgrade: bool = False) -> str:
    lines = [
        "GET /api/auth HTTP/1.1" if not upgrade else "GET /ws HTTP/1.1",
        f"Host: {host}",
        f"Authorization: Bearer {TOKEN}",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    if upgrade:
        lines += [
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
        ]
    return "\r\n".join(lines) + "\r\n\r\n"


@pytest.mark.anyio
async def test_host_header_must_name_this_server(server: RunningServer) -> None:
    port = server.config.port

    async def status(request: str) -> int:
        return await anyio.to_thread.run_sync(http_status, port, request)

    assert await status(auth_request(f"127.0.0.1:{port}")) == 204
    assert await status(auth_request(f"localhost:{port}")) == 204
    assert await status(auth_request(f"[::1]:{port}")) == 204
    # DNS rebinding: a page of evil.example whose name resolves to 127.0.0.1.
    assert await status(auth_request("evil.example")) == 403
    assert await status(auth_request(f"evil.example:{port}")) == 403
    assert await status(auth_request("127.0.0.1.evil.example")) == 403
    evil = f"http://evil.example:{port}"
    assert await status(auth_request(f"evil.example:{port}", evil, upgrade=True)) == 403
    assert await status(auth_request(f"127.0.0.1:{port}", upgrade=True)) == 101
    # Names the user allows.
    server.config.allowed_hosts.append("box.lan")
    assert await status(auth_request(f"box.lan:{port}")) == 204
    box = f"http://box.lan:{port}"
    assert await status(auth_request(f"box.lan:{port}", box, upgrade=True)) == 101


# --------------------------------------------------------------------------- descriptors

LIMIT = 256


def test_running_out_of_descriptors_sheds_instead_of_dying(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Idle TCP connections (no token needed) use up the descriptors; a hook then
    connecting to the control socket used to kill the server. It must shed, log once
    per episode, and serve again once descriptors are free."""
    wrapper = ("prlimit", f"--nofile={LIMIT}:{LIMIT}")
    with serving(tmp_path, env, wrapper=wrapper) as (proc, url, stderr):
        port = int(url.rsplit(":", 1)[1].strip("/"))
        control = wait_for(
            lambda: next(Path(env["PTYVISOR_STATE_DIR"]).glob("control/*.sock"), None),
            "the control socket",
        )
        idle: list[socket.socket] = []
        try:
            for _ in range(LIMIT + 50):
                sock = socket.socket()
                sock.settimeout(5)
                sock.connect(("127.0.0.1", port))
                idle.append(sock)
            for _ in range(20):
                hook = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                hook.settimeout(5)
                with contextlib.suppress(OSError), hook:
                    hook.connect(str(control))
                    hook.sendall(b'{"op": "take_message"}\n')
                    hook.recv(10)  # shed, refused or timed out: never a dead server
            time.sleep(2.5)  # asyncio retries accepting after a second
            assert proc.poll() is None, stderr.read_text()[-2000:]
        finally:
            for sock in idle:
                sock.close()

        async def lists() -> None:
            async with Client.connect(url, TOKEN) as client:
                await client.list()

        wait_for(lambda: succeeds(lambda: anyio.run(lists)), "serving again", timeout=30)
        log = stderr.read_text()
    assert "Traceback" not in log, log[-3000:]
    episodes = log.count("out of file descriptors")
    assert 1 <= episodes <= 6, log[-3000:]


# --------------------------------------------------------------------------- exports

CONTROL_FLOOD = 2 * 1024 * 1024


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_concurrent_exports_take_bounded_memory_together(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A 2 MiB log of control bytes exports as a 12 MB cast (each byte is \\u0001):
    24 at once once took the server from 98 MB to 1.1 GB. A few are made at a time,
    off the event loop, so the server's peak stays bounded and others keep echoing."""
    with serving(tmp_path, env) as (proc, url, _stderr):
        server = wait_for(
            lambda: next(
                (c for c in children(proc.pid) if b"ptyvisor.server.worker" in _cmdline(c)), None
            ),
            "the server process",
        )

        async def scenario() -> tuple[float, float]:
            async with Client.connect(url, TOKEN) as client:
                flood = await client.spawn(
                    ["sh", "-c", f"head -c {CONTROL_FLOOD} /dev/zero | tr '\\0' '\\1'; sleep 600"]
                )
                echo = await client.spawn(["cat"])

                async def written() -> bool:
                    return (await client.stats(flood.id)).output_bytes >= CONTROL_FLOOD

                await poll(written, wait=60)
                before = _peak_rss_mib(server)
                sizes: list[int] = []

                async def export() -> None:
                    async with Client.connect(url, TOKEN) as other:
                        sizes.append(len(await other.export(flood.id)))

                async with anyio.create_task_group() as tg:
                    for _ in range(24):
                        tg.start_soon(export)
                    await assert_echoes_at(url, echo.id)  # while they are made
                assert len(sizes) == 24 and min(sizes) > 6 * CONTROL_FLOOD
                await assert_echoes_at(url, echo.id)
                return before, _peak_rss_mib(server)

        before, peak = anyio.run(scenario)
    assert peak - before < 300, (before, peak)


async def assert_echoes_at(url: str, session_id: str) -> None:
    marker = f"echo-{time.monotonic_ns()}"
    async with Client.connect(url, TOKEN) as client:
        await client.attach(session_id)
        await client.send_input(marker + "\n")
        await output_until(client, marker.encode(), wait=60)


def test_spawning_past_the_descriptors_is_a_typed_error_and_serving_goes_on(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Under ``prlimit --nofile=128`` spawns once ran the server out of descriptors:
    the client was closed (1001), no handshake completed again and the stop needed
    the kill. The spawn that cannot have them fails with ``spawn_failed``; everyone
    else is served, and spawns work again once sessions are closed."""
    wrapper = ("prlimit", "--nofile=128:128")
    with serving(tmp_path, env, wrapper=wrapper) as (proc, url, stderr):

        async def scenario() -> None:
            async with (
                Client.connect(url, TOKEN) as bystander,
                Client.connect(url, TOKEN) as client,
            ):
                spawned: list[str] = []
                with anyio.fail_after(scaled(120)):
                    while True:
                        try:
                            spawned.append((await client.spawn(["sleep", "600"])).id)
                        except ServerError as refused:
                            assert refused.code == "spawn_failed", refused
                            assert "out of file descriptors" in refused.message
                            break
                assert len(spawned) >= 20
                # The other client, and a new one, are served.
                assert len(await bystander.list()) == len(spawned)
                async with Client.connect(url, TOKEN) as fresh:
                    assert len(await fresh.list()) == len(spawned)
                for session in spawned[:10]:
                    await client.close(session)
                again = await client.spawn(["sleep", "600"])
                assert again.process.state == "running"

        anyio.run(scenario)
        stopping = time.monotonic()
        proc.terminate()
        assert proc.wait(timeout=30) == 0
        took = time.monotonic() - stopping
        log = stderr.read_text()
    assert "did not finish in time" not in log, (took, log[-2000:])
    assert "Traceback" not in log, log[-3000:]
