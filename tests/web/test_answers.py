"""Interaction cards: a real Claude Code PermissionRequest hook (``python -m
ptyvisor.agents.hooks claude-code``) holds on the control socket inside a session; the page
shows its card, and an answer given in the page is what the hook prints."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from ..conftest import wait_for
from ..server.test_control import ASK, BASH, CODEX_QUESTION, WRAPPER
from .conftest import (
    PYTHON,
    Server,
    login,
    open_tab,
    screenshot,
    session_entry,
    spawn_from_form,
)
from .proxy import TcpProxy


def start_hook_session(
    page: Page, directory: Path, payload: dict[str, Any], name: str, agent: str = "claude-code"
) -> None:
    """A session whose program starts the hook, then ends the turn on Enter (a
    ``waiting`` report, which clears whatever is pending)."""
    (directory / "payload.json").write_text(json.dumps(payload))
    (directory / "wrap.py").write_text(WRAPPER)
    script = (
        f"setsid {shlex.quote(PYTHON)} wrap.py {agent} & read x; "
        "ptyvisor emit activity waiting; echo turn-over; exec cat"
    )
    spawn_from_form(page, f"sh -c {shlex.quote(script)}", name=name, cwd=directory)


def hook_result(directory: Path) -> dict[str, Any]:
    path = directory / "result.json"
    wait_for(path.exists, "the hook to finish")
    result: dict[str, Any] = json.loads(path.read_text())
    assert result["rc"] == 0, result
    decision: dict[str, Any] = json.loads(result["stdout"])["hookSpecificOutput"]["decision"]
    return decision


def test_approval_answered_in_the_page_reaches_the_hook(
    server: Server, browser: BrowserContext, tmp_path: Path
) -> None:
    first, second = open_tab(browser), open_tab(browser)
    # The second tab talks to the server through a proxy that can hold back what
    # the server sends: it will not hear that the first tab answered in time.
    proxy = TcpProxy(server.port)
    try:
        login(first, server)
        login(second, server, base=proxy.base)
        start_hook_session(first, tmp_path, BASH, "deploy")
        card = first.locator(".card")
        expect(card).to_be_visible()
        expect(card.locator(".card-title")).to_have_text("Run a shell command")
        expect(card.locator(".card-meta")).to_have_text("Approval · Bash · claude-code")
        expect(card.locator("dd pre.mono")).to_have_text("make deploy")
        expect(card.locator("dd").nth(1)).to_have_text("Deploy")
        # The buttons show once the hook holds its request (answerable).
        expect(card.get_by_role("button", name="Allow", exact=True)).to_be_visible()
        expect(card.locator("button.suggestion")).to_have_count(1)
        expect(card.locator(".card-readonly")).to_be_hidden()
        expect(session_entry(first, "deploy").locator(".badge")).to_have_text("Needs input")
        expect(first).to_have_title(re.compile(r"^\(1\) ptyvisor"))
        # The card floats over the terminal: it takes no room from it.
        wrap, shown = first.locator(".terminal-wrap").bounding_box(), card.bounding_box()
        assert wrap is not None and shown is not None
        assert wrap["y"] <= shown["y"] < wrap["y"] + wrap["height"]
        size_with_card = first.evaluate("window.ptyvisorDebug.terminalSize()")
        # The other tab shows the same card for the same session.
        session_entry(second, "deploy").click()
        stale = second.locator(".card")
        expect(stale.get_by_role("button", name="Allow", exact=True)).to_be_visible()
        proxy.hold()
        first.locator(".deny-message").fill("not on a Friday")
        screenshot(first, "approval-card")
        card.locator(".deny").click()
        expect(card.locator(".card-outcome")).to_have_text(re.compile("^Denied."))
        assert hook_result(tmp_path) == {"behavior": "deny", "message": "not on a Friday"}
        expect(card.locator(".deny")).to_be_disabled()
        # The other tab still shows the card as answerable and answers too late.
        stale.get_by_role("button", name="Allow", exact=True).click()
        proxy.release()
        expect(stale.locator(".card-outcome")).to_have_text(re.compile("^Already answered"))
        expect(stale.get_by_role("button", name="Allow", exact=True)).to_be_disabled()
        screenshot(second, "approval-already-answered")
        # Whatever clears the interaction clears the card, in every tab.
        first.locator("#terminal-host").click()
        first.keyboard.press("Enter")
        expect(card).to_have_count(0)
        expect(stale).to_have_count(0)
        # Showing and clearing the card never resized the program.
        assert first.evaluate("window.ptyvisorDebug.terminalSize()") == size_with_card
        size = server.sessions()[0]["size"]
        assert (size["cols"], size["rows"]) == (size_with_card["cols"], size_with_card["rows"])
        expect(session_entry(second, "deploy").locator(".badge")).to_have_text("Ready")
        expect(first).to_have_title("ptyvisor")
    finally:
        proxy.close()


def test_question_answered_with_options_and_free_text(
    server: Server, page: Page, tmp_path: Path
) -> None:
    login(page, server)
    start_hook_session(page, tmp_path, ASK, "ask")
    card = page.locator(".card")
    expect(card).to_be_visible()
    colour = card.locator("fieldset.question").nth(0)
    letters = card.locator("fieldset.question").nth(1)
    expect(colour.locator(".question-header")).to_have_text("Colour")
    expect(colour.locator(".question-text")).to_have_text("Which colour?")
    expect(colour.locator("input[type=radio]")).to_have_count(2)
    expect(letters.locator("input[type=checkbox]")).to_have_count(3)
    expect(colour.get_by_text("warm")).to_be_visible()
    expect(card.get_by_role("button", name="Send answer")).to_be_visible()
    # Not every question answered: the page says so and sends nothing.
    colour.get_by_label("Blue").check()
    card.get_by_role("button", name="Send answer").click()
    expect(card.locator(".card-outcome")).to_have_text("Answer “Which letters?” first.")
    expect(letters.locator("input").first).to_be_focused()
    letters.get_by_label("A", exact=True).check()
    expect(card.locator(".card-outcome")).to_be_hidden()
    letters.get_by_label("C", exact=True).check()
    # Free text replaces the chosen option of its question.
    colour.get_by_label("Other answer:").fill("Teal")
    expect(colour.get_by_label("Blue")).not_to_be_checked()
    screenshot(page, "question-card")
    card.get_by_role("button", name="Send answer").click()
    expect(card.locator(".card-outcome")).to_have_text(re.compile("^Answer sent."))
    decision = hook_result(tmp_path)
    assert decision["behavior"] == "allow"
    assert decision["updatedInput"]["answers"] == {
        "Which colour?": "Teal",
        "Which letters?": "A, C",
    }


def test_question_only_the_terminal_can_answer_is_read_only(
    server: Server, page: Page, tmp_path: Path
) -> None:
    # Codex asks its questions in the terminal; no hook waits for an answer.
    login(page, server)
    start_hook_session(page, tmp_path, CODEX_QUESTION, "codex-ask", agent="codex")
    card = page.locator(".card")
    expect(card.locator(".card-title")).to_have_text("Codex has a question")
    expect(card.locator(".question-text")).to_have_text("Which colour?")
    note = card.locator(".card-readonly")
    expect(note).to_be_visible()
    expect(note).to_have_text(re.compile("^Answer this in the terminal"))
    # What is asked stays readable; nothing offers to answer it.
    expect(card.locator(".question-text")).to_be_visible()
    expect(card.get_by_label("Red")).to_be_disabled()
    expect(card.get_by_role("button")).to_have_count(0)
    expect(card.locator(".free-text")).to_be_hidden()
    screenshot(page, "question-read-only")
