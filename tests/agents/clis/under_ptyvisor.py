"""Harness: a real agent TUI started *through ptyvisor* (spawn {agent}), its
activity watched by a real WebSocket client, its screen read from snapshots.

    async with agent_session("claude-code", tmp_path, model) as run:
        await run.wait_screen("manual mode on")
        await run.type("hello\\r")
        await run.wait_phase("working")
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.agents.interaction import Interaction
from ptyvisor.client.client import Client
from ptyvisor.config import ServerConfig, Settings
from ptyvisor.server.serving import run_server
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.wire.protocol import ActivityChanged
from tests.agents.clis.fake_model import FakeModelServer, Request
from tests.agents.clis.installed import agent_bin_dir
from tests.agents.clis.offline import offline_env
from tests.timeouts import scaled

TOKEN = "agents-token-" + "z" * 20
Screen = str | re.Pattern[str] | Callable[[str], bool]


def _with_options(base: list[str], more: list[str]) -> list[str]:
    """``base`` then ``more``, an option ``more`` gives again (``--approval-mode x``)
    replacing the one in ``base``, value and all."""
    given = {arg for arg in more if arg.startswith("--")}
    kept: list[str] = []
    skip = False
    for arg in base:
        if skip:
            skip = False
        elif arg in given:
            skip = True  # its value follows
        else:
            kept.append(arg)
    return [*kept, *more]


def cleared_to_working(change: ActivityChanged) -> bool:
    """The pending interaction was answered and the turn goes on."""
    return change.activity.phase is ActivityPhase.WORKING and change.pending_interaction is None


@dataclass
class AgentRun:
    """One agent session under ptyvisor, seen as a client sees it."""

    client: Client
    session_id: str
    model: FakeModelServer
    project: Path
    changes: list[ActivityChanged] = field(default_factory=list)
    agent: str = ""
    on_change: Callable[[ActivityChanged], Awaitable[None]] | None = None
    """Awaited with each change as it arrives, before any wait sees it: a client that
    acts the instant something happens (types at Ready), not at its next poll."""

    @property
    def phases(self) -> list[str]:
        """Distinct consecutive phases seen so far, e.g. starting, waiting, working…"""
        seen: list[str] = []
        for change in self.changes:
            phase = change.activity.phase.value
            if not seen or seen[-1] != phase:
                seen.append(phase)
        return seen

    async def screen(self) -> str:
        snapshot = await self.client.snapshot(self.session_id)
        terminal = HeadlessTerminal(snapshot.size.cols, snapshot.size.rows)
        terminal.feed(snapshot.screen.ansi.encode())
        return "\n".join(line.rstrip() for line in terminal.display)

    async def wait_screen(self, expected: Screen, *, wait: float = 60) -> str:
        last = ""
        try:
            with anyio.fail_after(scaled(wait)):
                while True:
                    last = await self.screen()
                    if shows(expected, last):
                        return last
                    await anyio.sleep(0.1)
        except TimeoutError:
            raise AssertionError(f"screen never showed {expected!r}; it shows:\n{last}") from None

    async def type(self, data: str | bytes) -> None:
        await self.client.send_input(data)

    async def submit(self, text: str) -> None:
        """Type ``text``, wait until the prompt shows it, then Enter on its own: a
        prompt and its Enter in one write would look like a paste to some TUIs. No
        pause before the Enter: one an agent would lose if typed this soon is held
        back by ptyvisor (agents.launch.SUBMIT_GAP), as for any client."""
        await self.type(text)
        await self.wait_screen(text, wait=15)
        await self.type("\r")

    async def scripted_request(self, since: int, what: str, *, wait: float = 30) -> Request:
        """The first scripted model request from index ``since`` on; on timeout the
        failure says ``what`` was expected and shows the screen."""
        try:
            return await self.model.wait_for_request(
                lambda r: r.outcome == "scripted" and r.index >= since, wait=wait
            )
        except AssertionError as error:
            raise AssertionError(f"{what}: {error}\nscreen:\n{await self.screen()}") from None

    async def assert_clean(self) -> None:
        """Every frame the extension wrote was accepted, and the model saw nothing
        it was not scripted for."""
        assert (await self.client.stats(self.session_id)).frames_rejected == {}
        self.model.assert_no_unexpected()

    async def wait_change(
        self, predicate: Callable[[ActivityChanged], bool], *, wait: float = 60, since: int = 0
    ) -> ActivityChanged:
        """The first activity change from index ``since`` on that satisfies ``predicate``."""
        try:
            with anyio.fail_after(scaled(wait)):
                while True:
                    for change in self.changes[since:]:
                        if predicate(change):
                            return change
                    await anyio.sleep(0.05)
        except TimeoutError:
            screen = "(no answer)"
            with anyio.move_on_after(scaled(5)):  # what the agent shows says why
                screen = await self.screen()
            raise AssertionError(
                f"no such activity change; phases so far: {self.phases}; "
                f"last: {self.changes[-1] if self.changes else None}; "
                f"the screen shows:\n{screen}"
            ) from None

    async def wait_phase(self, phase: str, *, wait: float = 60, since: int = 0) -> ActivityChanged:
        return await self.wait_change(
            lambda c: c.activity.phase is ActivityPhase(phase), wait=wait, since=since
        )

    async def wait_interaction(self, *, wait: float = 60, since: int = 0) -> Interaction:
        """The first interaction pending from index ``since`` on, other than the one
        pending just before it (which may be re-sent, e.g. when it stops being
        answerable)."""
        before = (
            self.changes[since - 1].pending_interaction if 0 < since <= len(self.changes) else None
        )
        change = await self.wait_change(
            lambda c: c.pending_interaction not in (None, before), wait=wait, since=since
        )
        assert change.pending_interaction is not None
        return change.pending_interaction

    async def answer_with_keys(
        self, *keys: str | bytes, settle: float, wait: float = 60
    ) -> ActivityChanged:
        """Answer the dialog on screen by typing ``keys``, then wait until the pending
        interaction clears and the turn works on. TUIs drop keys that arrive with a
        dialog's first frames and nothing on screen says when they start reading, so
        the keys wait ``settle`` seconds after the caller has seen the dialog."""
        await anyio.sleep(settle)
        mark = self.mark()
        for key in keys:
            await self.type(key)
        return await self.wait_change(cleared_to_working, since=mark, wait=wait)

    async def collect(self) -> None:
        """Record every activity change of the attached session (run it as a task)."""
        with contextlib.suppress(anyio.ClosedResourceError, anyio.EndOfStream):
            async for event in self.client.events():
                if isinstance(event, ActivityChanged):
                    if self.on_change is not None:
                        await self.on_change(event)
                    self.changes.append(event)

    def mark(self) -> int:
        """An index to pass as ``since`` so later waits only see later changes."""
        return len(self.changes)


FULL_TURN_PHASES = [
    "starting",
    "waiting",
    "working",
    "needs_input",
    "working",
    "needs_input",
    "working",
    "waiting",
    "working",
    "failed",
    "stopped",
]
"""Ready, a turn with an approval and a question, Ready, a failing turn, exit."""


def row(interaction: Interaction, label: str) -> tuple[str, bool]:
    """An approval row's value and whether it is monospace."""
    found = next(r for r in interaction.rows if r.label == label)
    return found.value, found.monospace


@asynccontextmanager
async def agent_session(
    agent: str,
    tmp_path: Path,
    model: FakeModelServer,
    *,
    cols: int = 120,
    rows: int = 40,
    settings: Settings | None = None,
    via: list[str] | None = None,
    args: list[str] | None = None,
    configure: Callable[[dict[str, str]], None] | None = None,
) -> AsyncIterator[AgentRun]:
    """Start ptyvisor's server, spawn ``agent`` through it, attach and watch it.
    ``via``: through this wrapper, whose far side has its own environment; ``args``:
    more of the agent's own arguments; ``configure(env)``: change its offline
    configuration (files under the env's HOME) before it starts."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    env, extra_argv = offline_env(agent, home, project, model.base_url)
    extra_argv = _with_options(extra_argv, args or [])
    if configure is not None:
        configure(env)
    env["PATH"] = f"{agent_bin_dir()}{os.pathsep}{env['PATH']}"
    config = ServerConfig(
        token=TOKEN, port=0, state_dir=tmp_path / "state", settings=settings or Settings()
    )
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, config)
        async with Client.connect(config.url, TOKEN) as client:
            summary = await client.spawn(
                extra_argv,
                agent=agent,
                cwd=str(project),
                env={} if via else env,
                cols=cols,
                rows=rows,
                via=via,
            )
            await client.attach(summary.id, answers_queries=False)
            run = AgentRun(client, summary.id, model, project, agent=agent)
            run.changes.extend([ActivityChanged(session=summary.id, activity=summary.activity)])
            tg.start_soon(run.collect)
            try:
                yield run
            finally:
                await client.close(summary.id)
        tg.cancel_scope.cancel()


def shows(expected: Screen, screen: str) -> bool:
    if isinstance(expected, str):
        return expected in screen
    if isinstance(expected, re.Pattern):
        return expected.search(screen) is not None
    return expected(screen)
