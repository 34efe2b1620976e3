"""Sessions in the page: start one from the form and use its terminal, watch badges
follow the activity a program reports, see other tabs' changes live, queue a
message, kill and close with confirmation."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from .conftest import (
    Server,
    login,
    open_tab,
    screenshot,
    session_entry,
    spawn_from_form,
    terminal_lines,
    wait_for_terminal,
)


def test_shell_from_the_form_runs_what_is_typed(server: Server, page: Page) -> None:
    login(page, server)
    spawn_from_form(page, "bash --norc --noprofile", name="shell")
    entry = session_entry(page, "shell")
    expect(entry.locator(".badge")).to_have_text("Live")
    expect(page.locator("#session-command")).to_have_text("bash --norc --noprofile")
    # The terminal has the focus: typing goes to the program.
    page.keyboard.type("echo web-$((6 * 7))")
    page.keyboard.press("Enter")
    lines = wait_for_terminal(page, "^web-42$")
    assert "echo web-$((6 * 7))" in "\n".join(lines)
    # The program runs at the pane's size, and the server knows it.
    listed = {s["name"]: s for s in server.sessions()}
    size = listed["shell"]["size"]
    cols_rows = f"{size['cols']}\N{MULTIPLICATION SIGN}{size['rows']}"
    expect(page.locator("#session-extra")).to_contain_text(cols_rows)
    assert listed["shell"]["size"]["cols"] > 80, "a 1280 px pane is wider than 80 columns"
    page.keyboard.type("stty size")
    page.keyboard.press("Enter")
    rows, cols = listed["shell"]["size"]["rows"], listed["shell"]["size"]["cols"]
    wait_for_terminal(page, f"^{rows} {cols}$")
    screenshot(page, "terminal")
    # Progress the program reports in its output (OSC 9;4): inferred, so marked.
    page.keyboard.type("printf '\\033]9;4;1;50\\007'")
    page.keyboard.press("Enter")
    for badge in (entry.locator(".badge"), page.locator("#session-badge")):
        expect(badge).to_have_text("Working?")
        expect(badge).to_have_attribute("title", re.compile("^Inferred from the terminal"))


def test_badge_follows_reported_activity(server: Server, page: Page, tmp_path: Path) -> None:
    script = tmp_path / "phases.sh"
    script.write_text(
        "ptyvisor emit activity working --agent script --reason compiling\n"
        "echo phase-working; read a\n"
        "ptyvisor emit activity needs_input\n"
        "echo phase-needs-input; read b\n"
        "ptyvisor emit activity waiting\n"
        "echo phase-ready; read c\n"
        "exit 3\n"
    )
    login(page, server)
    spawn_from_form(page, "sh phases.sh", name="phases", cwd=tmp_path)
    entry = session_entry(page, "phases")
    badge = entry.locator(".badge")
    header_badge = page.locator("#session-badge")
    boxes = []

    def step(label: str) -> None:
        expect(badge).to_have_text(label)
        expect(header_badge).to_have_text(label)
        box = badge.bounding_box()
        entry_box = entry.bounding_box()
        assert box is not None and entry_box is not None
        boxes.append((box["width"], box["height"], entry_box["height"]))

    step("Working")
    expect(page).to_have_title("ptyvisor")
    wait_for_terminal(page, "^phase-working$")
    page.keyboard.press("Enter")
    step("Needs input")
    expect(page).to_have_title(re.compile(r"^\(1\) ptyvisor"))
    expect(page.locator("#sidebar-count")).to_contain_text("1 need input")
    page.keyboard.press("Enter")
    step("Ready")
    expect(page).to_have_title("ptyvisor")
    # Time in state ticks by itself.
    expect(entry.locator(".session-time")).to_have_text(re.compile(r"^[1-9]\d*s$"), timeout=5000)
    page.keyboard.press("Enter")
    step("Failed")
    expect(entry.locator(".session-detail")).to_contain_text("exit 3")
    expect(page.locator("#session-extra")).to_contain_text("exit 3")
    assert len(set(boxes)) == 1, f"badges or entries changed size: {boxes}"
    # Frames never reach the terminal.
    assert not any("7733" in line for line in terminal_lines(page))


def test_every_badge_has_its_own_colour_and_one_width(server: Server, page: Page) -> None:
    phases = {
        "live": "cat",
        "starting": "ptyvisor emit activity starting; cat",
        "working": "ptyvisor emit activity working --agent demo; cat",
        "needs-input": "ptyvisor emit activity needs_input; cat",
        "ready": "ptyvisor emit activity waiting; cat",
        "failed": "exit 3",
        "stopped": "exit 0",
    }
    for name, script in phases.items():
        reply = server.request({"type": "spawn", "argv": ["sh", "-c", script], "name": name})
        assert reply["type"] == "spawned", reply
    login(page, server)
    expected = {
        "live": "Live",
        "starting": "Starting",
        "working": "Working",
        "needs-input": "Needs input",
        "ready": "Ready",
        "failed": "Failed",
        "stopped": "Stopped",
    }
    for name, label in expected.items():
        expect(session_entry(page, name).locator(".badge")).to_have_text(label)
    expect(session_entry(page, "failed").locator(".session-detail")).to_contain_text("exit 3")
    expect(session_entry(page, "stopped").locator(".session-detail")).to_contain_text("exit 0")
    colours = page.eval_on_selector_all(
        ".session-button .badge", "els => els.map(e => getComputedStyle(e).backgroundColor)"
    )
    widths = page.eval_on_selector_all(
        ".session-button .badge", "els => els.map(e => e.getBoundingClientRect().width)"
    )
    assert len(set(colours)) == len(expected), colours
    assert len(set(widths)) == 1, widths
    expect(page).to_have_title(re.compile(r"^\(1\) ptyvisor"))
    session_entry(page, "working").click()
    expect(page.locator("#session-title")).to_have_text("working")
    screenshot(page, "sessions")


def test_second_tab_sees_changes_live(server: Server, browser: BrowserContext) -> None:
    first, second = open_tab(browser), open_tab(browser)
    login(first, server)
    login(second, server)
    spawn_from_form(first, "sh -c 'echo from-first; exec cat'", name="shared")
    # The other tab lists it without reloading, and can open it.
    entry = session_entry(second, "shared")
    expect(entry.locator(".badge")).to_have_text("Live")
    entry.click()
    wait_for_terminal(second, "^from-first$")
    expect(session_entry(first, "shared").locator(".session-detail")).to_contain_text("2 viewers")
    # What one tab types, both see.
    first.keyboard.type("typed-in-first")
    first.keyboard.press("Enter")
    wait_for_terminal(second, "^typed-in-first$")
    # Kill asks first; Cancel changes nothing.
    first.locator("#kill-button").click()
    dialog = first.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Kill “shared”?")
    expect(first.locator("#confirm-cancel")).to_be_focused()
    first.locator("#confirm-cancel").click()
    expect(dialog).to_be_hidden()
    expect(session_entry(second, "shared").locator(".badge")).to_have_text("Live")
    first.locator("#kill-button").click()
    first.locator("#confirm-ok").click()
    expect(session_entry(second, "shared").locator(".badge")).to_have_text(
        "Stopped"
    )  # a kill asked for is no failure
    expect(session_entry(second, "shared").locator(".session-detail")).to_contain_text(
        "killed by SIGHUP"
    )
    expect(first.locator("#kill-button")).to_be_disabled()
    # Close removes it everywhere; the other tab says what happened to its pane.
    first.locator("#close-button").click()
    expect(dialog).to_contain_text("Close “shared”?")
    first.locator("#confirm-ok").click()
    expect(session_entry(first, "shared")).to_have_count(0)
    expect(session_entry(second, "shared")).to_have_count(0)
    expect(second.locator("#empty-title")).to_have_text("Session closed")
    expect(second.locator("#session-view")).to_be_hidden()
    assert server.sessions() == []


def test_queued_message_for_a_working_agent(server: Server, page: Page, tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text(
        "ptyvisor emit activity working --agent script\necho working; read a\n"
        "ptyvisor emit activity waiting\necho done; read b\n"
    )
    login(page, server)
    spawn_from_form(page, "sh agent.sh", name="agent", cwd=tmp_path)
    box = page.locator("#queue-box")
    expect(box).to_be_visible()
    page.locator("#queue-input").fill("Also run the linter.")
    page.locator("#queue-input").press("Enter")
    expect(page.locator("#queue-current-text")).to_have_text("Also run the linter.")
    expect(session_entry(page, "agent").locator(".session-detail")).to_contain_text(
        "message queued"
    )
    assert [s["queued_message"] for s in server.sessions()] == ["Also run the linter."]
    page.locator("#queue-remove").click()
    expect(page.locator("#queue-current")).to_be_hidden()
    assert [s["queued_message"] for s in server.sessions()] == [None]
    # Not working any more: the box goes.
    page.locator("#terminal-host").click()
    page.keyboard.press("Enter")
    expect(session_entry(page, "agent").locator(".badge")).to_have_text("Ready")
    expect(box).to_be_hidden()


def type_line(tab: Page, text: str) -> None:
    """Click into the tab's terminal and type ``text`` and Enter."""
    tab.locator("#terminal-host").click()
    tab.keyboard.type(text)
    tab.keyboard.press("Enter")


def test_tabs_of_different_sizes_share_a_session(server: Server, browser: BrowserContext) -> None:
    """The program's size follows the tab that last typed (tmux's latest): opening
    a session in a small tab takes nothing, typing there does, typing in the wide
    tab takes it back, and closing the small tab leaves the wide tab's size."""
    wide, narrow = open_tab(browser), open_tab(browser)
    narrow.set_viewport_size({"width": 700, "height": 600})
    login(wide, server)
    login(narrow, server)
    spawn_from_form(wide, "bash --norc --noprofile", name="sized")
    type_line(wide, "echo first $(stty size)")
    wait_for_terminal(wide, r"^first \d+ \d+$")
    wide_size = server.sessions()[0]["size"]
    wide_text = f"{wide_size['cols']}\N{MULTIPLICATION SIGN}{wide_size['rows']}"
    # Only opening it in the smaller tab leaves the program at the wide tab's size;
    # the small tab draws at that size, scrolling sideways in its pane.
    session_entry(narrow, "sized").click()
    wait_for_terminal(narrow, r"^first \d+ \d+$")
    expect(narrow.locator("#session-extra")).to_contain_text(wide_text)
    assert narrow.evaluate("window.ptyvisorDebug.terminalSize().cols") == wide_size["cols"]
    host = narrow.locator("#terminal-host")
    assert host.evaluate("el => el.scrollWidth > el.clientWidth")
    # Typing in the small tab gives the program its size, for everyone …
    type_line(narrow, "echo small $(stty size)")
    wait_for_terminal(narrow, r"^small \d+ \d+$")
    narrow_size = server.sessions()[0]["size"]
    assert narrow_size["cols"] < wide_size["cols"]
    expect(wide.locator("#session-extra")).to_contain_text(
        f"{narrow_size['cols']}\N{MULTIPLICATION SIGN}{narrow_size['rows']}"
    )
    # … and typing in the wide tab takes its own back.
    type_line(wide, "echo again $(stty size)")
    wait_for_terminal(wide, f"^again {wide_size['rows']} {wide_size['cols']}$")
    expect(narrow.locator("#session-extra")).to_contain_text(wide_text)
    # The small tab takes it once more, then closes: the size goes back to the wide tab.
    narrow.locator("#terminal-host").click()
    narrow.keyboard.press("Enter")
    expect(wide.locator("#session-extra")).not_to_contain_text(wide_text)
    narrow.close()
    expect(wide.locator("#session-extra")).to_contain_text(wide_text)


def test_watch_only_never_types_or_resizes(server: Server, browser: BrowserContext) -> None:
    owner, watcher = open_tab(browser), open_tab(browser)
    watcher.set_viewport_size({"width": 700, "height": 600})
    login(owner, server)
    login(watcher, server)
    spawn_from_form(owner, "bash --norc --noprofile", name="watched")
    type_line(owner, "echo hello")
    wait_for_terminal(owner, "^hello$")
    size = server.sessions()[0]["size"]
    session_entry(watcher, "watched").click()
    wait_for_terminal(watcher, "^hello$")
    toggle = watcher.locator("#view-only-button")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    expect(toggle).to_have_text("Watching only")
    type_line(watcher, "echo from-watcher")
    # Resizing a watching tab's window does not resize the program either.
    watcher.set_viewport_size({"width": 600, "height": 500})
    owner.keyboard.type("echo from-owner")
    owner.keyboard.press("Enter")
    wait_for_terminal(watcher, "^from-owner$")
    assert not any("from-watcher" in line for line in terminal_lines(watcher))
    assert server.sessions()[0]["size"] == size
    # Back to taking part: typing works (and takes the size).
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "false")
    watcher.keyboard.type("echo joined")
    watcher.keyboard.press("Enter")
    wait_for_terminal(owner, "^joined$")


def test_program_title_shows_and_survives_reopening(server: Server, page: Page) -> None:
    login(page, server)
    spawn_from_form(page, r"""sh -c 'printf "\033]0;build: step 2\007"; exec cat'""", name="titled")
    shown = page.locator("#session-term-title")
    expect(shown).to_have_text("build: step 2")
    spawn_from_form(page, "cat", name="untitled")
    expect(shown).to_be_hidden()
    # Reopened from a snapshot: the server's headless terminal kept the title.
    session_entry(page, "titled").click()
    expect(shown).to_have_text("build: step 2")


def test_a_session_in_a_worktree_from_the_form(server: Server, page: Page, tmp_path: Path) -> None:
    """The form's worktree box: the program runs in a new worktree on its own branch."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    for argv in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(["git", "-C", str(repo), *argv], env=env, check=True)
    login(page, server)
    page.locator("#new-session-button").click()
    page.locator("#new-session-kind").select_option("")
    page.locator("#new-session-command").fill("sh -c 'git branch --show-current; pwd; exec cat'")
    page.locator("#new-session-cwd").fill(str(repo))
    page.locator("#new-session-name").fill("tree")
    page.locator("#new-session-worktree").check()
    page.locator("#new-session-worktree-name").fill("from-page")
    page.locator("#new-session-submit").click()
    expect(page.locator("#new-session-dialog")).to_be_hidden()
    wait_for_terminal(page, "^ptyvisor/from-page$")
    listed = {s["name"]: s for s in server.sessions()}
    worktree = listed["tree"]["worktree"]
    assert worktree and worktree.endswith("/from-page") and worktree != str(repo)
    wait_for_terminal(page, "^" + re.escape(worktree) + "$")


def test_no_message_box_for_an_agent_that_cannot_take_one(
    server: Server, page: Page, tmp_path: Path
) -> None:
    """Pi's extension (like OpenCode's, Kilo's and Cline's) hands no queued message
    over: while it works, the page offers no message box. Here ``pi`` is a stand-in
    that reports working the way the extension does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pi").write_text("#!/bin/sh\nptyvisor emit activity working --agent pi\nread a\n")
    (bin_dir / "pi").chmod(0o755)
    path = f"{bin_dir}:{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    spawn = {"type": "spawn", "argv": [], "agent": "pi", "name": "pi", "env": {"PATH": path}}
    assert server.request(spawn)["type"] == "spawned"
    login(page, server)
    session_entry(page, "pi").click()
    expect(session_entry(page, "pi").locator(".badge")).to_have_text("Working")
    expect(page.locator("#queue-box")).to_be_hidden()
    assert [s["takes_messages"] for s in server.sessions()] == [False]
