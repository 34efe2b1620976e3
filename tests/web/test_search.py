"""Searching a terminal's scrollback from the page (Ctrl+Shift+F)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import SCREENSHOTS, Server, login, spawn_from_form, wait_for_terminal


def test_search_finds_matches_in_the_scrollback(server: Server, page: Page, tmp_path: Path) -> None:
    output = tmp_path / "log.txt"
    lines = [f"line {i}" for i in range(300)]
    lines[20] = "an old needle here"
    lines[250] = "a newer needle here"
    output.write_text("\n".join(lines) + "\nEND\n")
    login(page, server)
    spawn_from_form(page, f"sh -c 'cat {output}; exec sleep 600'", name="search")
    wait_for_terminal(page, "^END$")
    page.locator(".xterm-helper-textarea").focus()

    page.keyboard.press("Control+Shift+F")
    bar = page.locator("#search-bar")
    expect(bar).to_be_visible()
    expect(page.locator("#search-input")).to_be_focused()
    page.keyboard.type("needle")
    # The newest match first, then older ones on Enter.
    expect(page.locator("#search-count")).to_have_text("2 of 2")
    assert page.evaluate("window.ptyvisorDebug.selection()") == "needle"
    page.keyboard.press("Enter")
    expect(page.locator("#search-count")).to_have_text("1 of 2")
    # The old match is in the scrollback: the terminal scrolled up to show it.
    expect(page.locator(".xterm-rows")).to_contain_text("an old needle here")
    expect(page.locator(".xterm-rows")).not_to_contain_text("END")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "search.png"))
    page.keyboard.press("Shift+Enter")
    expect(page.locator("#search-count")).to_have_text("2 of 2")

    page.locator("#search-input").fill("no such text")
    expect(page.locator("#search-count")).to_have_text("No matches")

    page.keyboard.press("Escape")
    expect(bar).to_be_hidden()
    expect(page.locator(".xterm-helper-textarea")).to_be_focused()


def test_scrollbar_thumb_is_a_quiet_one(server: Server, page: Page) -> None:
    """The page's theme replaces xterm's heavy grey thumb with a faint one."""
    login(page, server)
    spawn_from_form(page, "sh -c 'seq 500; exec sleep 600'", name="scroll")
    wait_for_terminal(page, "^500$")
    slider = page.locator(".xterm-scrollable-element .slider").first
    expect(slider).to_have_css("background-color", "rgba(138, 150, 166, 0.22)")
