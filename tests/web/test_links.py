"""Links in the terminal: OSC 8 hyperlinks and plain URLs open in a new tab with
no way back to the page (noopener), and a cold attach keeps OSC 8 links."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import BrowserContext, Page

from .conftest import Server, login, open_tab, session_entry, spawn_from_form, wait_for_terminal


def _click_text(tab: Page, needle: str, text: str) -> None:
    """Hover, then click, the middle of ``text`` on the terminal row showing ``needle``."""
    row = tab.locator(".xterm-rows > div", has_text=needle).first
    box = row.bounding_box()
    screen = tab.locator(".xterm-screen").bounding_box()
    assert box is not None and screen is not None
    cols = tab.evaluate("window.ptyvisorDebug.terminalSize()")["cols"]
    cell = screen["width"] / cols
    line = next(
        line for line in tab.evaluate("window.ptyvisorDebug.terminalLines()") if needle in line
    )
    assert text in line, line
    column = line.index(text) + len(text) / 2
    x, y = screen["x"] + column * cell, box["y"] + box["height"] / 2
    tab.mouse.move(x - cell, y)
    tab.mouse.move(x, y)
    tab.mouse.click(x, y)


def _opened_by_click(browser: BrowserContext, tab: Page, needle: str, text: str) -> Page:
    with browser.expect_page() as opened:
        _click_text(tab, needle, text)
    new_tab = opened.value
    new_tab.wait_for_load_state()
    return new_tab


def test_hyperlinks_and_urls_open_in_a_new_tab_also_after_a_cold_attach(
    server: Server, page: Page, browser: BrowserContext, tmp_path: Path
) -> None:
    osc8 = f"{server.base}/static/app.css?from=osc8"
    plain = f"{server.base}/static/app.css?from=plain"
    output = tmp_path / "links.txt"
    output.write_text(f"\x1b]8;;{osc8}\x1b\\the docs\x1b]8;;\x1b\\ (osc8)\nsee {plain} (plain)\n")
    login(page, server)
    spawn_from_form(page, f"sh -c 'cat {output}; exec sleep 600'", name="links")
    wait_for_terminal(page, r"\(plain\)$")

    opened = _opened_by_click(browser, page, "(plain)", plain)
    assert opened.url == plain
    assert opened.evaluate("window.opener") is None
    opened.close()

    opened = _opened_by_click(browser, page, "(osc8)", "the docs")
    assert opened.url == osc8
    assert opened.evaluate("window.opener") is None
    opened.close()

    # A tab that attaches now draws the server's snapshot: the link is still there.
    cold = open_tab(browser)
    login(cold, server)
    session_entry(cold, "links").click()
    wait_for_terminal(cold, r"\(plain\)$")
    assert cold.evaluate("window.ptyvisorDebug.lastReplay()") == "snapshot"
    opened = _opened_by_click(browser, cold, "(osc8)", "the docs")
    assert opened.url == osc8
    assert opened.evaluate("window.opener") is None
