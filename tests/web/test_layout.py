"""Narrow windows and the keyboard: the page works at 420 px wide, and without a
mouse (visible focus, a way out of the terminal, dialogs that trap and return focus)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .conftest import Server, login, screenshot, session_entry, spawn_from_form, wait_for_terminal

FOCUS_RING = "el => getComputedStyle(el).outlineStyle === 'solid'"


def no_horizontal_scroll(page: Page) -> bool:
    root = "document.documentElement"
    return bool(page.evaluate(f"{root}.scrollWidth <= {root}.clientWidth"))


def spawn_echo(server: Server, name: str) -> None:
    """A session that prints its name, then waits."""
    argv = ["sh", "-c", f"echo {name}; exec cat"]
    assert server.request({"type": "spawn", "argv": argv, "name": name})["type"] == "spawned"


def test_narrow_window(server: Server, page: Page) -> None:
    for name in ("first", "second"):
        spawn_echo(server, name)
    page.set_viewport_size({"width": 420, "height": 800})
    login(page, server)
    toggle = page.locator("#sidebar-toggle")
    # Nothing open yet: the list shows, under a toggle that says how many there are.
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(toggle).to_contain_text("2")
    expect(session_entry(page, "second")).to_be_visible()
    assert no_horizontal_scroll(page)
    screenshot(page, "narrow-list")
    # Opening a session folds the list away and gives the terminal the room.
    session_entry(page, "second").click()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(session_entry(page, "second")).to_be_hidden()
    wait_for_terminal(page, "^second$")
    terminal = page.locator(".terminal-wrap").bounding_box()
    assert terminal is not None
    assert terminal["x"] >= 0 and terminal["x"] + terminal["width"] <= 420
    assert terminal["height"] > 400
    expect(page.locator("#kill-button")).to_be_in_viewport()
    expect(page.locator("#close-button")).to_be_in_viewport()
    assert no_horizontal_scroll(page)
    screenshot(page, "narrow-terminal")
    # The toggle brings the list back; the new-session dialog fits too.
    toggle.click()
    expect(session_entry(page, "first")).to_be_visible()
    page.locator("#new-session-button").click()
    dialog = page.locator("#new-session-dialog").bounding_box()
    assert dialog is not None and dialog["width"] <= 420
    assert no_horizontal_scroll(page)


def test_keyboard_alone(server: Server, page: Page) -> None:
    for name in ("alpha", "beta"):
        spawn_echo(server, name)
    login(page, server)
    expect(session_entry(page, "beta")).to_be_visible()
    terminal_input = page.locator(".xterm-helper-textarea")
    # The first Tab stops are the skip links, visible when focused.
    page.keyboard.press("Tab")
    expect(page.locator("#skip-terminal")).to_be_focused()
    expect(page.locator("#skip-terminal")).to_be_in_viewport()
    page.keyboard.press("Tab")
    expect(page.locator("#skip-sessions")).to_be_focused()
    page.keyboard.press("Enter")
    alpha, beta = session_entry(page, "alpha"), session_entry(page, "beta")
    expect(alpha).to_be_focused()
    assert alpha.evaluate(FOCUS_RING), "focus is visible"
    # Arrow keys move in the list; Enter opens a session and focuses its terminal.
    page.keyboard.press("ArrowDown")
    expect(beta).to_be_focused()
    page.keyboard.press("Enter")
    expect(terminal_input).to_be_focused()
    expect(page.locator("#session-title")).to_have_text("beta")
    page.keyboard.type("typed by keyboard")
    page.keyboard.press("Enter")
    wait_for_terminal(page, "^typed by keyboard$")
    # Tab belongs to the program in a terminal …
    page.keyboard.press("Tab")
    expect(terminal_input).to_be_focused()
    # … and Ctrl+Shift+S is the way out, to the open session's entry.
    page.keyboard.press("Control+Shift+S")
    expect(beta).to_be_focused()
    # Alt+1 opens the first session, straight into its terminal.
    page.keyboard.press("Alt+1")
    expect(page.locator("#session-title")).to_have_text("alpha")
    expect(alpha).to_have_attribute("aria-current", "true")
    expect(terminal_input).to_be_focused()
    # A new session, by keyboard: Shift+Tab from the list reaches "New session".
    page.keyboard.press("Control+Shift+S")
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#new-session-button")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#new-session-kind")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#new-session-command")).to_be_focused()
    page.keyboard.type("sh -c 'echo \"made by keyboard\"; exec cat'")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.locator("#new-session-name")).to_be_focused()
    page.keyboard.type("gamma")
    page.keyboard.press("Enter")
    expect(page.locator("#session-title")).to_have_text("gamma")
    expect(terminal_input).to_be_focused()
    wait_for_terminal(page, "^made by keyboard$")
    # The confirmation dialog starts on Cancel; Esc closes it and focus comes back.
    kill = page.locator("#kill-button")
    kill.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#confirm-dialog")).to_be_visible()
    expect(page.locator("#confirm-cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#confirm-dialog")).to_be_hidden()
    expect(kill).to_be_focused()
    expect(session_entry(page, "gamma").locator(".badge")).to_have_text("Live")


def test_new_session_form_explains_a_bad_command(server: Server, page: Page) -> None:
    login(page, server)
    page.locator("#new-session-button").click()
    page.locator("#new-session-command").fill("echo 'unterminated")
    page.locator("#new-session-submit").click()
    expect(page.locator("#new-session-error")).to_contain_text("unterminated ' quote")
    page.locator("#new-session-command").fill("no-such-program-here")
    page.locator("#new-session-submit").click()
    expect(page.locator("#new-session-error")).to_contain_text("Could not start it")
    expect(page.locator("#new-session-dialog")).to_be_visible()
    # The agents the server offers are in the list.
    options = page.locator("#new-session-kind option").all_inner_texts()
    assert options[0] == "Command"
    agents = ("claude-code", "codex", "opencode", "pi", "gemini-cli", "qwen-code")
    assert {f"Agent: {agent}" for agent in agents} <= set(options)
    page.keyboard.press("Escape")
    expect(page.locator("#new-session-dialog")).to_be_hidden()
    spawn_from_form(page, "sh -c 'echo \"two words\"'", name="quoted")
    wait_for_terminal(page, "^two words$")
    expect(session_entry(page, "quoted").locator(".badge")).to_have_text("Stopped")
