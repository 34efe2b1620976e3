"""The page on a phone: it fits from 360 px wide with no sideways scrolling, the
whole list shows, targets are touch-sized, desktop shortcut hints are hidden, and a
key bar gives what a phone keyboard lacks (Esc, Tab, Ctrl-C, Ctrl-D, arrows, Enter)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from ..conftest import ECHO_READS
from .conftest import (
    PYTHON,
    SCREENSHOTS,
    Server,
    login,
    session_entry,
    tab_in_context,
    wait_for_terminal,
)


def phone(chromium: Browser, width: int, scale: float = 3) -> Page:
    return tab_in_context(chromium, width=width, height=844, scale=scale, mobile=True)


def spawn(server: Server, name: str, argv: list[str] | None = None) -> None:
    argv = argv or ["sh", "-c", f"echo {name}; exec cat"]
    assert server.request({"type": "spawn", "argv": argv, "name": name})["type"] == "spawned"


def fits(tab: Page, width: int) -> None:
    """No sideways scrolling, and every visible button in the window and touch-sized."""
    assert tab.evaluate("document.documentElement.scrollWidth") <= width
    small = tab.evaluate(
        """() => [...document.querySelectorAll("button")].filter((b) => {
            const r = b.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) return false;  // not shown
            return r.height < 36 || r.width < 36 || r.left < 0 || r.right > innerWidth;
        }).map((b) => b.id || b.textContent.trim())"""
    )
    assert not small, f"buttons too small or cut off: {small}"


@pytest.mark.parametrize("width", [360, 390])
def test_phone_list_and_terminal_fit(server: Server, chromium: Browser, width: int) -> None:
    for i in range(8):
        spawn(server, f"session-{i}")
    tab = phone(chromium, width)
    login(tab, server)
    toggle = tab.locator("#sidebar-toggle")
    expect(toggle).to_be_in_viewport(ratio=1)
    for i in range(8):  # the whole list, not five of eight
        expect(session_entry(tab, f"session-{i}")).to_be_in_viewport(ratio=1)
    expect(tab.locator(".shortcuts")).to_be_hidden()
    fits(tab, width)
    tab.screenshot(path=str(SCREENSHOTS / f"phone-{width}-list.png"))

    session_entry(tab, "session-3").click()
    wait_for_terminal(tab, "^session-3$")
    expect(tab.locator("#key-bar")).to_be_visible()
    expect(tab.locator(".terminal-hint")).to_be_hidden()
    for control in ("#sidebar-toggle", "#kill-button", "#close-button", "#key-bar"):
        expect(tab.locator(control)).to_be_in_viewport(ratio=1)
    fits(tab, width)
    # The program got the pane's size (the list folded away before the attach).
    size = tab.evaluate("window.ptyvisorDebug.terminalSize()")
    session = next(s for s in server.sessions() if s["name"] == "session-3")
    assert (session["size"]["cols"], session["size"]["rows"]) == (size["cols"], size["rows"])
    assert size["rows"] > 15
    tab.screenshot(path=str(SCREENSHOTS / f"phone-{width}-terminal.png"))


@pytest.mark.parametrize("scale", [1, 2])
def test_key_bar_sends_what_a_phone_keyboard_lacks(
    server: Server, chromium: Browser, tmp_path: Path, scale: float
) -> None:
    script = tmp_path / "echo_keys.py"
    script.write_text(ECHO_READS)
    spawn(server, "keys", [PYTHON, str(script)])
    tab = phone(chromium, 390, scale)
    login(tab, server)
    session_entry(tab, "keys").click()
    wait_for_terminal(tab, "^READY$")
    keys = {
        "Esc": r"got b'\x1b'",
        "Tab": r"got b'\t'",
        "Control C": r"got b'\x03'",
        "Control D": r"got b'\x04'",
        "Left arrow": r"got b'\x1b[D'",
        "Up arrow": r"got b'\x1b[A'",
        "Enter": r"got b'\r'",
    }
    bar = tab.locator("#key-bar")
    for label, expected in keys.items():
        bar.get_by_role("button", name=label, exact=True).tap()
        wait_for_terminal(tab, "^" + re.escape(expected) + "$")
    # Once the program asks for application cursor keys, the arrows follow.
    tab.locator(".xterm-helper-textarea").focus()
    tab.keyboard.type("modes")
    wait_for_terminal(tab, "^modes-on$")
    bar.get_by_role("button", name="Down arrow").tap()
    wait_for_terminal(tab, "^" + re.escape(r"got b'\x1bOB'") + "$")
    tab.screenshot(path=str(SCREENSHOTS / f"phone-keys-{scale}x.png"))
