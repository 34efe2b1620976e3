"""For the benchmarks: a real ``ptyvisor serve`` of this checkout, on a free port with
a temporary state directory, stopped afterwards.

``PTYVISOR_BENCH_SERVER_SRC=<other tree>/src`` serves another tree's code instead
(its ``src`` first on the server's ``PYTHONPATH``; the benchmark's own client code
stays this checkout's), so that two trees are measured side by side in one session.
"""

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
        other = os.environ.get("PTYVISOR_BENCH_SERVER_SRC")
        if other:
            env["PYTHONPATH"] = other
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
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"ptyvisor.server.worker" in cmdline or b"ptyvisor.worker" in cmdline:
                return int(child)
    raise LookupError("no server process")
