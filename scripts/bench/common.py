"""What the rows share: sizes, the table, processes, connections, and the echo."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench_hardening import Echo
from bench_keeper import server_pid
from ptyvisor.client.client import Client
from ptyvisor.wire.protocol import SessionSummary

TOKEN = "bench-" + "a" * 24
ROOT = Path(__file__).resolve().parents[2]
CHUNK = 64 * 1024
"""Bytes per feed of a headless terminal: what the server reads from a PTY at once."""
READY = b"ready"
"""What `cat_on_go` prints once its terminal is raw, before the file."""
STARTED = time.monotonic()

NODE_FEED = """
const [modulePath, file, cols, rows, chunk] = process.argv.slice(1);
const {Terminal} = require(modulePath);
const data = require("fs").readFileSync(file);
const step = Number(chunk);
// Resolves with the seconds from the first write until the last one is parsed.
function feed(bytes) {
  return new Promise((resolve) => {
    const term = new Terminal({
      cols: Number(cols), rows: Number(rows), scrollback: 1000, allowProposedApi: true,
    });
    const start = process.hrtime.bigint();
    for (let at = 0; at < bytes.length; at += step) {
      const last = at + step >= bytes.length;
      term.write(bytes.subarray(at, at + step), last ? () => {
        resolve(Number(process.hrtime.bigint() - start) / 1e9);
        term.dispose();
      } : undefined);
    }
  });
}
(async () => {
  await feed(data);  // the JIT warmed as in a long-running server: the second pass counts
  console.log(JSON.stringify({seconds: await feed(data), bytes: data.length}));
})();
"""
"""Runs in Node: ``node -e NODE_FEED <@xterm/headless folder> <file> <cols> <rows> <chunk>``."""

SCROLLED = """import sys, time
for i in range(int(sys.argv[1])):
    print(f"\\x1b[3{i % 8}mline {i:5d}\\x1b[0m " + "lorem ipsum dolor sit amet " * 3)
print("scrolled", flush=True)
time.sleep(3600)
"""
"""Row 2's program: numbered lines in colour (under 120 columns), then it idles."""


@dataclass(frozen=True)
class Sizes:
    echo_seconds: float
    """Row 1's baseline: how long the echo is sampled with nothing else running."""
    flood_mib: int
    """Row 1's flood of base64."""
    attaches: int
    """Row 2: cold and hot attaches, each."""
    file_mb: int
    """Rows 3, 4 and 8: megabytes of the file ``cat`` prints."""
    rounds: int
    """Rows 3 and 4."""
    terminal_bytes: int
    """Row 5: bytes of each stream."""
    sessions: int
    """Rows 6 and 7."""
    idle_seconds: float
    """Row 7: the CPU window with the sessions (a third of it without)."""
    clients: int
    """Row 8."""
    fanout_rounds: int
    """Row 8: rounds of (1 client, then all of them)."""


FULL = Sizes(
    echo_seconds=5,
    flood_mib=256,
    attaches=30,
    file_mb=60,
    rounds=5,
    terminal_bytes=3_000_000,
    sessions=200,
    idle_seconds=60,
    clients=50,
    fanout_rounds=4,
)
QUICK = Sizes(
    echo_seconds=2,
    flood_mib=24,
    attaches=10,
    file_mb=8,
    rounds=1,
    terminal_bytes=300_000,
    sessions=40,
    idle_seconds=6,
    clients=20,
    fanout_rounds=1,
)


# --------------------------------------------------------------------------- the table


@dataclass
class Row:
    key: str
    """Row number and letter: the table is sorted on it."""
    what: str
    measured: str
    target: str
    met: bool | None = None
    """None: a figure for comparison, or not measured."""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    def add(
        self, key: str, what: str, measured: str, target: str = "", met: bool | None = None
    ) -> None:
        self.rows.append(Row(key, what, measured, target, met))

    def table(self) -> str:
        lines = ["| what | measured | target |", "|---|---|---|"]
        for row in sorted(self.rows, key=lambda row: row.key):
            verdict = {None: "", True: " (met)", False: " (**missed**)"}[row.met]
            lines.append(f"| {row.key}. {row.what} | {row.measured} | {row.target}{verdict} |")
        return "\n".join(lines)


@dataclass(frozen=True)
class CatFile:
    """The log-like file ``cat`` prints in rows 3, 4 and 8 (``make_input``)."""

    path: Path
    size: int


@dataclass(frozen=True)
class Bench:
    """What the server's rows share: the server, two connections, the sizes, the table."""

    url: str
    keeper: int
    worker: int
    control: Client
    """Spawns, closes, asks for stats; attached to nothing."""
    echo: Echo
    """Times keystrokes on a ``cat`` session, over a connection of its own."""
    sizes: Sizes
    report: Report
    cat: CatFile


def progress(message: str) -> None:
    print(f"[{time.monotonic() - STARTED:6.1f} s] {message}", file=sys.stderr, flush=True)


def spread(samples: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max of latencies (ms), with their count."""
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0, "p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"n": len(ordered), "p50": statistics.median(ordered), "p99": p99, "max": ordered[-1]}


def show_ms(figures: dict[str, float]) -> str:
    return (
        f"p50 {figures['p50']:.1f} / p99 {figures['p99']:.1f} / max {figures['max']:.1f} ms "
        f"(n={figures['n']:.0f})"
    )


def mb_s(rate: float) -> str:
    return f"{rate / 1e6:.1f} MB/s"


def mb(size: float) -> str:
    return f"{size / 1e6:.1f} MB"


# --------------------------------------------------------------------------- processes


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def cpu_percent(pids: Sequence[int], seconds: float) -> list[float]:
    """Each process's CPU over the next ``seconds``, as % of one core."""
    before = [cpu_seconds(pid) for pid in pids]
    started = time.monotonic()
    await anyio.sleep(seconds)
    elapsed = time.monotonic() - started
    return [(cpu_seconds(pid) - was) / elapsed * 100 for pid, was in zip(pids, before, strict=True)]


async def find_worker(keeper: int) -> int:
    """The server process: the keeper's ``ptyvisor.server.worker`` child."""
    for _ in range(300):
        pid = server_pid(keeper)
        if pid is not None:
            return pid
        await anyio.sleep(0.1)
    raise SystemExit(f"the keeper ({keeper}) started no ptyvisor.server.worker")


# --------------------------------------------------------------------------- connections


@asynccontextmanager
async def plain_connection(url: str) -> AsyncIterator[ClientConnection]:
    """A plain ``websockets`` connection, past the server's ``hello``."""
    async with connect(
        url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=None
    ) as ws:
        await ws.recv()
        yield ws


async def plain_request(ws: ClientConnection, message: dict[str, Any]) -> tuple[Any, float]:
    """Send a request; its reply (the next text message, binary output skipped) and
    the seconds until it arrived (parsing it not included)."""
    started = time.perf_counter()
    await ws.send(json.dumps(message))
    while True:
        received = await ws.recv()
        took = time.perf_counter() - started
        if isinstance(received, str):
            reply = json.loads(received)
            if reply.get("type") == "error":
                raise RuntimeError(f"{message['type']} refused: {reply['message']}")
            if reply.get("type") not in ("activity", "process", "resized"):
                return reply, took


def cat_on_go(path: Path) -> list[str]:
    """A program that makes its terminal raw (the file's bytes pass unchanged), prints
    READY, waits for a line, then prints the file."""
    script = f'stty raw -echo; printf {READY.decode()}; read go; exec cat "$0"'
    return ["sh", "-c", script, str(path)]


async def until_output(control: Client, session_id: str, size: int) -> None:
    """Wait until the server has read ``size`` bytes from the session's PTY."""
    while True:
        if (await control.stats(session_id)).output_bytes >= size:
            return
        await anyio.sleep(0.02)


async def start_cat(control: Client, path: Path) -> SessionSummary:
    session = await control.spawn(cat_on_go(path), cols=200, rows=50)
    with anyio.fail_after(60):
        await until_output(control, session.id, len(READY))
    return session


@dataclass
class Followed:
    """What one plain client got of a session's stream."""

    snapshots: int = 0
    diverged: bool = False
    lost: str = ""
    received: int = 0
    """Bytes of output it got (a resynced client skips what its snapshots cover)."""


async def follow(
    ws: ClientConnection, position: int, end: int, expected: memoryview | None = None
) -> Followed:
    """Read the attached stream from seq ``position`` to ``end``, resuming at each
    ``lagging`` snapshot's seq; compare the bytes with ``expected`` at their seq."""
    result = Followed()
    try:
        while position < end:
            message = await ws.recv()
            if isinstance(message, bytes):
                if expected is not None and expected[position : position + len(message)] != message:
                    result.diverged = True
                position += len(message)
                result.received += len(message)
                continue
            reply = json.loads(message)
            if reply.get("type") == "snapshot" and reply.get("reason") == "lagging":
                result.snapshots += 1
                position = reply["snapshot"]["seq"]
    except ConnectionClosed as closed:
        result.lost = str(closed)
    return result


async def echo_during(echo: Echo, work: Awaitable[object]) -> list[float]:
    """Echo latencies (ms), sampled until ``work`` is done."""
    done = anyio.Event()

    async def then_stop() -> None:
        try:
            await work
        finally:
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(then_stop)
        samples = await echo.measure(done)
    return samples


async def until_exited(control: Client, session_id: str) -> None:
    while True:
        for session in await control.list():
            if session.id == session_id and session.process.state == "exited":
                return
        await anyio.sleep(0.1)


def worker_command(name: str, *args: str) -> list[str]:
    """The command that runs worker ``name`` (bench/workers.py) in a process of its own."""
    return [sys.executable, "-m", "bench.workers", name, *args]


def worker_env() -> dict[str, str]:
    """Where a worker finds the ``bench`` package: beside this checkout's scripts."""
    scripts = str(ROOT / "scripts")
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": scripts if not path else f"{scripts}{os.pathsep}{path}"}
