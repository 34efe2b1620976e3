"""The flows the real-agent tests share, driven by a small per-agent description.

Each agent's test file keeps what is its own (the screens its TUI draws, the keys it
takes, how its hooks report) in a :class:`Session` and calls the shared flow:
:func:`session_end_to_end` (Ready, a turn with an approval and a question answered by
keys, a failed turn, the exit), :func:`allow_then_deny` (approvals answered from a
client), :func:`queued_message_reaches_model` and :func:`interrupted_by_esc`. How to
drive each TUI (its keys, when it reads them, how to quit) is :data:`KEYS`, shared with
the offline TUI test (tests/agents/clis/test_agents_offline.py, which explains them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from ptyvisor.agents.interaction import Interaction
from ptyvisor.config import Settings
from ptyvisor.errors import ServerError
from tests.agents.clis.fake_model import FakeModelServer, Reply, Request
from tests.agents.clis.ready import PROMPT_SHOWN, answer_startup_dialogs, with_startup
from tests.agents.clis.under_ptyvisor import FULL_TURN_PHASES, AgentRun, Screen, agent_session, row
from tests.timeouts import scaled

ENTER = "\r"
ESC = "\x1b"
DOWN = "\x1b[B"
CTRL_C = "\x03"
CTRL_D = "\x04"


def ctrl_c_twice(then: str) -> tuple[tuple[str, str | None], ...]:
    """Quit by Ctrl-C on an empty prompt, which asks for a second one (``then``)."""
    return ((CTRL_C, then), (CTRL_C, None))


@dataclass(frozen=True)
class Keys:
    """How to drive one agent's TUI (see tests/agents/clis/test_agents_offline.py)."""

    approval: str | None
    """Text of the approval prompt; None: the agent runs tools without asking."""
    quit: tuple[tuple[str, str | None], ...]
    """Keystrokes to quit, each with the text to wait for before the next one."""
    approve: str = ENTER
    approve_after: float = 0.6
    """Seconds to wait after a dialog shows before its keys count (TUIs drop keys that
    arrive with a dialog's first frames; Claude ignores them for ~0.1-0.2 s)."""
    enter_after: float = 0.0
    """Seconds between a typed prompt showing and its Enter (Gemini takes an Enter
    within 30 ms of the previous key for a newline in a paste)."""
    ready_wait: float = 60
    """Seconds an end-to-end test gives ptyvisor's Ready (``waiting``)."""
    ready_by_screen: bool = False
    """Ready comes from the screen, not a hook (Codex starts its thread lazily:
    SessionStart fires with the first prompt; agents.READY_SCREEN says Ready)."""


KEYS: dict[str, Keys] = {
    # The default ready_wait: the suite's first Claude start on a fresh clone under
    # load once took longer than 30 s (CI, stop 37).
    "claude-code": Keys(
        approval="Do you want to proceed?",
        quit=ctrl_c_twice("Press Ctrl-C again to exit"),
    ),
    "codex": Keys(
        approval="Would you like to run the following command?",
        approve="y",
        approve_after=0.3,
        quit=((CTRL_C, None),),
        ready_wait=15,
        ready_by_screen=True,
    ),
    "opencode": Keys(approval="Permission required", quit=((CTRL_C, None),), approve_after=0.3),
    # Kilo ignores Ctrl-C on an empty prompt; Ctrl-D quits.
    "kilo": Keys(approval="Permission required", quit=((CTRL_D, None),), approve_after=0.3),
    "pi": Keys(approval=None, quit=((CTRL_D, None),), approve="", approve_after=0),
    "oh-my-pi": Keys(approval=None, quit=((CTRL_D, None),), approve="", approve_after=0),
    "gemini-cli": Keys(
        approval="Allow execution of [Shell]?", quit=ctrl_c_twice("again to exit"), enter_after=0.1
    ),
    "qwen-code": Keys(approval="Allow execution", quit=ctrl_c_twice("again to exit")),
    "droid": Keys(approval="Command to approve", quit=ctrl_c_twice("again to exit")),
    # Cline exits on one Ctrl-C; its Ready is its input line (no hook at start-up).
    "cline": Keys(
        approval="Cline needs permission",
        approve="y",
        quit=((CTRL_C, None),),
        ready_by_screen=True,
    ),
    "copilot": Keys(
        approval="Do you want to run this command?",
        quit=((CTRL_D, None),),
        ready_by_screen=True,
    ),
}


@asynccontextmanager
async def started(
    agent: str, tmp_path: Path, *, settings: Settings | None = None
) -> AsyncIterator[AgentRun]:
    """``agent`` under ptyvisor with the fake model (``run.model``), once ptyvisor says
    Ready and its input prompt shows."""
    keys = KEYS[agent]
    async with (
        FakeModelServer() as model,
        agent_session(agent, tmp_path, model, settings=settings) as run,
    ):
        await answer_startup_dialogs(run, agent)
        if keys.ready_by_screen:
            await run.wait_screen(PROMPT_SHOWN[agent], wait=30)
            await run.wait_phase("waiting", wait=keys.ready_wait)
        else:
            await run.wait_phase("waiting", wait=keys.ready_wait)
            await run.wait_screen(PROMPT_SHOWN[agent], wait=30)
        yield run


async def quit_from_prompt(run: AgentRun, agent: str, *, since: int = 0) -> None:
    """Leave the TUI from its empty prompt with its own keys and see it stop."""
    keys = KEYS[agent]
    await anyio.sleep(keys.approve_after)
    for key, then in keys.quit:
        await run.type(key)
        if then is not None:
            await run.wait_screen(then, wait=10)
    await run.wait_phase("stopped", since=since, wait=15)


Check = Callable[[AgentRun, Interaction], Awaitable[None]]
SECRET = "sk-ant-api03-e2eSecretValue0123456789abcdefghijklmnop"
COMMAND = f"echo tool-ran {SECRET} > out.txt && cat out.txt"
SHOWN_COMMAND = "echo tool-ran sk-ant-*** > out.txt && cat out.txt"
QUESTION = "Which colour?"
OPTIONS = ["Red", "Blue", "Green"]


def answered_only_by_keys(answers: dict[str, list[str]]) -> Check:
    """A check that a client's ``answers`` to the interaction are refused as
    ``not_answerable``: no hook holds it, only keys in the terminal answer it."""

    async def check(run: AgentRun, interaction: Interaction) -> None:
        refused = await error_of(run, interaction.id, answers=answers)
        assert refused.code == "not_answerable"

    return check


async def needs_input_now(run: AgentRun, _: Interaction) -> None:
    """The latest activity still waits for the approval."""
    assert run.changes[-1].activity.phase.value == "needs_input"


@dataclass(frozen=True)
class Session:
    """One agent's own part of the full-session flow (:func:`session_end_to_end`)."""

    agent: str
    question_screen: str
    """Text showing the question's chooser."""
    chosen: Callable[[str], bool]
    """Whether the tool result the model gets says "Blue" the agent's way."""
    failure_status: int
    """An HTTP status the agent does not retry."""
    approval_screen: str | None = None
    """Text showing the approval dialog; None: its KEYS approval."""
    picked: str | None = None
    """Text showing "Blue" selected after Down, waited for before Enter; None: Down and
    Enter are typed together."""
    tool: str | None = None
    approval_title: str | None = None
    question_tool: str | None = None
    question_title: str | None = None
    on_approval: Check | None = needs_input_now
    """More checks once the approval dialog shows."""
    typed_only: bool = False
    """No client can answer the interactions (the agent's hooks cannot, or its remote
    answers are off by default): only keys in the TUI can."""
    on_question: Check | None = None
    """More checks on the question before it is answered."""
    reason_ok: Callable[[str], bool] = lambda reason: True
    """More to ask of the failed turn's reason."""
    failed_screen: Screen | None = None
    """Text showing the failed turn is over; None: the input prompt."""


def assert_is(interaction: Interaction, kind: str, tool: str | None, title: str | None) -> None:
    """``interaction`` is of ``kind``, and of ``tool`` and ``title`` where given."""
    assert interaction.kind == kind
    if tool is not None:
        assert interaction.tool == tool
    if title is not None:
        assert interaction.title == title


async def session_end_to_end(tmp_path: Path, spec: Session) -> None:
    """Ready; a turn with a shell command approved (its secret masked) and a question
    answered by keystrokes, then a text answer; a turn the provider fails at once;
    the exit. The client sees exactly FULL_TURN_PHASES and nothing rejected."""
    agent, keys = spec.agent, KEYS[spec.agent]
    async with started(agent, tmp_path) as run:
        model = run.model
        model.script(
            Reply.shell(agent, COMMAND, description="Write the marker file"),
            Reply.ask(agent, QUESTION, OPTIONS),
            Reply.text("All done DONE-1"),
        )
        mark = run.mark()
        await run.submit("Write the marker file")
        await run.wait_phase("working", since=mark)
        call = await run.scripted_request(0, "the shell call")

        approval = await run.wait_interaction(since=mark)
        assert_is(approval, "approval", spec.tool, spec.approval_title)
        assert row(approval, "Command") == (SHOWN_COMMAND, True)
        assert SECRET not in approval.model_dump_json()
        approval_screen = spec.approval_screen or keys.approval
        assert approval_screen is not None
        await run.wait_screen(approval_screen, wait=10)
        if spec.on_approval is not None:
            await spec.on_approval(run, approval)
        if spec.typed_only:
            summary = next(s for s in await run.client.list() if s.id == run.session_id)
            assert not summary.answerable and not run.changes[-1].answerable, summary
        assert not (run.project / "out.txt").exists(), "ran before it was approved"
        mark = run.mark()
        await run.answer_with_keys(keys.approve, settle=keys.approve_after)
        asked, result = await model.answer_to(call)
        assert "tool-ran" in result.output, result

        question = await run.wait_interaction(since=mark)
        assert_is(question, "question", spec.question_tool, spec.question_title)
        assert [q.question for q in question.questions] == [QUESTION]
        assert [o.label for o in question.questions[0].options] == OPTIONS
        if spec.on_question is not None:
            await spec.on_question(run, question)
        await run.wait_screen(spec.question_screen, wait=10)
        if spec.picked is None:
            mark = run.mark()
            await run.answer_with_keys(DOWN, ENTER, settle=keys.approve_after)
        else:
            # Apart: an Enter in the same read as the arrow, or within 30 ms of it
            # (Gemini: Shift+Enter), does not pick what the arrow selected.
            await anyio.sleep(keys.approve_after)
            await run.type(DOWN)
            await run.wait_screen(spec.picked, wait=10)
            mark = run.mark()
            await run.answer_with_keys(ENTER, settle=keys.approve_after)
        _, chosen = await model.answer_to(asked)
        assert spec.chosen(chosen.output), chosen
        await run.wait_phase("waiting", since=mark)
        await run.wait_screen("DONE-1", wait=10)

        status = spec.failure_status
        model.script(Reply.error(status, f"fake model: prompt rejected E2E-{status}"))
        mark = run.mark()
        await run.submit("This one fails")
        failed = await run.wait_phase("failed", since=mark)
        reason = failed.activity.reason
        assert reason is not None
        assert f"E2E-{status}" in reason, reason
        assert spec.reason_ok(reason), reason
        await run.wait_screen(spec.failed_screen or PROMPT_SHOWN[agent], wait=10)

        await quit_from_prompt(run, agent, since=mark)
        assert run.phases == with_startup(agent, FULL_TURN_PHASES), run.phases
        await run.assert_clean()
    assert model.pending == 0
    assert (run.project / "out.txt").read_text().split()[0] == "tool-ran"


async def answer(run: AgentRun, ident: str, **fields: Any) -> None:
    await run.client.request(
        {"type": "answer", "session": run.session_id, "interaction": ident, **fields}
    )


async def error_of(run: AgentRun, ident: str, **fields: Any) -> ServerError:
    with pytest.raises(ServerError) as caught:
        await answer(run, ident, **fields)
    return caught.value


async def held(run: AgentRun, ident: str, *, wait: float = 20) -> None:
    """Until the hook's request for ``ident`` is held on the control socket: an answer
    that never fits (a suggestion without behavior) is ``gone`` before, ``bad_request``
    from then on."""
    with anyio.fail_after(scaled(wait)):
        while (await error_of(run, ident, suggestion=99)).code != "bad_request":  # noqa: ASYNC110 - polls the server
            await anyio.sleep(0.1)


ALLOWED = "echo allowed-ran > allowed.txt && cat allowed.txt"
DENIED = "echo denied-ran > denied.txt"
DENIAL = "not this one E2E-DENY"


async def allow_then_deny(
    run: AgentRun, agent: str, *then: Reply, denial_reaches_model: bool = True
) -> int:
    """One turn answered from the client: a shell approval allowed (the command runs,
    its output reaches the model; a second answer to it is ``gone``), then one denied
    with a message (it does not run; the model gets the message unless
    ``denial_reaches_model`` is off). ``then``: the replies scripted after those two.
    Returns the mark taken as the denial was sent."""
    run.model.script(
        Reply.shell(agent, ALLOWED, description="Write the allowed file"),
        Reply.shell(agent, DENIED, description="Write the denied file"),
        *then,
    )
    mark = run.mark()
    await run.submit("Answer me remotely")
    first = await run.scripted_request(0, "the first model request")

    approval = await run.wait_interaction(since=mark)
    assert approval.kind == "approval"
    assert row(approval, "Command") == (ALLOWED, True)
    await held(run, approval.id)
    assert not (run.project / "allowed.txt").exists(), "ran before it was approved"
    mark = run.mark()
    await answer(run, approval.id, behavior="allow")
    second, result = await run.model.answer_to(first)
    assert "allowed-ran" in result.output and not result.is_error, result
    assert (run.project / "allowed.txt").read_text().strip() == "allowed-ran"
    assert (await error_of(run, approval.id, behavior="deny")).code == "gone"

    denial = await run.wait_interaction(since=mark)
    assert row(denial, "Command") == (DENIED, True)
    await held(run, denial.id)
    mark = run.mark()
    await answer(run, denial.id, behavior="deny", message=DENIAL)
    _, result = await run.model.answer_to(second)
    if denial_reaches_model:
        assert DENIAL in result.output, result
    assert not (run.project / "denied.txt").exists(), "ran although it was denied"
    return mark


Meanwhile = Callable[[AgentRun, int], Awaitable[None]]


async def acts_on_a_queued_message(
    run: AgentRun, queued: str, *, tool: Reply | None = None, meanwhile: Meanwhile | None = None
) -> Request:
    """Queue ``queued`` while the agent works on a turn; returns the model request that
    carries it (the agent's Stop hook blocked the stop with it as the reason), once
    the agent has finished that too and nothing is queued any more. ``tool``: the turn
    starts with that call, which ``meanwhile`` (given the mark taken at the prompt)
    sees through: a tool's end must not drop the queued message."""
    first = [replace(tool, delay=3.0), Reply.text("First part DONE-1")] if tool else []
    run.model.script(
        *(first or [replace(Reply.text("First part DONE-1"), delay=3.0)]),  # working meanwhile
        Reply.text("Second part DONE-2"),
    )
    mark = run.mark()
    await run.submit("Start working")
    await run.wait_phase("working", since=mark)
    await run.client.send_message(run.session_id, queued)
    summary = next(s for s in await run.client.list() if s.id == run.session_id)
    assert summary.queued_message == queued and summary.takes_messages
    if meanwhile is not None:
        await meanwhile(run, mark)
    later = await run.model.wait_for_request(
        lambda r: r.outcome == "scripted" and r.mentions(queued), wait=30
    )
    await run.wait_screen("DONE-2", wait=20)
    await run.wait_phase("waiting", since=mark + 1)
    summary = next(s for s in await run.client.list() if s.id == run.session_id)
    assert summary.queued_message is None
    await run.assert_clean()
    return later


async def queued_message_reaches_model(
    agent: str,
    tmp_path: Path,
    queued: str,
    check: Callable[[AgentRun, Request, str], Awaitable[None]],
    *,
    tool: Reply | None = None,
    meanwhile: Meanwhile | None = None,
) -> None:
    """:func:`acts_on_a_queued_message` from Ready; ``check`` gets the request that
    carried the message (how it reaches the model is the agent's own)."""
    async with started(agent, tmp_path) as run:
        later = await acts_on_a_queued_message(run, queued, tool=tool, meanwhile=meanwhile)
        await check(run, later, queued)
    assert run.model.pending == 0


async def in_a_user_text(run: AgentRun, later: Request, queued: str) -> None:
    """The queued message is in one of the request's user messages."""
    assert any(queued in text for text in later.user_texts()), later.summary()


async def interrupted_by_esc(
    run: AgentRun,
    prompt: str,
    busy: Screen,
    gone: Screen,
    *,
    key: str = ESC,
    settle: float = 0,
    late: float = 1,
    hooks_after: int = 0,
) -> None:
    """Esc (or ``key``: Ctrl-C) during the turn ``prompt`` starts (the caller scripted
    a slow reply or a long command, showing ``busy``) ends it: ``waiting``, reason
    ``interrupted`` (inferred by ptyvisor from the key), ``gone`` on screen, and no
    hook within ``late`` s brings ``working`` back. ``hooks_after``: how many frames
    the agent's extension sends from the key on (what its pinned version reports on
    an interrupt, written in its extension's README)."""
    mark = run.mark()
    await run.submit(prompt)
    await run.wait_phase("working", since=mark)
    await run.scripted_request(0, "the slow request")
    await run.wait_screen(busy, wait=10)
    await anyio.sleep(settle)
    before = await frames_arrived(run)
    mark = run.mark()
    await run.type(key)
    interrupted = await run.wait_phase("waiting", since=mark, wait=10)
    assert interrupted.activity.reason == "interrupted"
    await run.wait_screen(gone, wait=10)
    await anyio.sleep(late)  # any late hook would have landed by now
    assert run.changes[-1].activity.phase.value == "waiting", run.phases
    assert run.phases == with_startup(run.agent, ["starting", "waiting", "working", "waiting"])
    after = await frames_arrived(run) - before
    assert after == hooks_after, f"{after} frames after the interrupt, not {hooks_after}"
    await run.assert_clean()


async def frames_arrived(run: AgentRun) -> int:
    """Authentic frames the session has had, whether or not they changed anything."""
    stats = await run.client.stats(run.session_id)
    return stats.frames_applied + stats.frames_ignored
