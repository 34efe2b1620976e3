"""The page drives a real agent: Claude Code 2.1.332 started from the New session
form of a real ``ptyvisor serve``, fully offline against the fake model server.

The prompt is typed into the page's terminal; the model's Bash call is approved with
the card's Allow (the command runs, its output reaches the model); a second prompt
gets an AskUserQuestion, answered with the card's options (the model gets the chosen
one). The header badge's every text is recorded in the page by a MutationObserver,
and must be exactly the turn's phases. Claude's quirks: see
``tests/agents/clis/test_claude_code_e2e.py``.
"""

# ruff: noqa: RUF001  (the TUI draws its prompt mark with a non-ASCII arrow)
from __future__ import annotations

import functools
import os
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio.from_thread
import pytest
from anyio.from_thread import BlockingPortal
from playwright.sync_api import Page, expect

from tests.timeouts import scaled

from ..agents.clis.fake_model import FakeModelServer, Reply, Request, ToolResult
from ..agents.clis.installed import agent_bin_dir
from ..agents.clis.offline import offline_env
from .conftest import PTYVISOR, Server, login, screenshot, session_entry, start_server
from .conftest import wait_for_terminal as terminal_shows

AGENT = "claude-code"
NAME = "claude"
COMMAND = "echo approved-ran > approved.txt && cat approved.txt"
QUESTION = "Which colour?"
OPTIONS = ["Red", "Blue", "Green"]
FIRST_PROMPT = "Write the approved file"
SECOND_PROMPT = "Ask me for a colour"
AGENT_WAIT = scaled(60)
"""Seconds for anything the agent does: generous, for a busy two-core machine."""
BADGES = [
    "Starting",
    "Ready",
    "Working",  # the first prompt
    "Needs input",  # the Bash approval
    "Working",  # allowed from the page
    "Ready",
    "Working",  # the second prompt
    "Needs input",  # the question
    "Working",  # answered from the page
    "Ready",
]

RECORD_BADGES = """() => {
    const badge = document.getElementById("session-badge");
    const seen = [];
    const note = (text) => {
        if (text && seen[seen.length - 1] !== text) seen.push(text);
    };
    note(badge.textContent);
    // Every text the badge is given, even two within one task.
    new MutationObserver((records) => {
        for (const record of records) {
            if (record.type === "characterData") note(record.target.data);
            else for (const node of record.addedNodes) note(node.textContent);
        }
    }).observe(badge, { childList: true, characterData: true, subtree: true });
    Object.defineProperty(window, "badgeHistory", { value: () => [...seen] });
}"""


@dataclass
class Model:
    """The fake model server, in its own event-loop thread: the browser test is
    synchronous."""

    fake: FakeModelServer
    portal: BlockingPortal

    def script(self, *replies: Reply) -> None:
        self.portal.call(functools.partial(self.fake.script, *replies))

    def request(self, predicate: Callable[[Request], bool], what: str) -> Request:
        try:
            return self.portal.call(
                functools.partial(self.fake.wait_for_request, predicate, wait=AGENT_WAIT)
            )
        except AssertionError as error:
            raise AssertionError(f"{what}: {error}") from None

    def result_of(self, call: Request) -> ToolResult:
        """The tool result the model receives for ``call`` in a later request."""
        _, result = self.portal.call(functools.partial(self.fake.answer_to, call, wait=AGENT_WAIT))
        return result

    def assert_clean(self) -> None:
        """Nothing reached the model that the script did not account for, and every
        scripted turn was taken."""
        self.portal.call(self.fake.assert_no_unexpected)
        assert self.portal.call(lambda: self.fake.pending) == 0


@dataclass
class Setup:
    server: Server
    model: Model
    project: Path
    args: list[str]


@pytest.fixture
def claude_server(tmp_path: Path) -> Iterator[Setup]:
    """The fake model, and ``serve`` in Claude's offline environment with the pinned
    ``claude`` first on PATH: the sessions the page starts inherit both."""
    project = (tmp_path / "project").resolve()
    project.mkdir()
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(FakeModelServer()) as fake,
    ):
        env, args = offline_env(AGENT, tmp_path / "home", project, fake.base_url)
        path = [str(agent_bin_dir()), str(Path(PTYVISOR).parent), env["PATH"]]
        env["PATH"] = os.pathsep.join(path)
        server = start_server(tmp_path, env=env)
        try:
            yield Setup(server, Model(fake, portal), project, args)
        finally:
            try:  # end Claude while the model still answers, then the server
                for session in server.sessions():
                    server.request({"type": "close", "session": session["id"]})
            finally:
                server.stop()


def claude_ready(page: Page) -> None:
    """Claude's prompt is up, in default (asking) mode, and reported Ready."""
    expect(page.locator("#session-badge")).to_have_text("Ready", timeout=AGENT_WAIT * 1000)
    terminal_shows(page, "manual mode on", timeout=AGENT_WAIT)
    terminal_shows(page, "^\\s*❯", timeout=AGENT_WAIT)


def submit(page: Page, text: str) -> None:
    """Type ``text`` into the page's terminal, wait until Claude's prompt shows it, then
    Enter on its own (one write with both would look like a paste)."""
    page.locator(".xterm-helper-textarea").focus()
    page.keyboard.type(text)
    terminal_shows(page, re.escape(text).replace("\\ ", " "), timeout=AGENT_WAIT)
    page.keyboard.press("Enter")


@pytest.mark.timeout(180, func_only=True)
def test_page_drives_claude_code(claude_server: Setup, page: Page) -> None:
    server, model, project = claude_server.server, claude_server.model, claude_server.project
    login(page, server)
    page.evaluate(RECORD_BADGES)

    # Start Claude from the form, with the offline tests' own arguments.
    page.locator("#new-session-button").click()
    dialog = page.locator("#new-session-dialog")
    expect(dialog).to_be_visible()
    page.locator("#new-session-kind").select_option(AGENT)
    expect(page.locator("#new-session-command-label")).to_have_text(
        f"Arguments for {AGENT} (optional)"
    )
    page.locator("#new-session-command").fill(shlex.join(claude_server.args))
    page.locator("#new-session-cwd").fill(str(project))
    page.locator("#new-session-name").fill(NAME)
    page.locator("#new-session-submit").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#session-title")).to_have_text(NAME)
    entry = session_entry(page, NAME)
    expect(entry).to_have_attribute("aria-current", "true")
    session_id: str = page.evaluate("window.ptyvisorDebug.selected()")
    [summary] = server.sessions()
    assert (summary["id"], summary["agent"], summary["cwd"]) == (session_id, AGENT, str(project))
    assert summary["argv"][0] == "claude" and summary["argv"][-2:] == claude_server.args
    assert "--settings" in summary["argv"]  # our hooks, for this session only
    # Shown as the user asked for it, not as a page of ptyvisor's hook settings.
    assert summary["command"] == ["claude", *claude_server.args]
    shown = f"{AGENT} · claude {shlex.join(claude_server.args)}"
    expect(page.locator("#session-command")).to_have_text(shown)
    expect(entry.locator(".session-command")).to_have_text(shown)
    claude_ready(page)
    expect(entry.locator(".badge")).to_have_text("Ready")

    model.script(
        Reply.shell(AGENT, COMMAND, description="Write the approved file"),
        Reply.text("Wrote it DONE-1"),
        Reply.ask(AGENT, QUESTION, OPTIONS, header="Colour"),
        Reply.text("Blue it is DONE-2"),
    )

    # A prompt typed in the page's terminal; the model wants a command run.
    submit(page, FIRST_PROMPT)
    call = model.request(lambda r: r.outcome == "scripted", "the first prompt")
    assert any(FIRST_PROMPT in text for text in call.user_texts()), call.summary()
    card = page.locator(".card")
    expect(card).to_be_visible(timeout=AGENT_WAIT * 1000)
    expect(card.locator(".card-meta")).to_have_text("Approval · Bash · claude-code")
    expect(card.locator(".card-title")).to_have_text("Run a shell command")
    expect(card.locator("dd pre.mono")).to_have_text(COMMAND)
    allow = card.get_by_role("button", name="Allow", exact=True)
    expect(allow).to_be_enabled()  # the hook holds its request: answerable
    expect(page.locator("#session-badge")).to_have_text("Needs input")
    expect(entry.locator(".badge")).to_have_text("Needs input")
    expect(page).to_have_title(re.compile(r"^\(1\) ptyvisor"))
    assert not (project / "approved.txt").exists(), "ran before it was approved"
    screenshot(page, "agent-approval")

    allow.click()
    expect(card).to_have_count(0, timeout=AGENT_WAIT * 1000)
    output = model.result_of(call)
    assert "approved-ran" in output.output and not output.is_error, output
    assert (project / "approved.txt").read_text().strip() == "approved-ran"
    expect(page.locator("#session-badge")).to_have_text("Ready", timeout=AGENT_WAIT * 1000)
    terminal_shows(page, "DONE-1", timeout=AGENT_WAIT)
    expect(page).to_have_title("ptyvisor")

    # The next turn: the model asks a question, answered with the card's options.
    submit(page, SECOND_PROMPT)
    ask = model.request(
        lambda r: r.reply is not None and r.reply.tool_name == "AskUserQuestion",
        "the second prompt",
    )
    assert any(SECOND_PROMPT in text for text in ask.user_texts()), ask.summary()
    expect(card).to_be_visible(timeout=AGENT_WAIT * 1000)
    expect(card.locator(".card-meta")).to_have_text("Question · AskUserQuestion · claude-code")
    expect(card.locator(".question-header")).to_have_text("Colour")
    expect(card.locator(".question-text")).to_have_text(QUESTION)
    expect(card.locator("input[type=radio]")).to_have_count(len(OPTIONS))
    send = card.get_by_role("button", name="Send answer")
    expect(send).to_be_enabled()
    expect(page.locator("#session-badge")).to_have_text("Needs input")
    card.get_by_label("Blue").check()
    screenshot(page, "agent-question")
    send.click()
    expect(card).to_have_count(0, timeout=AGENT_WAIT * 1000)
    chosen = model.result_of(ask)
    assert f'"{QUESTION}"="Blue"' in chosen.output and not chosen.is_error, chosen
    expect(page.locator("#session-badge")).to_have_text("Ready", timeout=AGENT_WAIT * 1000)
    terminal_shows(page, "DONE-2", timeout=AGENT_WAIT)

    # What the page showed, what the model saw, and what the server accepted.
    assert page.evaluate("window.badgeHistory()") == BADGES
    model.assert_clean()
    stats = server.request({"type": "stats", "session": session_id})["stats"]
    assert stats["frames_rejected"] == {}, stats
    assert stats["frames_applied"] > 0, stats
