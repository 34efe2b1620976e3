"""Logging in: the printed URL's token is taken, kept for the tab and removed from
the address bar; no token or a wrong one gets a clear "Not authorised" view."""

from __future__ import annotations

import re

from playwright.sync_api import BrowserContext, Page, expect

from .conftest import Server, login, open_tab, screenshot


def test_printed_url_logs_in_and_drops_the_token_from_the_address(
    server: Server, page: Page, browser: BrowserContext
) -> None:
    login(page, server)
    assert page.url == f"{server.base}/"
    stored = page.evaluate("sessionStorage.getItem('ptyvisor.token')")
    assert stored == server.token
    expect(page.locator("#session-empty")).to_be_visible()
    expect(page.locator("#banner")).to_be_hidden()
    expect(page).to_have_title("ptyvisor")
    # A reload keeps the tab logged in (the token is in this tab's storage) …
    page.reload()
    expect(page.locator("#app")).to_be_visible()
    # … but another tab opened without the URL's token is not.
    other = open_tab(browser)
    other.goto(f"{server.base}/")
    expect(other.get_by_role("heading", name="Not authorised")).to_be_visible()
    expect(other.locator("#app")).to_be_hidden()


def test_no_token_shows_not_authorised(server: Server, page: Page) -> None:
    page.goto(f"{server.base}/")
    heading = page.get_by_role("heading", name="Not authorised")
    expect(heading).to_be_visible()
    expect(page.locator("#unauthorised-reason")).to_have_text(re.compile("no access token"))
    expect(page.locator("#unauthorised-view")).to_contain_text("ptyvisor serve")
    expect(page.locator("#app")).to_be_hidden()
    expect(page).to_have_title(re.compile("Not authorised"))
    screenshot(page, "not-authorised")


def test_wrong_token_is_refused(server: Server, page: Page) -> None:
    # A wrong token in the URL: the server refuses the page itself.
    response = page.goto(f"{server.base}/?token=not-the-token")
    assert response is not None and response.status == 401
    expect(page.get_by_role("heading", name="Not authorised")).to_be_visible()
    # A wrong token kept by the tab (a server restarted with a new token): the
    # page checks it before doing anything and says so.
    page.goto(f"{server.base}/")
    page.evaluate("sessionStorage.setItem('ptyvisor.token', 'not-the-token')")
    page.reload()
    expect(page.get_by_role("heading", name="Not authorised")).to_be_visible()
    expect(page.locator("#unauthorised-reason")).to_have_text(re.compile("did not accept"))
    expect(page.locator("#app")).to_be_hidden()
