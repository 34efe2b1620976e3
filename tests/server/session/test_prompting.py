"""Delivering a prompt (session/prompting.py), against a stand-in session: what is
typed, when Enter is pressed again, when the text is typed again (at most once), and
every way it ends. The real agents: tests/agents/clis/test_prompt_e2e.py."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.agents.digest import prompt_digest
from ptyvisor.errors import PromptNotTaken
from ptyvisor.server.session.prompting import Prompter, shows

pytestmark = pytest.mark.anyio
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


class Stand:
    """A session as the prompter sees it; ``on_write`` plays the agent."""

    def __init__(self, *, phase: ActivityPhase = ActivityPhase.WAITING, bracketed: bool = True):
        self.now_phase = phase
        self.bracketed = bracketed
        self.gone = False
        self.written: list[bytes] = []
        self.rows: list[str] = []
        self.on_write: Callable[[bytes], None] = lambda data: None

    def phase(self) -> ActivityPhase:
        return self.now_phase

    def ended(self) -> bool:
        return self.gone

    def write_input(self, data: bytes) -> bool:
        self.written.append(data)
        self.on_write(data)
        return not self.gone

    async def bracketed_paste(self) -> bool:
        return self.bracketed

    async def screen_rows(self) -> list[str]:
        return self.rows


TEXT = "Fix the failing test\nthen run it again"


async def test_typed_once_as_a_paste_and_confirmed_by_its_digest() -> None:
    stand = Stand()
    prompter = Prompter(stand, lambda: 42)
    stand.on_write = lambda data: prompter.taken(prompt_digest(TEXT))
    assert await prompter.deliver(TEXT, ready_wait=1, confirm_wait=1) == 42
    assert stand.written == [PASTE_START + TEXT.replace("\n", "\r").encode() + PASTE_END + b"\r"]


async def test_without_bracketed_paste_a_line_break_does_not_submit_half() -> None:
    stand = Stand(bracketed=False)
    prompter = Prompter(stand, lambda: 1)
    stand.on_write = lambda data: prompter.taken(prompt_digest(TEXT))
    await prompter.deliver(TEXT, ready_wait=1, confirm_wait=1)
    assert stand.written == [b"Fix the failing test then run it again\r"]


async def test_without_bracketed_paste_only_ascii_whitespace_is_flattened() -> None:
    """A no-break space is part of the words: typed as it is, the agent's report of
    what it took has the prompt's own digest."""
    text = "Résumé\u00a0v2\nsee\u2003there"
    stand = Stand(bracketed=False)
    prompter = Prompter(stand, lambda: 1)
    stand.on_write = lambda data: prompter.taken(prompt_digest(data.decode().rstrip("\r")))
    assert await prompter.deliver(text, ready_wait=1, confirm_wait=1) == 1
    assert stand.written == ["Résumé\u00a0v2 see\u2003there\r".encode()]


async def test_another_prompt_taken_is_not_this_one() -> None:
    stand = Stand()
    prompter = Prompter(stand, lambda: 1)
    stand.on_write = lambda data: prompter.taken(prompt_digest("something else"))
    with pytest.raises(PromptNotTaken, match="did not report taking"):
        await prompter.deliver(TEXT, ready_wait=1, confirm_wait=0.3)


async def test_waits_for_the_agent_to_be_ready_then_types() -> None:
    stand = Stand(phase=ActivityPhase.STARTING)
    prompter = Prompter(stand, lambda: 1)
    stand.on_write = lambda data: prompter.taken(prompt_digest(TEXT))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: prompter.deliver(TEXT, ready_wait=5, confirm_wait=1))
        await anyio.sleep(0.05)
        assert stand.written == [], "typed before the agent was ready"
        stand.now_phase = ActivityPhase.WAITING
        prompter.activity_changed()
    assert len(stand.written) == 1


async def test_not_ready_in_time_says_what_it_is() -> None:
    stand = Stand(phase=ActivityPhase.WORKING)
    with pytest.raises(PromptNotTaken, match=r"not ready for input within 0.2 s \(it is working\)"):
        await Prompter(stand, lambda: 1).deliver(TEXT, ready_wait=0.2, confirm_wait=1)
    assert stand.written == []


async def test_text_left_in_the_box_gets_another_enter_never_another_copy() -> None:
    stand = Stand()
    prompter = Prompter(stand, lambda: 7)
    stand.rows = ["> Fix the failing test", "  then run it again"]

    def agent(data: bytes) -> None:
        if data == b"\r":  # the second Enter submits it
            prompter.taken(prompt_digest(TEXT))

    stand.on_write = agent
    assert await prompter.deliver(TEXT, ready_wait=1, confirm_wait=0.6) == 7
    assert len(stand.written) == 2 and stand.written[1] == b"\r"


async def test_text_lost_before_it_was_drawn_is_typed_once_more_and_only_once() -> None:
    stand = Stand()  # nothing ever shows, nothing is ever taken
    with pytest.raises(PromptNotTaken):
        await Prompter(stand, lambda: 1).deliver(TEXT, ready_wait=1, confirm_wait=0.6)
    assert len(stand.written) == 2 and stand.written[0] == stand.written[1]


async def test_a_program_that_ends_is_said() -> None:
    stand = Stand()
    stand.on_write = lambda data: setattr(stand, "gone", True)
    with pytest.raises(PromptNotTaken) as ended:
        await Prompter(stand, lambda: 1).deliver(TEXT, ready_wait=1, confirm_wait=0.6)
    assert ended.value.exited
    gone = Stand()
    gone.gone = True
    with pytest.raises(PromptNotTaken) as never:
        await Prompter(gone, lambda: 1).deliver(TEXT, ready_wait=1, confirm_wait=1)
    assert never.value.exited and gone.written == []


def test_shows_finds_the_start_of_the_text_however_it_wrapped() -> None:
    assert shows("Fix  the failing test", ["│ > Fix the failing test   │"])
    assert not shows("Fix the failing test", ["> Fix the"])
    assert not shows("   ", ["anything"])


LONG = "Refactor the parser module\n  1. split it\n  2. test it\n  3. time it\n  4. ship it\n"


async def test_a_long_paste_an_agent_folds_is_confirmed_by_its_marker() -> None:
    """Cline reports a paste of 5 lines or more by the marker it folds it into
    (launch.pasted_as); that marker's digest confirms it, as the text's would."""
    for agent, confirmed in (("cline", True), ("claude-code", False)):
        stand = Stand()
        prompter = Prompter(stand, lambda: 9, agent=agent)
        marker = "[Refactor the parser module 1. split it 2. test i... Pasted +5 lines]"

        def folded(data: bytes, prompter: Prompter = prompter, marker: str = marker) -> None:
            prompter.taken(prompt_digest(marker))

        stand.on_write = folded
        if confirmed:
            assert await prompter.deliver(LONG, ready_wait=1, confirm_wait=1) == 9
        else:
            with pytest.raises(PromptNotTaken):
                await prompter.deliver(LONG, ready_wait=1, confirm_wait=0.3)
        assert (
            stand.written[0] == PASTE_START + LONG.replace("\n", "\r").encode() + PASTE_END + b"\r"
        )
