"""A `Session` built directly, without a server: a real program on a real PTY (started
by the keeper's `spawn.start`, reaped here as an owner would), one subscriber's outbox
read as a connection would. What the parts do alone is tested beside their modules;
here, that the session wires them so a client sees exactly what happened, in order."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from ptyvisor.keeper.spawn import start
from ptyvisor.server.child import Child
from ptyvisor.server.identity import Identity
from ptyvisor.server.outbox import Outbox, Tracked
from ptyvisor.server.session.session import EXIT_DRAIN_SECONDS, Session, now_ms
from ptyvisor.wire.frames import encode_frame, new_nonce
from tests.timeouts import scaled

from ...conftest import poll
from ..test_child import reap

pytestmark = pytest.mark.anyio

SID = "stest01"


@dataclass
class Config:
    replay_bytes: int = 1 << 20
    render_lag_limit: int = 0
    scrollback: int = 100
    record_limit: int = 0
    url: str = "ws://127.0.0.1:1"
    control_path: str = "/nonexistent"


@dataclass(eq=False)
class Listener:
    """An attached client as the session sees it; `take` drains its outbox."""

    outbox: Outbox = field(default_factory=Outbox)
    answers_queries: bool = False
    output: bytearray = field(default_factory=bytearray)
    messages: list[dict[str, object]] = field(default_factory=list)
    output_at: list[int] = field(default_factory=list)
    """How much output had come when each message came."""

    def take(self) -> None:
        while (item := self.outbox.pop()) is not None:
            if isinstance(item, bytes):
                self.output += item
                continue
            text = item.text.decode() if isinstance(item, Tracked) else item
            self.messages.append(json.loads(text))
            self.output_at.append(len(self.output))

    def seen(self) -> bytes:
        """All the output so far."""
        self.take()
        return bytes(self.output)

    def first(self, kind: str) -> dict[str, object] | None:
        self.take()
        return next((m for m in self.messages if m.get("type") == kind), None)


@asynccontextmanager
async def running(
    argv: Sequence[str],
    tmp_path: Path,
    *,
    agent: str | None = None,
    config: Config | None = None,
    holds: Callable[[str, str], bool] | None = None,
) -> AsyncIterator[tuple[Session, Listener]]:
    """A session running ``argv``, with one listener attached from its start
    (``holds``: the control socket's `PendingRequests.holds`)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LC_ALL": "C.UTF-8"}
    started = start(argv, cwd=str(tmp_path), env=env, cols=80, rows=24)
    child = Child(started.pid, started.fd, started.tty)
    identity = Identity(
        id=SID,
        name="test",
        argv=list(argv),
        command=list(argv),
        cwd=str(tmp_path),
        agent=agent,
        created_at=now_ms(),
        nonce=new_nonce(),
    )
    session = Session(
        identity,
        child,
        cols=80,
        rows=24,
        config=config or Config(),
        on_change=lambda: None,
        holds=holds,
    )
    listener = Listener()
    async with anyio.create_task_group() as tg:
        tg.start_soon(reap, child)
        tg.start_soon(session.run)
        await session.clients.attach(listener, since=0, req_id=1)
        try:
            yield session, listener
        finally:
            session.close()
            with anyio.fail_after(scaled(30)):
                await session.finished.wait()
            tg.cancel_scope.cancel()


async def until(check: Callable[[], bool], wait: float = 20) -> None:
    async def checked() -> bool:
        return check()

    await poll(checked, wait=wait)


def exit_of(listener: Listener) -> dict[str, object] | None:
    process = listener.first("process")
    return None if process is None else process["process"]  # type: ignore[return-value]


async def test_the_exit_reaches_a_client_after_every_byte_the_program_wrote(
    tmp_path: Path,
) -> None:
    """A client that stops reading at the exit (``ptyvisor attach`` does) has seen
    all the output: the last line, written just before the exit, included."""
    script = "import sys; sys.stdout.write('x' * 300000 + '\\nLAST-LINE\\n'); sys.exit(7)"
    async with running([sys.executable, "-c", script], tmp_path) as (session, listener):
        await until(lambda: exit_of(listener) is not None)
        process = exit_of(listener)
        assert process is not None and process["exit_code"] == 7
        assert process["ended"] == "exited"
        exited = next(i for i, m in enumerate(listener.messages) if m["type"] == "process")
        before = bytes(listener.output[: listener.output_at[exited]])
        assert before.count(b"x") == 300000 and before.endswith(b"LAST-LINE\r\n")
        assert session.stats().output_bytes == len(before)


async def test_a_program_that_leaves_the_terminal_open_still_ends(tmp_path: Path) -> None:
    """Its background job keeps the PTY open, so no end-of-file comes: the exit is
    published after what was written by then (within `EXIT_DRAIN_SECONDS`), and the
    job goes with the session's stop."""
    # The job ignores the hangup the program's exit sends its process group.
    argv = ["sh", "-c", "trap '' HUP; sleep 60 & echo started-job; exit 3"]
    async with running(argv, tmp_path) as (session, listener):
        await until(lambda: exit_of(listener) is not None, wait=10 + EXIT_DRAIN_SECONDS)
        process = exit_of(listener)
        assert process is not None and process["exit_code"] == 3
        assert b"started-job" in listener.seen()
        assert in_session(session.child.pid), "the job is still running"
    assert not in_session(session.child.pid), "the job outlived the session's stop"


def in_session(sid: int) -> list[int]:
    """The live processes whose session id is ``sid``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[3] == str(sid) and fields[0] != "Z":
            found.append(int(pid))
    return found


async def test_input_reaches_the_program_in_order_and_not_after_its_end(tmp_path: Path) -> None:
    # No echo: the terminal's echo and cat's copy would interleave anywhere in a line
    # on a busy machine; cat's copy alone shows the order the program read.
    script = "stty -echo; echo ready; exec cat"
    async with running(["sh", "-c", script], tmp_path) as (session, listener):
        await until(lambda: b"ready" in listener.seen())
        for n in range(20):
            assert session.write_input(f"line-{n}\n".encode())
        await until(lambda: b"line-19" in listener.seen())
        lines = [line for line in listener.seen().split(b"\r\n") if line]
        assert lines == [b"ready", *(f"line-{n}".encode() for n in range(20))]
        assert session.write_input(b"\x04")  # end of input: cat exits
        await until(lambda: exit_of(listener) is not None)
        assert not session.write_input(b"too late\n")


async def test_a_resize_reaches_the_program_and_the_screen(tmp_path: Path) -> None:
    script = (
        "import os, signal, sys\n"
        "signal.signal(signal.SIGWINCH, lambda *_: print('size', *os.get_terminal_size()))\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    async with running([sys.executable, "-c", script], tmp_path) as (session, listener):
        await until(lambda: b"ready" in listener.seen())
        await session.resize(100, 30)
        await until(lambda: b"size 100 30" in listener.seen())
        resized = listener.first("resized")
        assert resized is not None and resized["size"] == {"cols": 100, "rows": 30}
        assert session.summary().size.cols == 100
        snapshot = await session.snapshot()
        assert (snapshot.size.cols, snapshot.size.rows) == (100, 30)


async def test_an_authentic_frame_is_applied_and_never_shown_and_a_forged_one_is_rejected(
    tmp_path: Path,
) -> None:
    """The program writes its extension's frame between two lines: the client gets the
    lines, the activity change, and no trace of the frame."""
    frames = tmp_path / "frames"
    async with running(
        ["sh", "-c", f"read go; cat {frames}; read end"], tmp_path, agent="claude-code"
    ) as (
        session,
        listener,
    ):
        nonce = session.identity.nonce
        working = {"type": "activity", "phase": "working", "at": now_ms(), "agent": "claude-code"}
        forged = encode_frame(SID, new_nonce(), {**working, "phase": "failed"})
        frames.write_bytes(b"before\n" + encode_frame(SID, nonce, working) + forged + b"after\n")
        session.write_input(b"go\n")
        await until(lambda: b"after" in listener.seen())
        changed = listener.first("activity")
        assert changed is not None and changed["activity"]["phase"] == "working"  # type: ignore[index]
        assert b"\x1b]" not in listener.seen() and b"before\r\nafter" in listener.seen()
        stats = session.stats()
        assert stats.frames_applied == 1 and sum(stats.frames_rejected.values()) == 1
        assert session.summary().activity.phase.value == "working"


async def test_a_kill_ends_the_program_and_says_it_was_killed(tmp_path: Path) -> None:
    script = (
        "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
        "print('ignoring HUP', flush=True); time.sleep(60)"
    )
    async with running([sys.executable, "-c", script], tmp_path) as (session, listener):
        await until(lambda: b"ignoring HUP" in listener.seen())  # not before it does
        with anyio.fail_after(scaled(20)):
            await session.kill()
        await until(lambda: exit_of(listener) is not None)
        process = exit_of(listener)
        assert process is not None and process["ended"] == "killed"
        assert process["signal"] == signal.SIGKILL  # HUP ignored: KILL after the grace
        assert session.ended()
