"""serve tells a service manager that it serves and that it stops (systemd's
``$NOTIFY_SOCKET``), and its programs never see that socket. A real serve, a real
datagram socket standing in for systemd."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
from pathlib import Path

import anyio

from ptyvisor.client.client import Client, Output

from ..conftest import TOKEN, start_serve, wait_for


def test_serve_notifies_ready_then_stopping_and_programs_do_not_inherit_it(
    tmp_path: Path,
) -> None:
    address = str(tmp_path / "notify")
    manager = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    manager.bind(address)
    manager.settimeout(0.1)
    base = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    env = {**base, "PTYVISOR_STATE_DIR": str(tmp_path / "state"), "PTYVISOR_TOKEN": TOKEN}
    told: list[str] = []

    def heard(what: str) -> bool:
        with contextlib.suppress(TimeoutError):
            told.extend(manager.recv(4096).decode().splitlines())
        return what in told

    proc, _page = start_serve(
        ["--port", "0"], env={**env, "NOTIFY_SOCKET": address}, stdout=tmp_path / "out"
    )
    try:
        url = (tmp_path / "out").read_text().split("serving on ", 1)[1].split()[0]
        assert wait_for(lambda: heard("READY=1"), "READY=1")
        assert f"STATUS=serving on {url}" in told

        async def program_sees() -> bytes:
            """What a program finds in NOTIFY_SOCKET."""
            async with Client.connect(url, TOKEN) as client:
                script = 'echo "socket:${NOTIFY_SOCKET:-none}."; exec cat'
                session = await client.spawn(["sh", "-c", script])
                await client.attach(session.id, since=0)
                seen = b""
                while (found := re.search(rb"socket:(.*?)\.", seen)) is None:
                    event = await client.next_event(15)
                    if isinstance(event, Output):
                        seen += event.data
                return found.group(1)

        assert anyio.run(program_sees) == b"none"
        proc.send_signal(signal.SIGTERM)
        assert wait_for(lambda: heard("STOPPING=1"), "STOPPING=1")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        manager.close()
