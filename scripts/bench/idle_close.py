"""Rows 6 and 7: 200 sessions idle, then closed at once, the echo meanwhile."""

from __future__ import annotations

import anyio

from bench.common import (
    Bench,
    cpu_percent,
    echo_during,
    fd_count,
    progress,
    show_ms,
    spread,
    worker_command,
    worker_env,
)
from bench_keeper import rss_kib

# --------------------------------------------------------------------------- rows 6 and 7


async def idle_then_close(bench: Bench) -> None:
    control, sizes, report = bench.control, bench.sizes, bench.report
    worker, keeper = bench.worker, bench.keeper
    calm_seconds = sizes.idle_seconds / 3
    progress(f"row 7: server CPU with no session ({calm_seconds:.0f} s)")
    calm = await cpu_percent([worker, keeper], calm_seconds)
    before = {pid: (rss_kib(pid), fd_count(pid)) for pid in (worker, keeper)}
    progress(f"row 7: spawning {sizes.sessions} idle sessions")
    spawned = [await control.spawn(["sleep", "3600"]) for _ in range(sizes.sessions)]
    await anyio.sleep(2)  # their start-up done
    after = {pid: (rss_kib(pid), fd_count(pid)) for pid in (worker, keeper)}
    progress(f"row 7: server CPU with {sizes.sessions} idle sessions ({sizes.idle_seconds:.0f} s)")
    busy = await cpu_percent([worker, keeper], sizes.idle_seconds)

    def added(pid: int) -> tuple[float, float]:
        """RSS (KiB) and descriptors each session added to ``pid``."""
        return (
            (after[pid][0] - before[pid][0]) / sizes.sessions,
            (after[pid][1] - before[pid][1]) / sizes.sessions,
        )

    report.raw["7_idle"] = {
        "cpu_percent_no_session": {"server": calm[0], "keeper": calm[1]},
        "cpu_percent_idle_sessions": {"server": busy[0], "keeper": busy[1]},
        "rss_kib_fds_before": {"server": before[worker], "keeper": before[keeper]},
        "rss_kib_fds_after": {"server": after[worker], "keeper": after[keeper]},
    }
    report.add(
        "7a",
        f"{sizes.sessions} idle sessions: server CPU over {sizes.idle_seconds:.0f} s, "
        "% of one core",
        f"{busy[0]:.3f} % ({busy[0] * sizes.idle_seconds / 100:.2f} s of CPU; "
        f"{calm[0]:.3f} % with no session); keeper {busy[1]:.3f} %",
        "≤ 0.5 %",
        busy[0] <= 0.5,
    )
    server_rss, server_fds = added(worker)
    keeper_rss, keeper_fds = added(keeper)
    report.add(
        "7b",
        "per idle session: RSS and file descriptors added",
        f"server {server_rss:.0f} KiB, {server_fds:.1f} fds "
        f"(now {after[worker][0] / 1024:.0f} MiB, {after[worker][1]} fds); "
        f"keeper {keeper_rss:.0f} KiB, {keeper_fds:.1f} fds",
        "-",
    )

    progress(f"row 6: closing {sizes.sessions} sessions")
    # The closer is a process of its own, as another user's client would be: in
    # this one, its 200 requests and replies would delay the echo client's reads.
    closer = await anyio.open_process(
        worker_command("close", bench.url, *[session.id for session in spawned]),
        stderr=None,
        env=worker_env(),
    )
    samples = await echo_during(bench.echo, closer.wait())
    assert closer.stdout is not None
    took = float((await closer.stdout.receive()).decode())
    still = len(await control.list()) - 1  # the echo's session stays
    figures = spread(samples)
    report.raw["6_close"] = {
        "seconds": took,
        "sessions_still_listed": still,
        "echo": figures,
        "echo_samples_ms": samples,
    }
    report.add(
        "6a",
        f"closing {sizes.sessions} sessions (close, concurrently): total time",
        f"{took:.2f} s ({still} of them still listed after)",
        "≤ 2 s",
        took <= 2 and still == 0,
    )
    report.add(
        "6b",
        "keystroke echo of another session meanwhile",
        show_ms(figures),
        "p99 ≤ 50 ms",
        figures["p99"] <= 50,
    )
