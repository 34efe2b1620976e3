"""The renderer (renderer.py) on its own: a real output log and headless terminal,
no server, no PTY. What it renders, what it skips past its lag limit (keeping the
mode changes), what a snapshot continues from, and that a failing listener costs
only itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ptyvisor.server.outputlog import OutputLog
from ptyvisor.server.renderer import BATCH_BYTES, Renderer
from ptyvisor.terminal import HeadlessTerminal, TerminalSignal

from ..conftest import poll

pytestmark = pytest.mark.anyio


def make(log: OutputLog, **options: Any) -> Renderer:
    return Renderer(log, cols=40, rows=5, scrollback=100, **options)


def screen_text(renderer: Renderer) -> Callable[[HeadlessTerminal], list[str]]:
    return lambda terminal: [row.rstrip() for row in terminal.display]


async def _async(value: bool) -> bool:
    return value


@asynccontextmanager
async def running(renderer: Renderer) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(renderer.run)
        yield
        tg.cancel_scope.cancel()


async def test_a_snapshot_renders_the_log_up_to_its_end_first() -> None:
    log = OutputLog(1 << 16)
    renderer = make(log)
    log.append(b"hello\r\nworld")
    renderer.output_added()  # nothing runs it: the snapshot must catch up itself
    snapshot, seq = await renderer.snapshot(log.end_seq)
    assert seq == log.end_seq == renderer.rendered_seq
    fresh = HeadlessTerminal(snapshot.cols, snapshot.rows)
    fresh.feed(snapshot.ansi.encode())
    assert [row.rstrip() for row in fresh.display[:2]] == ["hello", "world"]


async def test_a_snapshot_continues_before_a_character_it_has_only_the_start_of() -> None:
    log = OutputLog(1 << 16)
    renderer = make(log)
    log.append(b"ab\xe2\x82")  # the first two bytes of the euro sign
    _, seq = await renderer.snapshot(log.end_seq)
    assert seq == 2, "a client continuing from the snapshot must get the whole character"
    log.append(b"\xac")
    _, seq = await renderer.snapshot(log.end_seq)
    assert seq == 5
    assert (await renderer.inspect(screen_text(renderer)))[0] == "ab€"


async def test_the_background_renderer_waits_for_a_quiet_reader() -> None:
    log = OutputLog(1 << 16)
    asked = 0
    quiet = anyio.Event()

    def reader_busy() -> bool:
        nonlocal asked
        asked += 1
        return not quiet.is_set()

    renderer = make(log, reader_busy=reader_busy)
    async with running(renderer):
        log.append(b"x" * (3 * BATCH_BYTES))
        renderer.output_added()
        await poll(lambda: _async(asked >= 20))  # it has looked, again and again
        assert renderer.rendered_seq == 0, "rendered while the reader was busy"
        quiet.set()
        await poll(lambda: _async(renderer.rendered_seq == log.end_seq))
    assert renderer.skipped == 0


async def test_past_the_lag_limit_the_oldest_bytes_are_skipped_but_their_modes_kept() -> None:
    log = OutputLog(256 * 1024)  # skips in steps of a quarter of that
    renderer = make(log, lag_limit=16 * 1024)
    # Mode changes at the start of a flood nobody renders, its text at the end.
    log.append(b"\x1b[?2004h\x1b[?1h\x1b[?1049h")
    for _ in range(64):
        log.append(b"flood line\r\n" * 200)
        renderer.output_added()
    log.append(b"\x1b[2J\x1b[Hthe end")
    renderer.output_added()
    assert renderer.skipped > 0, "the reader's own calls must skip once past the limit"
    assert renderer.lag <= 16 * 1024 + 64 * 1024 + 2400
    modes = await renderer.inspect(lambda terminal: terminal.modes)
    assert modes.bracketed_paste and modes.application_cursor_keys and modes.alternate_screen
    assert (await renderer.inspect(screen_text(renderer)))[0] == "the end"


async def test_a_mode_turned_off_later_in_the_skipped_part_stays_off() -> None:
    log = OutputLog(1 << 20)
    renderer = make(log, lag_limit=4096)
    log.append(b"\x1b[?2004h" + b"." * 50_000 + b"\x1b[?2004l" + b"." * 50_000)
    renderer.output_added()
    log.append(b"tail")
    modes = await renderer.inspect(lambda terminal: terminal.modes)
    assert renderer.skipped > 0
    assert not modes.bracketed_paste


async def test_bytes_the_log_dropped_before_rendering_are_skipped_not_read() -> None:
    log = OutputLog(4096)
    renderer = make(log)
    for _ in range(10):
        log.append(b"y" * 3000)  # never output_added: the log drops what was not rendered
    log.append(b"\x1b[Hlast")
    assert log.start_seq > 0
    await renderer.resize(30, 5)  # renders what is left, with no catching up first
    assert renderer.rendered_seq == log.end_seq
    assert renderer.skipped >= log.start_seq
    assert (await renderer.inspect(screen_text(renderer)))[0].startswith("last")


async def test_terminal_signals_reach_their_listener_and_a_failing_one_costs_only_them() -> None:
    log = OutputLog(1 << 16)
    got: list[list[TerminalSignal]] = []
    renderer = make(log, on_signals=got.append)
    log.append(b"\x07")
    await renderer.snapshot(log.end_seq)
    assert got and got[0], "the bell is a signal"

    def broken(signals: list[TerminalSignal]) -> None:
        raise RuntimeError("a bug in the listener")

    other = OutputLog(1 << 16)
    failing = make(other, on_signals=broken)
    other.append(b"\x07still rendered")
    await failing.snapshot(other.end_seq)
    assert "still rendered" in (await failing.inspect(screen_text(failing)))[0]


async def test_the_screen_goes_to_its_watcher_while_watched_and_a_failing_one_is_dropped() -> None:
    log = OutputLog(1 << 16)
    seen: list[tuple[list[str], int]] = []
    watching = False
    renderer = make(
        log, on_screen=lambda rows, seq: seen.append((rows, seq)), watch_screen=lambda: watching
    )
    log.append(b"one")
    await renderer.snapshot(log.end_seq)
    assert seen == []
    watching = True
    log.append(b" two")
    await renderer.snapshot(log.end_seq)
    assert seen and seen[-1][0][0].rstrip() == "one two"
    assert seen[-1][1] == log.end_seq  # rendered that far

    calls = 0

    def broken(rows: list[str], seq: int) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("a bug in the watcher")

    other = OutputLog(1 << 16)
    dropping = make(other, on_screen=broken, watch_screen=lambda: True)
    for text in (b"a", b"b", b"c"):
        other.append(text)
        await dropping.snapshot(other.end_seq)
    assert calls == 1
    assert (await dropping.inspect(screen_text(dropping)))[0] == "abc"


async def test_a_query_is_answered_through_on_reply() -> None:
    log = OutputLog(1 << 16)
    replies: list[bytes] = []
    renderer = make(log, on_reply=replies.append)
    log.append(b"\x1b[6n")  # where is the cursor?
    await renderer.snapshot(log.end_seq)
    assert b"".join(replies) == b"\x1b[1;1R"


async def test_fifty_lagging_clients_share_one_snapshot_within_reuse() -> None:
    log = OutputLog(1 << 16)
    renderer = make(log)
    log.append(b"first")
    first = await renderer.shared_snapshot(log.end_seq, reuse=100)
    log.append(b" more")
    again = await renderer.shared_snapshot(log.end_seq, reuse=100)
    assert again is first and renderer.shared_made == 1
    log.append(b"x" * 200)
    fresh = await renderer.shared_snapshot(log.end_seq, reuse=100)
    assert fresh is not first and renderer.shared_made == 2
    assert fresh[1] == log.end_seq


async def test_a_resize_renders_what_came_before_it_at_the_old_size() -> None:
    log = OutputLog(1 << 16)
    renderer = make(log)
    # Column 30 exists at 40 columns, and the narrower screen then re-wraps that row
    # (as xterm.js): the X moves to column 10 of a row below it; at 20 columns the
    # same move would stop at the last column and show the X on the first row.
    log.append(b"\x1b[30GX\r\nnext")
    await renderer.resize(20, 5)
    assert (await renderer.inspect(screen_text(renderer)))[:3] == ["", " " * 9 + "X", "next"]


async def test_restore_starts_from_a_handed_over_screen_only_if_the_log_holds_its_seq() -> None:
    log = OutputLog(4096, start_seq=10_000, held=b"z" * 100)
    renderer = make(log)
    renderer.restore("\x1b[Hrestored", 10_100)
    assert renderer.rendered_seq == 10_100
    assert (await renderer.inspect(screen_text(renderer)))[0] == "restored"

    gone = make(OutputLog(4096, start_seq=10_000, held=b"z" * 100))
    gone.restore("\x1b[Hrestored", 500)  # before the log's start: ignored
    assert gone.rendered_seq == 10_000
    assert (await gone.inspect(screen_text(gone)))[0] == "z" * 40
