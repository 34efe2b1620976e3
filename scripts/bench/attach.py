"""Row 2: attaching cold (a snapshot) and hot (an exact, empty replay)."""

from __future__ import annotations

import sys

import anyio

from bench.common import (
    SCROLLED,
    Bench,
    plain_connection,
    plain_request,
    progress,
    show_ms,
    spread,
)

# --------------------------------------------------------------------------- row 2


async def attach_latency(bench: Bench) -> None:
    control, sizes = bench.control, bench.sizes
    progress(f"row 2: {sizes.attaches} cold and hot attaches")
    session = await control.spawn([sys.executable, "-c", SCROLLED, "1100"], cols=120, rows=40)
    with anyio.fail_after(60):
        while True:
            if any("scrolled" in row for row in (await control.capture(session.id)).rows):
                break
            await anyio.sleep(0.1)
    held = len((await control.capture(session.id, scrollback=-1)).scrollback)
    cold: list[float] = []
    hot: list[float] = []
    snapshot_chars = 0
    async with plain_connection(bench.url) as ws:
        for _ in range(sizes.attaches):
            reply, took = await plain_request(ws, {"type": "attach", "session": session.id})
            assert reply["replay"] == "snapshot", reply["replay"]
            snapshot_chars = len(reply["snapshot"]["screen"]["ansi"])
            cold.append(took * 1000)
            await plain_request(ws, {"type": "detach"})
            since = {"type": "attach", "session": session.id, "since": reply["seq"]}
            reply, took = await plain_request(ws, since)
            assert reply["replay"] == "exact", reply["replay"]
            hot.append(took * 1000)
            await plain_request(ws, {"type": "detach"})
    await control.close(session.id)
    report = bench.report
    report.raw["2_attach"] = {
        "scrollback_lines": held,
        "snapshot_ansi_chars": snapshot_chars,
        "cold": spread(cold),
        "hot": spread(hot),
        "cold_samples_ms": cold,
        "hot_samples_ms": hot,
    }
    report.add(
        "2a",
        f"cold attach, idle 120x40 session with {held} lines of scrollback "
        "(attach to attached with its snapshot)",
        f"{show_ms(spread(cold))}; snapshot {snapshot_chars / 1000:.0f} k chars",
        "p99 ≤ 20 ms",
        spread(cold)["p99"] <= 20,
    )
    report.add("2b", "hot attach to it with since (exact replay)", show_ms(spread(hot)), "-")
