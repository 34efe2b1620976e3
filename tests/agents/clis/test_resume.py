"""Resume, end to end, for each real agent: one turn under ``ptyvisor serve``; then
everything the server runs is killed as a reboot would (``kill -9`` of the keeper, the
server process and every program); ``serve`` starts again and ``ptyvisor resume``
starts the agent on its own conversation: the fake model gets the first turn in the
history of the second."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio import to_thread

from ptyvisor.client.client import Client
from ptyvisor.server import records
from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.installed import agent_bin_dir
from tests.agents.clis.offline import offline_env
from tests.agents.clis.ready import PROMPT_SHOWN, answer_startup_dialogs
from tests.agents.clis.under_ptyvisor import AgentRun, Screen
from tests.timeouts import scaled

from ...conftest import PTYVISOR_BIN, TOKEN, start_serve

pytestmark = pytest.mark.anyio

READY: dict[str, Screen] = {
    **PROMPT_SHOWN,
    # A resumed OpenCode shows its conversation instead of "Ask anything".
    "opencode": lambda screen: "ctrl+p" in screen and "Fake model" in screen,
    "kilo": lambda screen: "ctrl+p" in screen and "Fake model" in screen,
}
RESUMED: dict[str, Screen] = {
    **READY,
    # A resumed Pi shows its conversation below its logo, which scrolls off.
    "pi": lambda screen: "FIRST-DONE" in screen and "fake-model" in screen,
}
SIZE: dict[str, tuple[int, int]] = {
    # oh-my-pi 18.2.3 in 26 rows or fewer draws no transcript for a prompt typed in its
    # first seconds (its welcome panel animating): the model answers, nothing shows.
    "oh-my-pi": (120, 40),
}
"""A terminal size other than the default 80x24 (spawn's), where an agent needs one."""
PR_SET_CHILD_SUBREAPER = 36
FIRST = "Remember the word PAPAYA-7 for later"
SECOND = "Say which word I asked you to remember"
"""No "?": Codex takes one typed into a prompt as its shortcut key now and then."""


class Serve:
    def __init__(self, tmp_path: Path, env: dict[str, str], run: str) -> None:
        out = tmp_path / f"{run}.out"
        self.proc, _ = start_serve(["--port", "0"], env=env, stdout=out)
        self.url = out.read_text().split("serving on ", 1)[1].split()[0]

    def kill_everything(self) -> None:
        """What a reboot does: every process of the server and its programs, at once,
        and none of them left behind, not even as a zombie.

        The reaping matters: Copilot CLI takes a session whose lock names a pid that
        still exists (a zombie does) as in use by another CLI and asks before resuming.
        Killed here, the programs are orphans of init, and in a container an init may
        reap late or never (CI's did); so this test process takes them as their
        subreaper and reaps them itself."""
        tree = _descendants(self.proc.pid)
        with _subreaper():
            for pid in [self.proc.pid, *tree]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
            _reap(tree, wait=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


async def recorded(state_dir: Path, session: str, native: str, *, wait: float = 30) -> None:
    """Wait until the records on disk hold ``native`` as the session's agent id."""
    path = state_dir / records.FILE
    with anyio.fail_after(scaled(wait)):
        while True:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                row = db.execute(
                    "SELECT native_session_id FROM sessions WHERE id = ?", (session,)
                ).fetchone()
            if row is not None and row[0] == native:
                return
            await anyio.sleep(0.05)


async def persisted(home: Path, text: str, *, wait: float = 30) -> None:
    """Wait until the agent has written ``text`` to a file of its own under ``home``.

    An agent writes its conversation a moment after it draws it (Claude Code 2.1
    queues transcript lines and flushes them on a timer): a reboot right after the
    turn, under load, can lose the turn, and then the agent itself says "No
    conversation found". The reboot this test stands for comes later than that."""

    def found() -> bool:
        needle = text.encode()
        for path in home.rglob("*"):
            with contextlib.suppress(OSError):
                if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                    return True
        return False

    with anyio.fail_after(scaled(wait)):
        while True:
            if await to_thread.run_sync(found):
                return
            await anyio.sleep(0.1)


@contextlib.contextmanager
def _subreaper() -> Iterator[None]:
    """Orphans below this process become its children while inside (Linux)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    if prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    try:
        yield
    finally:
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _reap(pids: list[int], *, wait: float) -> None:
    """Wait until every pid is gone from the process table: reaped here once it is our
    child (an orphan reaches its subreaper only when its parent has died), or by
    whoever else it belonged to."""
    left = set(pids)
    deadline = time.monotonic() + scaled(wait)
    while left:
        for pid in list(left):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            if not Path(f"/proc/{pid}").exists():
                left.discard(pid)
        if left and time.monotonic() > deadline:
            raise AssertionError(f"processes of the killed server never went: {sorted(left)}")
        time.sleep(0.01)


def _descendants(root: int) -> list[int]:
    found: list[int] = []
    pending = [root]
    while pending:
        pid = pending.pop()
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                children = [int(child) for child in text.split()]
                found.extend(children)
                pending.extend(children)
    return found


async def phase_is(run: AgentRun, phase: str, *, wait: float = 30) -> None:
    """Wait until the session's state is ``phase`` (however long before now it got
    there: an attach brings no event for the activity as it stands)."""
    with anyio.fail_after(scaled(wait)):
        while True:
            listed = {s.id: s for s in await run.client.list()}
            if listed[run.session_id].activity.phase.value == phase:
                return
            await anyio.sleep(0.05)


@asynccontextmanager
async def watched(
    url: str, session_id: str, model: FakeModelServer, project: Path
) -> AsyncIterator[AgentRun]:
    async with Client.connect(url, TOKEN) as client, anyio.create_task_group() as tg:
        await client.attach(session_id, answers_queries=False)
        run = AgentRun(client, session_id, model, project)
        tg.start_soon(run.collect)
        yield run
        tg.cancel_scope.cancel()


@pytest.mark.timeout(240, func_only=True)
@pytest.mark.parametrize("agent", list(READY))
async def test_resume_after_a_reboot(agent: str, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(parents=True)
    ready = READY[agent]
    async with FakeModelServer() as model:
        env, extra_argv = offline_env(agent, home, project, model.base_url)
        # The server's own environment is the agent's (a resumed session gets no
        # other: the records never keep environment values).
        env["PATH"] = f"{agent_bin_dir()}{os.pathsep}{env['PATH']}"
        env.update(PTYVISOR_STATE_DIR=str(tmp_path / "state"), PTYVISOR_TOKEN=TOKEN)
        first = Serve(tmp_path, env, "first")
        try:
            async with Client.connect(first.url, TOKEN) as client:
                cols, rows = SIZE.get(agent, (80, 24))
                summary = await client.spawn(
                    extra_argv, agent=agent, cwd=str(project), cols=cols, rows=rows
                )
            old = summary.id
            async with watched(first.url, old, model, project) as run:
                await answer_startup_dialogs(run, agent)
                await run.wait_screen(ready, wait=60)
                await run.wait_phase("waiting", wait=30)
                model.script(Reply.text("Noted FIRST-DONE"))
                mark = run.mark()
                await run.submit(FIRST)
                await run.wait_phase("working", since=mark, wait=30)
                await run.wait_phase("waiting", since=mark, wait=60)
                await run.wait_screen("FIRST-DONE", wait=20)
                listed = {s.id: s for s in await run.client.list()}
                native = listed[old].activity.native_session_id
                assert native, "the agent reported its own session id"
            # Records are committed a moment after a change (records.FLUSH_SECONDS):
            # the reboot comes once the id is on disk, as one a while later would.
            await recorded(tmp_path / "state", old, native)
            await persisted(home, "FIRST-DONE")
            first.kill_everything()
        finally:
            first.stop()

        second = Serve(tmp_path, env, "second")
        try:
            resumed = await anyio.run_process(
                [PTYVISOR_BIN, "resume", "--url", second.url, old[:6]],
                env=env,
                stdin=subprocess.DEVNULL,
                check=False,
            )
            assert resumed.returncode == 0, resumed.stderr
            new = resumed.stdout.decode().strip()
            async with watched(second.url, new, model, project) as run:
                await answer_startup_dialogs(run, agent)
                await run.wait_screen(RESUMED[agent], wait=60)
                # Drawn is not yet Ready: a resumed Gemini CLI draws its prompt, then
                # loads the conversation, dropping keys (launch.RESUMING_SCREEN).
                await phase_is(run, "waiting")
                model.script(Reply.text("The word was PAPAYA-7 SECOND-DONE"))
                since = len(model.requests)
                await run.submit(SECOND)
                request = await run.scripted_request(since, "the second turn")
                texts = request.user_texts()
                assert any(FIRST in text for text in texts), texts  # the conversation
                assert any(SECOND in text for text in texts), texts
                await run.wait_screen("SECOND-DONE", wait=30)
                listed = {s.id: s for s in await run.client.list(all=True)}
                assert listed[new].resumed_from == old
                assert listed[new].cwd == str(project)
                assert listed[old].past and listed[old].process.ended == "lost"
                assert listed[old].activity.native_session_id == native
                await run.client.close(new)
            ls = await anyio.run_process(
                [PTYVISOR_BIN, "ls", "--all", "--json", "--url", second.url], env=env
            )
            by_id = {s["id"]: s for s in json.loads(ls.stdout)}
            assert by_id[old]["past"] is True and by_id[new]["resumed_from"] == old
        finally:
            second.stop()
    model.assert_no_unexpected()
