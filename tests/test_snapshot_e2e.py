"""Snapshots through the server: a real full-screen program's screen, redrawn on a
fresh terminal from what a client receives, with its modes — also after a flood
the headless terminal could not afford to render."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptyvisor.client.client import Client
from ptyvisor.wire.protocol import Snapshot

from .conftest import RunningServer, output_until, poll, redraw, screen_showing

pytestmark = pytest.mark.anyio


async def test_less_snapshot_reproduces_screen(client: Client, tmp_path: Path) -> None:
    lines = [f"{i:03d} the quick brown fox {'#' * (i % 30)}" for i in range(200)]
    (tmp_path / "file.txt").write_text("\n".join(lines) + "\n")
    session = await client.spawn(
        ["less", "file.txt"], cwd=str(tmp_path), cols=100, rows=30, env={"LESS": ""}
    )
    # The last row less draws, whole: the rows above it are drawn by then (less draws
    # top down; waiting for the first row alone saw row 26 half drawn under load).
    snapshot = await screen_showing(client, session.id, lines[27])
    shown = redraw(snapshot).display
    for row in range(28):
        assert shown[row].rstrip() == lines[row].rstrip()
    assert snapshot.screen.modes.alternate_screen
    assert (snapshot.size.cols, snapshot.size.rows) == (100, 30)

    # Page down through the server and attach a new client: same screen.
    attached = await client.attach(session.id)
    assert attached.snapshot is not None
    await client.send_input(b" ")
    snapshot = await screen_showing(client, session.id, lines[40])
    assert any(row.startswith(lines[40]) for row in redraw(snapshot).display)
    await client.send_input(b"q")

    async def left_alt_screen() -> Snapshot | None:
        snapshot = await client.snapshot(session.id)
        return snapshot if snapshot.session.process.state == "exited" else None

    after = await poll(left_alt_screen)
    assert not after.screen.modes.alternate_screen, "quitting less leaves the alt screen"


async def test_vim_snapshot_and_modes(client: Client, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    session = await client.spawn(
        ["vim", "-u", "NONE", "-N", "-i", "NONE", "-n", "notes.txt"],
        cwd=str(tmp_path),
        cols=80,
        rows=24,
    )
    await client.attach(session.id, answers_queries=False)
    snapshot = await screen_showing(client, session.id, "gamma")
    shown = redraw(snapshot).display
    assert shown[:3] == ["alpha".ljust(80), "beta".ljust(80), "gamma".ljust(80)]
    assert snapshot.screen.modes.alternate_screen
    assert snapshot.screen.cursor_row == 0 and snapshot.screen.cursor_col == 0
    await client.send_input(b"ggOinserted line\x1b")
    snapshot = await screen_showing(client, session.id, "inserted line")
    assert redraw(snapshot).display[0].rstrip() == "inserted line"
    await client.send_input(b":q!\r")


async def test_alternate_screen_enter_and_leave(client: Client) -> None:
    script = (
        "printf 'main screen text\\n'; read a; "
        "printf '\\033[?1049h\\033[Halt screen text'; read b; "
        "printf '\\033[?1049l'; read c"
    )
    session = await client.spawn(["sh", "-c", script])
    await client.attach(session.id, since=0)
    await output_until(client, b"main screen text")
    await client.send_input(b"\r")
    in_alt = await screen_showing(client, session.id, "alt screen text")
    assert in_alt.screen.modes.alternate_screen
    client_terminal = redraw(in_alt)
    assert "main screen text" not in "\n".join(client_terminal.display)
    # The snapshot also carries the main screen, for when the program leaves.
    client_terminal.feed(b"\x1b[?1049l")
    assert "main screen text" in "\n".join(client_terminal.display)
    await client.send_input(b"\r")
    back = await screen_showing(client, session.id, "main screen text")
    assert not back.screen.modes.alternate_screen
    assert "alt screen text" not in "\n".join(redraw(back).display)


async def test_modes_survive_a_flood_the_renderer_skipped(
    server: RunningServer, client: Client
) -> None:
    # Mouse tracking with SGR encoding and bracketed paste are switched on, then
    # megabytes of output arrive that the headless terminal skips.
    script = (
        "read go; printf '\\033[?1002h\\033[?1006h\\033[?2004h'; "
        "head -c 6000000 /dev/zero | tr '\\0' 'z' | fold -w 120; echo FLOOD-DONE; read x"
    )
    session = await client.spawn(["sh", "-c", script], cols=120, rows=40)
    await client.attach(session.id, since=0)
    await client.send_input(b"\r")
    await output_until(client, b"FLOOD-DONE", wait=60)
    stats = await client.stats(session.id)
    assert stats.render_skipped > 0, "the flood must have outrun the renderer"
    snapshot = await screen_showing(client, session.id, "FLOOD-DONE")
    modes = snapshot.screen.modes
    assert modes.mouse_tracking == "button"
    assert modes.mouse_encoding == "sgr"
    assert modes.bracketed_paste
    assert snapshot.seq == (await client.stats(session.id)).output_bytes
