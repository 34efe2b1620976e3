"""What the terminal actually draws, checked in pixels: underscores at every common
screen density, and the glyphs agents use that ordinary monospace fonts lack."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import Browser, FloatRect, Page, Route

from tests.timeouts import scaled

from .conftest import SCREENSHOTS, Server, login, spawn_from_form, tab_in_context, wait_for_terminal

BACKGROUND = (0x0B, 0x0F, 0x14)


def _tab(chromium: Browser, scale: float) -> Page:
    return tab_in_context(chromium, scale=scale)


def _cells_image(tab: Page, needle: str, start: int, count: int) -> Image.Image:
    """A picture of ``count`` cells from column ``start`` of the row showing ``needle``."""
    row = tab.locator(".xterm-rows > div", has_text=needle).first
    box = row.bounding_box()
    assert box is not None
    cols = tab.evaluate("window.ptyvisorDebug.terminalSize()")["cols"]
    screen = tab.locator(".xterm-screen").bounding_box()
    assert screen is not None
    cell = screen["width"] / cols
    clip: FloatRect = {
        "x": box["x"] + start * cell,
        "y": box["y"],
        "width": count * cell,
        "height": box["height"],
    }
    return Image.open(io.BytesIO(tab.screenshot(clip=clip))).convert("RGB")


def _ink(image: Image.Image) -> list[int]:
    """Per pixel row: how many pixels are clearly not the terminal's background."""
    width, height = image.size
    pixels = image.load()
    assert pixels is not None
    rows = []
    for y in range(height):
        count = 0
        for x in range(width):
            r, g, b = pixels[x, y]  # type: ignore[misc]
            if abs(r - BACKGROUND[0]) + abs(g - BACKGROUND[1]) + abs(b - BACKGROUND[2]) > 60:
                count += 1
        rows.append(count)
    return rows


@pytest.mark.parametrize("scale", [1, 1.5, 2])
def test_underscores_are_drawn_at_every_density(
    server: Server, chromium: Browser, tmp_path: Path, scale: float
) -> None:
    tab = _tab(chromium, scale)
    login(tab, server)
    line = "snake_case __init__ ________"
    spawn_from_form(tab, f"sh -c \"printf '%s\\n' '{line}'; exec sleep 600\"", name="underscores")
    wait_for_terminal(tab, "^snake_case")
    tab.screenshot(path=str(SCREENSHOTS / f"underscores-{scale}x.png"))
    # The eight underscores at the end: a horizontal stroke, wide as the cells.
    image = _cells_image(tab, line, line.index("________"), 8)
    ink = _ink(image)
    assert max(ink) >= image.size[0] * 0.8, f"no underscore stroke drawn at {scale}x: {ink}"
    # And the lone one in snake_case: the cell between "snake" and "case" has ink.
    lone = _ink(_cells_image(tab, line, line.index("_"), 1))
    assert max(lone) > 0, f"snake_case's underscore is missing at {scale}x"


GLYPHS = "⎿⏵⏺⏸⎯⧉☰⠋"
GLYPH_LINE = "g " + " ".join(GLYPHS) + " \u0378 end"


def _misdrawn(tab: Page) -> list[str]:
    """The glyphs of GLYPH_LINE that draw nothing in their cell, or an empty box
    (U+0378, unassigned, is the box a missing glyph draws); waits up to 15 s for the
    row to be repainted right (it is once a face loads)."""
    box = _cells_image(tab, "end", GLYPH_LINE.index("\u0378"), 1)

    def wrong() -> list[str]:
        failing = []
        for glyph in GLYPHS:
            image = _cells_image(tab, "end", GLYPH_LINE.index(glyph), 1)
            if max(_ink(image)) == 0 or image.tobytes() == box.tobytes():
                failing.append(glyph)
        return failing

    deadline = time.monotonic() + scaled(15)
    while (failing := wrong()) and time.monotonic() < deadline:
        tab.wait_for_timeout(100)
    return failing


def _show_glyphs(tab: Page, server: Server) -> None:
    login(tab, server)
    command = f"sh -c \"printf '%s\\n' '{GLYPH_LINE}'; exec sleep 600\""
    spawn_from_form(tab, command, name="glyphs")
    wait_for_terminal(tab, "end$")


def _symbols_loaded(tab: Page, faces: int) -> None:
    tab.wait_for_function(
        f"""() => [...document.fonts].filter(
            (f) => f.family.replaceAll('"', "") === "ptyvisor symbols" && f.status === "loaded"
        ).length >= {faces}"""
    )
    tab.wait_for_function("() => document.fonts.status === 'loaded'")


def test_agent_glyphs_are_drawn_not_boxes(server: Server, chromium: Browser) -> None:
    """⎿ ⏵ (Claude Code), ⏺ ⏸ ⎯ ⧉ ☰ and braille spinners: no installed monospace
    font has them, so the page ships a fallback; each must draw like itself, not
    like a character no font has (U+0378, unassigned: an empty box)."""
    tab = _tab(chromium, 1)
    _show_glyphs(tab, server)
    _symbols_loaded(tab, 4)
    tab.screenshot(path=str(SCREENSHOTS / "glyphs-1x.png"))
    failing = _misdrawn(tab)
    assert not failing, f"drawn as nothing or as an empty box: {failing}"


def test_a_glyph_drawn_before_its_face_loaded_is_redrawn_in_its_cell(
    server: Server, chromium: Browser
) -> None:
    """The row is on screen while ⏸'s face is still on its way (a slow network, a
    busy machine): xterm measures ⏸ in whatever font drew it meanwhile. Once the face
    arrives, the page has xterm measure again, or ⏸ and what follows it on the row
    are drawn outside their cells."""
    tab = _tab(chromium, 1)
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    tab.route("**/noto-sans-symbols-2.woff2", hold)
    _show_glyphs(tab, server)  # the row is drawn, so measured, without the face
    tab.wait_for_function("() => document.fonts.status === 'loading'")
    assert len(held) == 1
    held[0].continue_()
    _symbols_loaded(tab, 4)
    tab.screenshot(path=str(SCREENSHOTS / "glyphs-late-face-1x.png"))
    failing = _misdrawn(tab)
    assert not failing, f"drawn as nothing or as an empty box: {failing}"
