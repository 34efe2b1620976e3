"""Row 1: a keystroke's echo, with nothing else running and during a flood."""

from __future__ import annotations

import contextlib
import json
import time

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from bench.common import (
    Bench,
    echo_during,
    progress,
    show_ms,
    spread,
    until_exited,
    worker_command,
    worker_env,
)

# --------------------------------------------------------------------------- row 1


async def echo_under_flood(bench: Bench) -> None:
    control, echo, sizes, report = bench.control, bench.echo, bench.sizes, bench.report
    progress(f"row 1: echo with no load ({sizes.echo_seconds:.0f} s)")
    baseline = await echo_during(echo, anyio.sleep(sizes.echo_seconds))
    flood = await control.spawn(
        ["sh", "-c", f"read go; base64 /dev/urandom | head -c {sizes.flood_mib}M"],
        cols=120,
        rows=40,
    )
    viewer = await anyio.open_process(
        worker_command("drain", bench.url, flood.id), stderr=None, env=worker_env()
    )
    try:
        assert viewer.stdout is not None
        lines = BufferedByteReceiveStream(viewer.stdout)
        with anyio.fail_after(60):
            await lines.receive_until(b"\n", 1024)
        progress(f"row 1: echo while another session floods {sizes.flood_mib} MiB of base64")
        started = time.perf_counter()
        await control.input(flood.id, "go\n")
        flooded = await echo_during(echo, until_exited(control, flood.id))
        took = time.perf_counter() - started
        output = (await control.stats(flood.id)).output_bytes
        with anyio.fail_after(60):
            seen = json.loads(await lines.receive_until(b"\n", 1024))
    finally:
        with contextlib.suppress(ProcessLookupError):
            viewer.kill()
        await viewer.aclose()
    await control.close(flood.id)
    calm, busy = spread(baseline), spread(flooded)
    report.raw["1_echo"] = {
        "baseline": calm,
        "flood": busy,
        "flood_seconds": took,
        "flood_output_bytes": output,
        "viewer": seen,
        "baseline_samples_ms": baseline,
        "flood_samples_ms": flooded,
    }
    report.add(
        "1a",
        f"keystroke echo while another session floods {sizes.flood_mib} MiB of base64 "
        "(one viewer on it)",
        f"{show_ms(busy)}; p50 {busy['p50'] / calm['p50']:.1f}x, p99 "
        f"{busy['p99'] / calm['p99']:.1f}x the baseline's; the flood: "
        f"{output / 1e6:.0f} MB in {took:.1f} s, its viewer got {seen['snapshots']} "
        "lagging snapshots",
        "p99 ≤ 20 ms",
        busy["p99"] <= 20,
    )
    report.add("1b", "keystroke echo, nothing else running (baseline)", show_ms(calm), "-")
