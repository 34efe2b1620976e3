"""Past sessions in the page: an exited session is started again from its header, and
sessions from before the server stopped are listed under "Past sessions" with a button
that starts them again (a plain command: "Run again"; an agent on its conversation:
"Resume", see tests/agents/clis/test_resume.py for the real agents)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import (
    login,
    screenshot,
    session_entry,
    spawn_from_form,
    start_server,
    wait_for_terminal,
)


def test_run_again_from_the_header_and_from_past_sessions(tmp_path: Path, page: Page) -> None:
    server = start_server(tmp_path, run="first")
    port = server.port
    try:
        login(page, server)
        spawn_from_form(page, "sh -c 'echo ran-once; exit 4'", name="once", cwd=tmp_path)
        wait_for_terminal(page, "^ran-once$")
        # Started at the size of the pane it opens in, not the 20x5 of a hidden one.
        assert server.sessions()[0]["size"]["cols"] > 60
        resume = page.locator("#resume-button")
        expect(resume).to_have_text("Run again")
        expect(resume).to_be_visible()
        resume.click()
        # A new session, same name and directory, linked to the first.
        expect(page.locator(".session-button")).to_have_count(2)
        wait_for_terminal(page, "^ran-once$")
        sessions = server.sessions()
        assert sorted(s["name"] for s in sessions) == ["once", "once"]
        assert {s["cwd"] for s in sessions} == {str(tmp_path)}
        linked = [s for s in sessions if s.get("resumed_from")]
        assert len(linked) == 1 and linked[0]["resumed_from"] in {s["id"] for s in sessions}
        spawn_from_form(page, "cat", name="still-running")
    finally:
        server.stop()
    # Stopped: its sessions are gone, and kept in the records.
    server = start_server(tmp_path, port=port, run="second")
    try:
        expect(page.locator("#banner")).to_be_hidden(timeout=20_000)
        expect(page.locator(".session-button")).to_have_count(0)
        page.locator("#past-sessions summary").click()
        entries = page.locator(".past-entry")
        expect(entries).to_have_count(3)
        expect(entries.filter(has_text="still-running")).to_contain_text("cat")
        # Listing the past ones does not put them among the live ones.
        expect(page.locator(".session-button")).to_have_count(0)
        screenshot(page, "past-sessions")
        entries.filter(has_text="still-running").get_by_role("button", name="Run again").click()
        expect(session_entry(page, "still-running")).to_be_visible()
        page.locator("#terminal-host").click()
        page.keyboard.type("echoed back")
        page.keyboard.press("Enter")
        wait_for_terminal(page, "^echoed back$")
        # The one started again is live, no longer past.
        expect(entries).to_have_count(3)  # two "once" and the old "still-running"
    finally:
        server.stop()
