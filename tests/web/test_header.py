"""The session header and list at a glance: the activity's reason, a kill that is
not a failure, the server's activity timeline, the session id to copy, and the
whole command."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from .conftest import (
    PTYVISOR,
    SCREENSHOTS,
    Server,
    login,
    session_entry,
    spawn_from_form,
    wait_for_terminal,
)


def test_reason_kill_timeline_id_and_command(
    server: Server, page: Page, browser: BrowserContext, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    script = (
        f"{PTYVISOR} emit activity working --agent tester --reason 'editing auth.py'; "
        f"echo started; while [ ! -e {go} ]; do sleep 0.05; done; "
        f"{PTYVISOR} emit activity waiting --agent tester; echo ready; exec sleep 600"
    )
    command = f'sh -c "{script}"'
    login(page, server)
    spawn_from_form(page, command, name="glance")
    wait_for_terminal(page, "^started$")

    # The reason, in the header and in the list.
    expect(page.locator("#session-badge")).to_have_text("Working")
    expect(page.locator("#session-reason")).to_have_text("· editing auth.py")
    expect(session_entry(page, "glance").locator(".session-detail")).to_contain_text(
        "editing auth.py"
    )

    # The whole command, not cut short; and the id, copied with one click.
    shown = page.locator("#session-command")
    expect(shown).to_have_attribute("title", re.compile(re.escape(str(go))))
    assert str(go) in shown.inner_text()
    session_id = server.sessions()[0]["id"]
    expect(page.locator("#session-id-text")).to_have_text(session_id)
    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.base)
    page.locator("#session-id").click()
    expect(page.locator("#session-id")).to_have_attribute("data-copied", "")
    assert page.evaluate("navigator.clipboard.readText()") == session_id

    # The timeline comes from the server: Working, then Ready once it reports.
    go.touch()
    wait_for_terminal(page, "^ready$")
    strip = page.locator("#timeline-strip")
    expect(strip).to_contain_text(re.compile(r"Working \d+s\s*→\s*Ready \d+s"))
    page.locator("#timeline > summary").click()
    items = page.locator("#timeline-list .timeline-item")
    expect(items.filter(has_text="editing auth.py")).to_have_count(1)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "header-timeline.png"))

    # Kill: stopped by the user, not Failed; the signal stays visible.
    page.locator("#kill-button").click()
    page.locator("#confirm-ok").click()
    expect(page.locator("#session-badge")).to_have_text("Stopped")
    expect(page.locator("#session-reason")).to_have_text("· killed")
    expect(page.locator("#session-extra")).to_contain_text("killed by SIGHUP")
    entry = session_entry(page, "glance")
    expect(entry.locator(".badge")).to_have_text("Stopped")
    expect(entry.locator(".session-detail")).to_contain_text("killed by SIGHUP")
    expect(strip).to_contain_text(re.compile(r"Ready \d+s\s*→\s*Stopped"))
