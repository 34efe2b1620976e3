"""Losing the connection: the page says so, reconnects by itself with backoff, and
its terminal resumes from its last position with every line exactly once — or
redraws from a snapshot when the missed output is no longer held."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.timeouts import scaled

from ..conftest import PTYVISOR_BIN, wait_for
from .conftest import (
    PYTHON,
    Server,
    login,
    screenshot,
    session_entry,
    spawn_from_form,
    start_server,
    terminal_lines,
    wait_for_terminal,
)
from .proxy import TcpProxy

# Numbered lines, a few hundred a second, until the test says stop.
COUNTER = """
import os, sys, time
i = 0
while not os.path.exists("stop"):
    i += 1
    print(f"line {i}", flush=True)
    time.sleep(0.003)
print(f"counted {i}", flush=True)
sys.stdin.readline()
"""
LINE = re.compile(r"line (\d+)")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """Room for every line these tests print: the page keeps as much scrollback as the
    server's terminals (1000 lines by default), and "every line once" counts from 1."""
    running = start_server(tmp_path, "--scrollback", "100000")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def proxy(server: Server) -> Iterator[TcpProxy]:
    running = TcpProxy(server.port)
    try:
        yield running
    finally:
        running.close()


def numbers_in(lines: list[str]) -> list[int]:
    return [int(m.group(1)) for line in lines if (m := LINE.fullmatch(line))]


def last_number(page: Page) -> int:
    numbers = numbers_in(terminal_lines(page))
    return numbers[-1] if numbers else 0


def start_counter(page: Page, directory: Path) -> None:
    (directory / "count.py").write_text(COUNTER)
    spawn_from_form(page, f"{PYTHON} count.py", name="counter", cwd=directory)


def stop_counter(page: Page, directory: Path) -> int:
    (directory / "stop").touch()
    lines = wait_for_terminal(page, r"^counted \d+$")
    final = next(line for line in lines if line.startswith("counted "))
    return int(final.split()[1])


def test_terminal_resumes_with_every_line_once(
    server: Server, proxy: TcpProxy, page: Page, tmp_path: Path
) -> None:
    login(page, server, base=proxy.base)
    start_counter(page, tmp_path)
    wait_for_terminal(page, r"^line 200$")
    # The network goes away for a while: a banner says so, the page keeps trying.
    proxy.refuse(True)
    proxy.drop()
    banner = page.locator("#banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Disconnected from the server — reconnecting")
    expect(page.locator("#banner-retry")).to_be_visible()
    screenshot(page, "disconnected")
    # The program keeps printing meanwhile; the page catches up from where it was.
    before = last_number(page)
    # Retry tries at once (still refused here: the banner stays) ...
    tried = proxy.attempts
    page.locator("#banner-retry").click()
    wait_for(lambda: proxy.attempts > tried, "the retry's connection attempt", timeout=5)
    expect(banner).to_be_visible()
    # ... and once the network is back, the page gets back by itself.
    proxy.refuse(False)
    expect(banner).to_be_hidden()
    wait_for_terminal(page, rf"^line {before + 300}$")
    assert page.evaluate("window.ptyvisorDebug.lastReplay()") == "exact"
    # Dropped again, mid-stream, three times in a row; back by itself each time.
    for _ in range(3):
        proxy.drop()
        expect(banner).to_be_visible()
        expect(banner).to_be_hidden()
        wait_for_terminal(page, rf"^line {last_number(page) + 100}$")
    total = stop_counter(page, tmp_path)
    numbers = numbers_in(terminal_lines(page))
    assert numbers == list(range(1, total + 1)), "every line exactly once, in order"
    assert total > before + 600


def test_snapshot_when_the_missed_output_is_gone(tmp_path: Path, page: Page) -> None:
    server = start_server(tmp_path, "--replay-bytes", "8192")
    proxy = TcpProxy(server.port)
    try:
        login(page, server, base=proxy.base)
        start_counter(page, tmp_path)
        wait_for_terminal(page, r"^line 100$")
        assert page.evaluate("window.ptyvisorDebug.lastReplay()") == "snapshot"
        proxy.refuse(True)
        proxy.drop()
        expect(page.locator("#banner")).to_be_visible()
        position = page.evaluate("window.ptyvisorDebug.position()")
        session = session_id(server)

        def missed_output_gone() -> bool:
            reply = server.request({"type": "stats", "session": session})
            return bool(reply["stats"]["replay_start"] > position)

        wait_for(missed_output_gone, "the server to drop the output the page missed")
        proxy.refuse(False)
        expect(page.locator("#banner")).to_be_hidden()
        total = stop_counter(page, tmp_path)
        assert page.evaluate("window.ptyvisorDebug.lastReplay()") == "snapshot"
        numbers = numbers_in(terminal_lines(page))
        # Redrawn from the snapshot (the server's scrollback and screen), then live:
        # in order, each line once, up to the last one.
        assert numbers == list(range(numbers[0], total + 1)), numbers[:5]
    finally:
        proxy.close()
        server.stop()


def session_id(server: Server) -> str:
    sessions = server.sessions()
    assert len(sessions) == 1
    identifier: str = sessions[0]["id"]
    return identifier


def server_process(server: Server) -> int:
    """The pid of the server process under ``serve`` (the keeper)."""

    def find() -> int | None:
        for task in os.listdir(f"/proc/{server.proc.pid}/task"):
            children = Path(f"/proc/{server.proc.pid}/task/{task}/children").read_text()
            for child in children.split():
                if b"ptyvisor.server.worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                    return int(child)
        return None

    return wait_for(find, "the server process")


RECORD_BANNER = """
window.bannerTexts = [];
window.toastTexts = [];
new MutationObserver(() => {
  const banner = document.getElementById("banner");
  if (!banner.hidden) window.bannerTexts.push(document.getElementById("banner-text").textContent);
  const toast = document.getElementById("toast");
  if (!toast.hidden && window.toastTexts.at(-1) !== toast.textContent) {
    window.toastTexts.push(toast.textContent);
  }
}).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
"""
"""Records what the banner and the toast said (both come and go by themselves)."""


def test_the_page_rides_out_a_restart_and_a_crash(
    server: Server, page: Page, tmp_path: Path
) -> None:
    """The programs outlive the server process: a planned restart (the page says the
    server is restarting) and a crash (kill -9), and the terminal resumes with every
    line exactly once."""
    login(page, server)
    start_counter(page, tmp_path)
    wait_for_terminal(page, r"^line 200$")
    page.evaluate(RECORD_BANNER)
    env = {**os.environ, "PTYVISOR_TOKEN": server.token}
    restarted = subprocess.run(
        [PTYVISOR_BIN, "restart", "--state-dir", str(server.state_dir), "--url",
         f"ws://{server.host_port}/"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert restarted.returncode == 0, restarted.stderr
    wait_for_terminal(page, rf"^line {last_number(page) + 200}$")
    texts = page.evaluate("window.bannerTexts")
    assert any(text.startswith("Server restarting") for text in texts), texts
    assert page.evaluate("window.ptyvisorDebug.lastReplay()") == "exact"
    kept = "Server restarted — every session kept running; reattached"
    page.wait_for_function("text => window.toastTexts.includes(text)", arg=kept)
    assert "Server restarted — reattaching…" in page.evaluate("window.toastTexts")
    page.evaluate("window.toastTexts = []")
    os.kill(server_process(server), signal.SIGKILL)
    wait_for(lambda: server_process(server) > 0, "a new server process")
    wait_for_terminal(page, rf"^line {last_number(page) + 300}$", timeout=30)
    expect(page.locator("#banner")).to_be_hidden()
    assert page.evaluate("window.ptyvisorDebug.lastReplay()") == "exact"
    page.wait_for_function("text => window.toastTexts.includes(text)", arg=kept)
    total = stop_counter(page, tmp_path)
    numbers = numbers_in(terminal_lines(page))
    assert numbers == list(range(numbers[0], total + 1)), "every line exactly once, in order"
    assert len(server.sessions()) == 1


def test_server_restart(tmp_path: Path, page: Page) -> None:
    token = "restart-token-" + "r" * 20
    server = start_server(tmp_path, "--token", token, run="first")
    port = server.port
    try:
        login(page, server)
        spawn_from_form(page, "sh -c 'echo before-restart; exec cat'", name="old")
        wait_for_terminal(page, "^before-restart$")
    finally:
        server.stop()
    banner = page.locator("#banner")
    expect(banner).to_be_visible()
    # Back on the same port with the same token: the page reconnects by itself.
    # Sessions do not survive a stop, and the page says what became of its pane.
    server = start_server(tmp_path, "--token", token, port=port, run="second")
    try:
        expect(banner).to_be_hidden(timeout=scaled(20) * 1000)
        expect(page.locator("#empty-title")).to_have_text("Session gone")
        expect(page.locator("#toast")).to_have_text(
            "Server restarted — 1 session is gone (see Past sessions)"
        )
        expect(page.locator(".session-button")).to_have_count(0)
        # Not "No sessions yet": the list says what happened to them.
        expect(page.locator("#session-empty")).to_contain_text("sessions this page showed are gone")
    finally:
        server.stop()
    # Back with another token: this tab's token no longer works, and it says so.
    server = start_server(tmp_path, "--token", "another-token-" + "a" * 20, port=port, run="third")
    try:
        expect(page.get_by_role("heading", name="Not authorised")).to_be_visible(
            timeout=scaled(20) * 1000
        )
        expect(page.locator("#unauthorised-reason")).to_contain_text("no longer accepts")
    finally:
        server.stop()


FLOOD = """
import os, sys
sys.stdin.readline()
i = 0
while not os.path.exists("stop"):
    for _ in range(1000):
        i += 1
        sys.stdout.write(f"line {i}\\n")
    sys.stdout.flush()
sys.stdout.write(f"counted {i}\\n")
sys.stdout.flush()
open("done", "w").close()
sys.stdin.readline()
"""
FLOOD_BYTES = 8 * 1024 * 1024
"""More than the kernel's socket buffers (up to 4 MiB each way) and the 64 KiB the
server queues for a client together."""


@pytest.mark.timeout(240)
def test_lagging_page_is_redrawn_from_a_snapshot(tmp_path: Path, page: Page) -> None:
    server = start_server(tmp_path, "--client-buffer", "65536")
    proxy = TcpProxy(server.port, receive_buffer=8192)
    try:
        login(page, server, base=proxy.base)
        (tmp_path / "flood.py").write_text(FLOOD)
        spawn_from_form(page, f"{PYTHON} flood.py", name="flood", cwd=tmp_path)
        session = session_id(server)
        # The page stops reading (what the server sends is held back) while the
        # program floods: the server drops what it queued for the page and owes it
        # one fresh snapshot instead.
        proxy.hold()
        page.keyboard.press("Enter")

        def flooded() -> bool:
            reply = server.request({"type": "stats", "session": session})
            return bool(reply["stats"]["output_bytes"] > FLOOD_BYTES)

        wait_for(flooded, "the flood", timeout=60)
        (tmp_path / "stop").touch()
        wait_for((tmp_path / "done").exists, "the flood to end")
        proxy.release()
        # Several MiB were still in the kernel's buffers: parsing them takes a while.
        lines = wait_for_terminal(page, r"^counted \d+$", timeout=90)
        total = int(next(line for line in lines if line.startswith("counted ")).split()[1])
        assert page.evaluate("window.ptyvisorDebug.lagged()") >= 1, "no lagging snapshot"
        numbers = numbers_in(lines)
        assert numbers[-1] == total
        # What came before the snapshot was replaced by it: the terminal shows one
        # unbroken run of lines, each once.
        assert numbers == list(range(numbers[0], total + 1)), numbers[:5]
    finally:
        proxy.close()
        server.stop()


# Asks DA1 (ESC [ c) once per round, when the test says, and records every byte it
# reads until a "Z" typed in the page, which arrives after any reply the page sent.
ASKS = r"""
import os, sys, time, tty
tty.setraw(0)
print("ready", end="\r\n", flush=True)
for round in ("live", "replayed"):
    while not os.path.exists(f"ask-{round}"):
        time.sleep(0.02)
    sys.stdout.write(f"\x1b[cqueried-{round}\r\n")
    sys.stdout.flush()
    got = b""
    while b"Z" not in got:
        got += os.read(0, 1024)
    with open(f"replies-{round}.tmp", "wb") as out:
        out.write(got)
    os.replace(f"replies-{round}.tmp", f"replies-{round}")
print("done", end="\r\n", flush=True)
sys.stdin.readline()
"""
DA1_REPLY = re.compile(rb"\x1b\[\?[0-9;]*c")


def test_each_terminal_query_gets_one_reply_across_a_reconnect(
    server: Server, proxy: TcpProxy, page: Page, tmp_path: Path
) -> None:
    (tmp_path / "asks.py").write_text(ASKS)
    login(page, server, base=proxy.base)
    spawn_from_form(page, f"{PYTHON} asks.py", name="asks", cwd=tmp_path)
    wait_for_terminal(page, "^ready$")

    def replies(round_name: str) -> bytes:
        path = tmp_path / f"replies-{round_name}"
        wait_for(path.exists, f"the {round_name} round's replies")
        return path.read_bytes()

    # Live: the page's terminal answers (the server stays silent while it is attached).
    (tmp_path / "ask-live").touch()
    wait_for_terminal(page, "^queried-live$")
    page.keyboard.type("Z")
    assert len(DA1_REPLY.findall(replies("live"))) == 1, replies("live")

    # Asked while the page is away: the server answers. The page then gets the query
    # again in its replay, and must not answer it a second time.
    proxy.refuse(True)
    proxy.drop()
    expect(page.locator("#banner")).to_be_visible()
    session = session_id(server)
    wait_for(lambda: server.sessions()[0]["clients"] == 0, "the server to see the page go")
    (tmp_path / "ask-replayed").touch()

    def answered_by_server() -> bool:
        reply = server.request({"type": "stats", "session": session})
        return bool(reply["stats"]["render_lag"] == 0)

    wait_for(answered_by_server, "the server's headless terminal to parse the query")
    proxy.refuse(False)
    expect(page.locator("#banner")).to_be_hidden()
    wait_for_terminal(page, "^queried-replayed$")
    assert page.evaluate("window.ptyvisorDebug.lastReplay()") == "exact"
    page.keyboard.type("Z")
    assert len(DA1_REPLY.findall(replies("replayed"))) == 1, replies("replayed")
    wait_for_terminal(page, "^done$")


def test_a_session_started_while_connecting_waits_for_the_connection(
    server: Server, proxy: TcpProxy, page: Page
) -> None:
    """A click on Start while the page is still connecting (right after it loads,
    or during a reconnect) used to fail at once with "not connected to the
    server"; the request now waits for the connection and is sent once."""
    login(page, server, base=proxy.base)
    state = "window.ptyvisorDebug.connectionState()"
    page.wait_for_function(f"() => {state} === 'open'")
    # The next connection gets no answer until released: the page stays connecting.
    proxy.hold()
    proxy.drop()
    page.wait_for_function(f"() => {state} === 'connecting'")
    page.locator("#new-session-button").click()
    page.locator("#new-session-kind").select_option("")
    page.locator("#new-session-command").fill("sh -c 'echo started-once; exec sleep 600'")
    page.locator("#new-session-name").fill("patient")
    page.locator("#new-session-submit").click()
    assert page.evaluate(state) == "connecting", "the connection came too soon"
    proxy.release()
    expect(page.locator("#new-session-dialog")).to_be_hidden()
    expect(page.locator("#session-title")).to_have_text("patient")
    wait_for_terminal(page, "^started-once$")
    sessions = server.request({"type": "list"})["sessions"]
    assert [s["name"] for s in sessions] == ["patient"]


def test_a_reload_shows_the_history_the_page_had(tmp_path: Path, page: Page) -> None:
    """The pane keeps as much scrollback as the server's terminals do (hello's
    ``scrollback``), so a reload, whose attach brings back the server's scrollback and
    screen, shows the lines the page showed, the oldest gone from both alike."""
    server = start_server(tmp_path, "--scrollback", "300")
    try:
        login(page, server)
        # The lines come live, once the page is attached (a key starts them): what the
        # pane keeps of them is its own scrollback's doing, not a snapshot's.
        script = "echo go?; read x; seq 1 3000; exec sleep 600"
        spawn_from_form(page, f"sh -c {shlex.quote(script)}", name="count")
        wait_for_terminal(page, r"^go\?$")
        page.locator(".xterm-helper-textarea").focus()
        page.keyboard.press("Enter")
        wait_for_terminal(page, r"^3000$")
        before = terminal_lines(page)
        assert 300 < len(before) < 400 and before[-1] == "3000", before[:3]
        page.reload()
        expect(page.locator("#app")).to_be_visible()
        expect(session_entry(page, "count")).to_have_attribute("aria-current", "true")
        wait_for_terminal(page, r"^3000$")
        assert terminal_lines(page) == before
    finally:
        server.stop()
