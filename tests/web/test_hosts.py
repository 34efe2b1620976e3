"""The page shows the other machines' sessions (hosts.js), and opens one on its host,
relayed by this machine's server (``/contexts/NAME``) through a real OpenSSH server
(the far machine of ``tests/client/test_ssh.py``)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.timeouts import scaled

from ..client.test_ssh import Sshd, sshd  # noqa: F401 - the fixture, for this module
from ..server.test_control import BASH, WRAPPER
from .conftest import PTYVISOR, PYTHON, Server, login, screenshot, server_env, start_server
from .conftest import wait_for_terminal as terminal_shows
from .test_answers import hook_result


@pytest.fixture
def local(sshd: Sshd, tmp_path: Path) -> Iterator[Server]:  # noqa: F811 - the fixture above
    """This machine's server, with contexts ``far`` (a server) and ``fresh`` (none)."""
    env = server_env(tmp_path)
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), PTYVISOR_SSH=sshd.env["PTYVISOR_SSH"])
    for name, url in (("far", "ssh://far"), ("fresh", "ssh://fresh")):
        subprocess.run(
            [PTYVISOR, "context", "add", name, url],
            env=env,
            check=True,
            capture_output=True,
            timeout=scaled(30),
        )
    server = start_server(tmp_path, env=env)
    try:
        yield server
    finally:
        server.stop()


def far(sshd: Sshd, *args: str) -> str:  # noqa: F811 - the fixture above
    """The CLI against the far machine (the page's tests run in Playwright's event
    loop, so the far side is driven from here with the CLI)."""
    env = {**sshd.env, "PATH": f"{Path(PTYVISOR).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [PTYVISOR, "-H", "ssh://far", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def far_session(sshd: Sshd) -> Iterator[str]:  # noqa: F811 - the fixture above
    """A session on the far machine, named ``far-job``: says hello, then echoes."""
    session = far(
        sshd, "run", "-d", "--name", "far-job", "--", "sh", "-c", "echo far-hello; exec cat"
    )
    yield session
    far(sshd, "close", session)


def test_the_page_lists_another_machines_sessions_and_opens_one_there(
    local: Server, far_session: str, page: Page
) -> None:
    login(page, local)
    expect(page.locator("#host-label")).to_have_text("On this machine")
    far = page.locator('.host[data-host="far"]')
    entry = far.locator(".host-session", has_text="far-job")
    expect(entry).to_be_visible(timeout=scaled(30) * 1000)
    # A context with no server is a line saying so, not a failure of the page.
    expect(page.locator('.host[data-host="fresh"] .host-note')).to_contain_text("not reachable")
    screenshot(page, "other-hosts")
    entry.click()
    # The page is now on the far machine, through this one's relay.
    expect(page.locator("#host-label")).to_have_text("On far")
    assert "context=far" in page.url
    expect(page.locator("#session-title")).to_have_text("far-job")
    terminal_shows(page, "^far-hello$", timeout=30)
    page.locator(".xterm-helper-textarea").focus()
    page.keyboard.type("typed-on-the-page")
    page.keyboard.press("Enter")
    # The program's echo (cat) as well as the terminal's: it came from far's PTY. The
    # terminal's echo shows first; the wait is for both.
    lines = terminal_shows(page, "^typed-on-the-page$", timeout=30, lines=2)
    assert lines.count("typed-on-the-page") == 2, lines
    # And this machine is one of the others now.
    expect(page.locator('.host[data-host="this machine"] .host-note')).to_have_text(
        "no sessions", timeout=scaled(30) * 1000
    )


def test_a_far_sessions_approval_is_answered_and_it_is_run_again_from_the_page(
    local: Server,
    sshd: Sshd,  # noqa: F811 - the fixture above
    page: Page,
    tmp_path: Path,
) -> None:
    """Through the relay as on this machine: a hook holding an approval in a session
    on the far machine shows its card, the page's answer is what the hook prints, and
    the ended session is started again there from the header."""
    work = tmp_path / "far-work"
    work.mkdir()
    (work / "payload.json").write_text(json.dumps(BASH))
    (work / "wrap.py").write_text(WRAPPER)
    script = (
        f"setsid {shlex.quote(PYTHON)} wrap.py claude-code & read x; "
        f"{shlex.quote(PTYVISOR)} emit activity waiting; echo turn-over; exit 3"
    )
    far(sshd, "run", "-d", "--name", "far-ask", "--cwd", str(work), "--", "sh", "-c", script)
    login(page, local)
    page.locator('.host[data-host="far"] .host-session', has_text="far-ask").click(
        timeout=scaled(30) * 1000
    )
    expect(page.locator("#host-label")).to_have_text("On far")
    card = page.locator(".card")
    expect(card.locator(".card-title")).to_have_text(
        "Run a shell command", timeout=scaled(30) * 1000
    )
    card.get_by_role("button", name="Allow", exact=True).click()
    expect(card.locator(".card-outcome")).to_have_text(re.compile("^Allowed."))
    assert hook_result(work)["behavior"] == "allow"
    page.locator(".xterm-helper-textarea").focus()
    page.keyboard.press("Enter")  # the turn ends, which clears the card; the program exits
    expect(card).to_have_count(0)
    terminal_shows(page, "^turn-over$", timeout=30)
    again = page.locator("#resume-button")
    expect(again).to_be_visible(timeout=scaled(30) * 1000)
    again.click()
    expect(page.locator(".session-button")).to_have_count(2, timeout=scaled(30) * 1000)
    listed = json.loads(far(sshd, "ls", "--all", "--json"))
    rerun = [s for s in listed if s["name"] == "far-ask" and s.get("resumed_from")]
    assert len(rerun) == 1 and rerun[0]["cwd"] == str(work), listed
    for session in listed:
        if not session.get("past"):
            far(sshd, "close", session["id"])
