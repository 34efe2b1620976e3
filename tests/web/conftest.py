"""Browser tests of the web page: a real ``ptyvisor serve`` subprocess, Debian's
Chromium driven by Playwright, and nothing mocked.

Playwright's own browser download is never used: ``scripts/install_chromium.sh``
finds (or, in CI, installs) the system Chromium. Screenshots of the main states go
to ``test-output/web/`` at the repository root.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    ViewportSize,
    expect,
    sync_playwright,
)
from websockets.sync.client import connect as ws_connect

from tests.timeouts import scaled

from ..conftest import start_serve

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-output" / "web"
PYTHON = sys.executable
PTYVISOR = str(Path(sys.executable).parent / "ptyvisor")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDE: ViewportSize = {"width": 1280, "height": 800}
SERVING_LINE = re.compile(r"^ptyvisor \S+ serving on ws://([^/\s]+)/$", re.MULTILINE)

T = TypeVar("T")

expect.set_options(timeout=scaled(15) * 1000)


@dataclass
class Server:
    """``ptyvisor serve`` in a subprocess on a free loopback port."""

    proc: subprocess.Popen[bytes]
    host_port: str
    token: str
    state_dir: Path
    log: Path

    @property
    def port(self) -> int:
        return int(self.host_port.rsplit(":", 1)[1])

    @property
    def base(self) -> str:
        return f"http://{self.host_port}"

    @property
    def page_url(self) -> str:
        """The URL ``serve`` prints: it logs a browser in."""
        return f"{self.base}/?token={self.token}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """One request over the public WebSocket API, the way any other client would."""
        with ws_connect(
            f"ws://{self.host_port}/",
            additional_headers={"Authorization": f"Bearer {self.token}"},
            open_timeout=10,
        ) as ws:
            hello = json.loads(ws.recv(timeout=10))
            assert hello["type"] == "hello"
            ws.send(json.dumps({**message, "req_id": "test"}))
            while True:
                reply = ws.recv(timeout=10)
                if isinstance(reply, str):
                    parsed: dict[str, Any] = json.loads(reply)
                    if parsed.get("req_id") == "test":
                        return parsed

    def sessions(self) -> list[dict[str, Any]]:
        reply = self.request({"type": "list"})
        sessions: list[dict[str, Any]] = reply["sessions"]
        return sessions


def server_env(base: Path) -> dict[str, str]:
    """A clean environment: our ``ptyvisor`` first on PATH, a private HOME."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    env.update(
        HOME=str(home),
        PATH=f"{Path(PTYVISOR).parent}{os.pathsep}{env.get('PATH', '')}",
        TERM="xterm-256color",
        PS1="$ ",
    )
    return env


def start_server(
    base: Path,
    *extra: str,
    port: int = 0,
    run: str = "serve",
    env: Mapping[str, str] | None = None,
) -> Server:
    """``extra``: more ``serve`` options; ``run`` names the log of this start; ``env``
    replaces :func:`server_env`'s environment (the sessions the page starts inherit it)."""
    state_dir = base / "state"
    log = base / f"{run}.log"
    args = ["--host", "127.0.0.1", "--port", str(port), "--state-dir", str(state_dir), *extra]
    proc, url = start_serve(args, env=server_env(base) if env is None else env, stdout=log)
    serving = SERVING_LINE.search(log.read_text())
    assert serving, log.read_text()
    token = url.split("?token=", 1)[1]
    if "--token" not in extra:
        assert token == (state_dir / "token").read_text().strip()
    return Server(proc, serving.group(1), token, state_dir, log)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = start_server(tmp_path)
    try:
        yield running
    finally:
        running.stop()
    output = running.log.read_text()
    assert running.token not in output.replace(f"page: {running.page_url}", ""), (
        "the token leaked into the server's log"
    )


@pytest.fixture(scope="package")
def chromium_path() -> str:
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_chromium.sh")],
        capture_output=True,
        text=True,
        timeout=1900,
        check=False,
    )
    assert result.returncode == 0, f"no Chromium for the browser tests:\n{result.stderr}"
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture
def chromium(playwright: Playwright, chromium_path: str) -> Iterator[Browser]:
    """A Chromium for tests that need their own contexts (screen density, a phone)."""
    launched = playwright.chromium.launch(
        executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS
    )
    try:
        yield launched
    finally:
        launched.close()


def tab_in_context(
    chromium: Browser,
    *,
    width: int = WIDE["width"],
    height: int = WIDE["height"],
    scale: float = 1,
    mobile: bool = False,
) -> Page:
    """A tab of its own context: ``scale`` is the device scale factor; ``mobile`` a
    phone (touch, mobile viewport)."""
    context = chromium.new_context(
        viewport={"width": width, "height": height},
        device_scale_factor=scale,
        is_mobile=mobile,
        has_touch=mobile,
    )
    return open_tab(context)


@pytest.fixture
def browser(playwright: Playwright, chromium_path: str, tmp_path: Path) -> Iterator[BrowserContext]:
    """A fresh Chromium profile per test; pages in it are separate tabs."""
    context = playwright.chromium.launch_persistent_context(
        str(tmp_path / "chromium-profile"),
        executable_path=chromium_path,
        headless=True,
        args=CHROMIUM_ARGS,
        viewport=WIDE,
    )
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def page(browser: BrowserContext) -> Page:
    return open_tab(browser)


def open_tab(browser: BrowserContext) -> Page:
    """A new tab that fails the test on any script error or CSP violation."""
    tab = browser.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on(
        "console",
        lambda message: (
            problems.append(f"console {message.type}: {message.text}")
            if message.type == "error" and not _expected_console_error(message.text)
            else None
        ),
    )
    tab.set_default_timeout(scaled(15) * 1000)
    _TAB_PROBLEMS[id(tab)] = problems
    return tab


_TAB_PROBLEMS: dict[int, list[str]] = {}


def _expected_console_error(text: str) -> bool:
    """Network failures the tests cause on purpose (refused logins, dropped sockets)."""
    return any(
        known in text
        for known in (
            "401 (Unauthorized)",
            "WebSocket connection to",
            "net::ERR_",
            "Failed to load resource",
        )
    )


def problems_of(tab: Page) -> list[str]:
    return _TAB_PROBLEMS.get(id(tab), [])


@pytest.fixture(autouse=True)
def _no_script_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    for problems in _TAB_PROBLEMS.values():
        assert not problems, problems
    _TAB_PROBLEMS.clear()


def screenshot(tab: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def login(tab: Page, server: Server, *, base: str | None = None) -> None:
    """Open the printed URL and wait for the app (the token leaves the address bar)."""
    url = server.page_url if base is None else f"{base}/?token={server.token}"
    tab.goto(url)
    expect(tab.locator("#app")).to_be_visible()
    assert "token" not in tab.url


def session_entry(tab: Page, name: str) -> Any:
    """The sidebar entry (a button) of the session called ``name``."""
    return tab.locator(".session-button").filter(
        has=tab.locator(".session-name", has_text=re.compile(f"^{re.escape(name)}$"))
    )


def spawn_from_form(tab: Page, command: str, *, name: str, cwd: Path | None = None) -> None:
    """Start a plain command with the New session form and wait for its terminal."""
    tab.locator("#new-session-button").click()
    dialog = tab.locator("#new-session-dialog")
    expect(dialog).to_be_visible()
    tab.locator("#new-session-kind").select_option("")
    tab.locator("#new-session-command").fill(command)
    if cwd is not None:
        tab.locator("#new-session-cwd").fill(str(cwd))
    tab.locator("#new-session-name").fill(name)
    tab.locator("#new-session-submit").click()
    expect(dialog).to_be_hidden()
    expect(tab.locator("#session-title")).to_have_text(name)
    expect(session_entry(tab, name)).to_have_attribute("aria-current", "true")


def terminal_lines(tab: Page) -> list[str]:
    lines: list[str] = tab.evaluate("window.ptyvisorDebug.terminalLines()")
    return lines


def wait_for_terminal(tab: Page, pattern: str, timeout: float = 15, *, lines: int = 1) -> list[str]:
    """Wait until ``lines`` lines of the terminal match ``pattern`` (a JavaScript
    regular expression); returns the terminal's lines.

    Give ``wait_for_function`` a function (``"() => ..."``), never a bare expression:
    Playwright re-checks a bare expression with ``eval`` in the page, which the
    page's Content-Security-Policy forbids, so the wait fails whenever the condition
    is not already true on the first check (so only on a slow, busy machine)."""
    tab.wait_for_function(
        "([pattern, lines]) => window.ptyvisorDebug.terminalLines()"
        ".filter(l => new RegExp(pattern).test(l)).length >= lines",
        arg=[pattern, lines],
        timeout=scaled(timeout) * 1000,
    )
    return terminal_lines(tab)
