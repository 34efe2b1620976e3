"""What the terminal pane sends when the program asks for more than keystrokes: a
paste arrives bracketed once the program enables bracketed paste, and a click
arrives as an SGR mouse report once it enables mouse tracking."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import Page

from .conftest import PYTHON, ROOT, Server, login, spawn_from_form, wait_for_terminal

# Raw mode, enable bracketed paste (2004) and mouse clicks with SGR encoding
# (1000 + 1006), then print what arrives as a Python literal, one read per line.
ECHO_INPUT = r"""
import os, sys, tty
tty.setraw(0)
sys.stdout.write("\x1b[?2004h\x1b[?1000h\x1b[?1006hREADY\r\n")
sys.stdout.flush()
while True:
    data = os.read(0, 4096)
    if not data or data == b"q":
        break
    sys.stdout.write("got " + repr(data) + "\r\n")
    sys.stdout.flush()
"""


def test_paste_is_bracketed_and_clicks_are_mouse_reports(
    server: Server, page: Page, tmp_path: Path
) -> None:
    script = tmp_path / "echo_input.py"
    script.write_text(ECHO_INPUT)
    login(page, server)
    spawn_from_form(page, f"{PYTHON} {script}", name="input", cwd=tmp_path)
    wait_for_terminal(page, "^READY$")

    # A real paste event on xterm's input element, as Ctrl+V would raise it.
    page.evaluate(
        """text => {
            const target = document.querySelector(".xterm-helper-textarea");
            target.focus();
            const data = new DataTransfer();
            data.setData("text/plain", text);
            target.dispatchEvent(new ClipboardEvent("paste", {
                clipboardData: data, bubbles: true, cancelable: true }));
        }""",
        "pasted\nlines",
    )
    # Bracketed, and xterm sends a pasted newline as CR, as a real terminal does.
    wait_for_terminal(page, re.escape(r"got b'\x1b[200~pasted\rlines\x1b[201~'"))

    # A click on the third row, fifth column: press and release as SGR reports.
    screen = page.locator(".xterm-screen")
    box = screen.bounding_box()
    assert box is not None
    cols_rows = page.evaluate("window.ptyvisorDebug.terminalSize()")
    cell_w = box["width"] / cols_rows["cols"]
    cell_h = box["height"] / cols_rows["rows"]
    page.mouse.click(box["x"] + cell_w * 4.5, box["y"] + cell_h * 2.5)
    lines = wait_for_terminal(page, re.escape(r"\x1b[<0;5;3m"))
    assert r"\x1b[<0;5;3M" in "".join(lines), lines  # the press, before the release

    page.keyboard.type("q")


def test_page_strips_replayed_queries_like_the_server_side(server: Server, page: Page) -> None:
    """The page's replay.js against the vectors ptyvisor/replay.py is checked with."""
    vectors = json.loads((ROOT / "tests/terminal/replay-queries.json").read_text())["vectors"]
    login(page, server)
    results: list[str] = page.evaluate(
        """async vectors => {
            const { withoutQueries, shown } = await import("/static/client/replay.js");
            const bytes = text => Uint8Array.from(text, c => c.charCodeAt(0));
            const text = b => String.fromCharCode(...b);
            const out = vectors.map(v => text(withoutQueries(bytes(v.output))));
            // Only the replayed part (before the live seq) loses its queries.
            out.push(text(shown(100, bytes("a\\x1b[cb|c\\x1b[6nd"), 105)));
            return out;
        }""",
        vectors,
    )
    assert results[:-1] == [v["shown"] for v in vectors]
    assert results[-1] == "ab|c\x1b[6nd"
