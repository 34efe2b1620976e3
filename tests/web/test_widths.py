"""The page and the server's headless terminal give every character the same cells.

The page draws a snapshot from the headless terminal beside the live stream it
parses itself; if the two counted widths differently, a cold attach would lay out
emoji, CJK and friends differently from the live view. Both use xterm.js's Unicode
11 widths (``ptyvisor/widths.py``); these tests feed the same bytes to both.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from playwright.sync_api import BrowserContext, Page

from ptyvisor.terminal import HeadlessTerminal

from .conftest import Server, login, open_tab, session_entry, spawn_from_form, wait_for_terminal

Cells = list[list[str | None]]

SAMPLES = {
    "emoji": "😀😃😄 ok",
    "newer emoji": "🫠🥱 ok",
    "cjk": "中文字 かな 한국어 ok",
    "zwj family": "👨‍👩‍👧 ok",
    "flags": "🇯🇵🇺🇸 ok",
    "vs15": "☺︎✈︎ ok",
    "vs16": "❤️☺️✈️ ok",
    "keycaps": "1️⃣#️⃣*️⃣ ok",
    "combining": "éñ̃ a͜b ok",
    "symbols": "⎿ ⏵ ⏺ ✻ … ok",
    "box": "┌─┐│└┘▐▛█▜▌ ok",
}


def _headless_cells(data: bytes, cols: int, rows: int) -> Cells:
    terminal = HeadlessTerminal(cols, rows, scrollback=0)
    terminal.feed(data)
    cells: Cells = []
    for row in range(rows):
        cells.append([None if cell.data == "" else cell.data for cell in terminal.line(row)])
    return _normal(cells)


def _normal(cells: Cells) -> Cells:
    """Combined characters compared in NFC (the headless terminal composes them);
    trailing blanks dropped."""
    result: Cells = []
    for row in cells:
        normal = [None if c is None else unicodedata.normalize("NFC", c) for c in row]
        while normal and normal[-1] == " ":
            normal.pop()
        result.append(normal)
    return result


LAYOUT = """async ([text, cols, rows]) => {
    const cells = await window.ptyvisorDebug.layout(text, cols, rows);
    return cells.map((row) => row.map((c) => c ?? "\\u0001").join("\\u0000"));
}"""
"""The page's layout of ``text``, each row packed into one string (NUL between
cells, SOH for the right half of a wide character): 60,000 cells as JSON lists
cost more than the layout itself."""


def _unpack(row: str) -> list[str | None]:
    return [None if cell == "\x01" else cell for cell in row.split("\x00")]


def _code_points() -> list[int]:
    """Every code point a program can print, up to the end of plane 3, and the tags
    and variation selectors of plane 14 (planes 4-13 are unassigned)."""
    points = [cp for cp in range(0x20, 0x40000) if not (0x7F <= cp < 0xA0 or 0xD800 <= cp < 0xE000)]
    return points + list(range(0xE0000, 0xE0200))


def test_every_code_point_takes_the_same_cells_in_the_page(server: Server, page: Page) -> None:
    login(page, server)
    per_line, lines, cols = 100, 200, 300  # "a" + one character: at most 3 cells
    points = _code_points()
    batch = per_line * lines
    mismatches: list[str] = []
    for start in range(0, len(points), batch):
        chunk = points[start : start + batch]
        rows = [
            "".join("a" + chr(cp) for cp in chunk[i : i + per_line])
            for i in range(0, len(chunk), per_line)
        ]
        text = "\r\n".join(rows)
        packed = page.evaluate(LAYOUT, [text, cols, lines])
        page_cells = _normal([_unpack(row) for row in packed])
        ours = _headless_cells(text.encode(), cols, lines)
        for y, (theirs, mine) in enumerate(zip(page_cells, ours, strict=True)):
            if theirs != mine:
                first = chunk[y * per_line]
                mismatches.append(f"row from U+{first:04X}: page {theirs!r} != ours {mine!r}")
    assert not mismatches, f"{len(mismatches)} rows differ, first: {mismatches[:3]}"


def test_live_stream_and_cold_attach_lay_out_like_the_headless_terminal(
    server: Server, page: Page, browser: BrowserContext, tmp_path: Path
) -> None:
    text = "".join(f"{name}: {sample}\r\n" for name, sample in SAMPLES.items()) + "END\r\n"
    data = text.encode()
    sample_file = tmp_path / "samples.txt"
    sample_file.write_bytes(data)
    login(page, server)
    spawn_from_form(page, f"sh -c 'cat {sample_file}; exec sleep 600'", name="widths")
    wait_for_terminal(page, "^END$")
    size = page.evaluate("window.ptyvisorDebug.terminalSize()")
    cols, rows = size["cols"], size["rows"]
    expected = _headless_cells(data, cols, rows)[: len(SAMPLES) + 1]

    live = _normal(page.evaluate("window.ptyvisorDebug.terminalCells()"))[: len(SAMPLES) + 1]
    assert live == expected

    # A second tab attaches cold: it draws the server's snapshot, not the stream.
    cold = open_tab(browser)
    login(cold, server)
    session_entry(cold, "widths").click()
    wait_for_terminal(cold, "^END$")
    assert cold.evaluate("window.ptyvisorDebug.lastReplay()") == "snapshot"
    drawn = _normal(cold.evaluate("window.ptyvisorDebug.terminalCells()"))[: len(SAMPLES) + 1]
    assert drawn == expected
    # And the emoji line really is wide: three emoji, six cells, then " ok".
    emoji_row = next(row for row in expected if "".join(c or "" for c in row).startswith("emoji"))
    assert emoji_row[7:14] == ["😀", None, "😃", None, "😄", None, " "]
