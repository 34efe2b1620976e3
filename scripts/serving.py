"""For the benchmarks: a real ``ptyvisor serve`` of this checkout, on a free port with
a temporary state directory, stopped afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def serving(token: str) -> Iterator[tuple[str, int]]:
    """(the server's URL, the pid of ``serve``, the keeper)."""
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "PTYVISOR_STATE_DIR": state, "PTYVISOR_TOKEN": token}
        serve = subprocess.Popen(
            [str(Path(sys.executable).parent / "ptyvisor"), "serve", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert serve.stdout is not None
            url = serve.stdout.readline().split("serving on ", 1)[1].split()[0]
            yield url, serve.pid
        finally:
            serve.terminate()
            serve.wait(timeout=60)


def server_process(keeper: int) -> int:
    """The pid of the keeper's server process (``ptyvisor.server.worker``), where sessions,
    clients and their memory live; the keeper itself stays small."""
    for task in os.listdir(f"/proc/{keeper}/task"):
        for child in Path(f"/proc/{keeper}/task/{task}/children").read_text().split():
            if b"ptyvisor.server.worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    raise LookupError("no server process")
