"""Browser notifications: asked for once from the sidebar's button, raised when a
session starts needing input while the page is in the background — and only then.

Headless Chromium has no background tabs and shows no notifications, so the page
runs with two stand-ins installed before its own code: ``document.hidden`` answers
what the test says, and ``Notification`` records what the page creates."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from .conftest import Server, login, open_tab, session_entry

STAND_INS = """
Object.defineProperty(Document.prototype, "hidden", {
  configurable: true,
  get() { return window.__pretendHidden === true; },
});
window.__notifications = [];
const RealNotification = window.Notification;
window.Notification = class extends RealNotification {
  constructor(title, options) {
    window.__notifications.push({ title, body: (options && options.body) || "" });
    super(title, options);
  }
};
"""


def waiting_session(server: Server, name: str) -> str:
    """A session that reports needs_input once it reads a line."""
    script = "read x; ptyvisor emit activity needs_input; exec cat"
    reply = server.request({"type": "spawn", "argv": ["sh", "-c", script], "name": name})
    identifier: str = reply["session"]["id"]
    return identifier


def press_enter_in(server: Server, session: str) -> None:
    assert server.request({"type": "input", "session": session, "data": "\n"})["type"] == "ok"


def test_notification_only_in_the_background(server: Server, browser: BrowserContext) -> None:
    browser.add_init_script(STAND_INS)
    page: Page = open_tab(browser)
    seen = waiting_session(server, "seen")
    unseen = waiting_session(server, "unseen")
    login(page, server)
    # Permission is asked from a click, once; after that the button goes.
    button = page.locator("#notify-button")
    expect(button).to_be_visible()
    button.click()
    expect(button).to_be_hidden()
    page.reload()
    expect(page.locator("#app")).to_be_visible()
    expect(button).to_be_hidden()
    browser.grant_permissions(["notifications"], origin=server.base)
    assert page.evaluate("Notification.permission") == "granted"
    # In front: the badge and the title say it, no notification.
    press_enter_in(server, seen)
    expect(session_entry(page, "seen").locator(".badge")).to_have_text("Needs input")
    # In the background: a notification names the session.
    page.evaluate("window.__pretendHidden = true")
    press_enter_in(server, unseen)
    expect(session_entry(page, "unseen").locator(".badge")).to_have_text("Needs input")
    page.wait_for_function("() => window.__notifications.length > 0")
    notes: list[dict[str, Any]] = page.evaluate("window.__notifications")
    assert notes == [{"title": "unseen needs input", "body": ""}]
    # The first list a page gets is not news, even in the background.
    second = open_tab(browser)
    second.add_init_script("window.__pretendHidden = true")
    login(second, server)
    expect(session_entry(second, "unseen").locator(".badge")).to_have_text("Needs input")
    assert second.evaluate("document.hidden") is True
    assert second.evaluate("window.__notifications") == []
