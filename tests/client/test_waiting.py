"""``ptyvisor wait``'s engine (client/waiting.py) against a real server and real
programs: a condition that comes to hold, one that no longer can once the program
has exited (at once, not at the deadline), a deadline, quietness measured from the
last output, and a session closed under the waiter."""

from __future__ import annotations

import re
import time

import anyio
import anyio.lowlevel
import pytest

from ptyvisor.client.client import Client
from ptyvisor.client.waiting import Condition, Outcome, matches, wait
from ptyvisor.errors import SessionVanished

from ..conftest import TOKEN, RunningServer, poll

pytestmark = pytest.mark.anyio


async def waited(
    server: RunningServer, session: str, condition: Condition, seconds: float
) -> Outcome:
    async with Client.connect(server.url, TOKEN) as waiter:
        return await wait(waiter, session, condition, seconds=seconds)


async def test_a_line_that_comes_to_match(server: RunningServer, client: Client) -> None:
    session = (await client.spawn(["sh", "-c", 'read x; echo "got $x"; sleep 600'])).id
    result: list[Outcome] = []
    async with anyio.create_task_group() as tg:

        async def waiting() -> None:
            condition = Condition(text=re.compile(r"^got [a-z]+$"))
            result.append(await waited(server, session, condition, 60))

        tg.start_soon(waiting)
        await client.attach(session)
        await client.send_input("answer\r")
    assert result == ["holds"]
    assert "got answer" in "\n".join((await client.capture(session)).rows)


async def test_an_exited_program_that_never_showed_it_cannot_hold(
    server: RunningServer, client: Client
) -> None:
    session = (await client.spawn(["sh", "-c", "echo finished"])).id
    started = time.monotonic()
    assert await waited(server, session, Condition(text=re.compile("never")), 60) == "cannot"
    assert time.monotonic() - started < 30, "at once, not at the deadline"
    assert await waited(server, session, Condition(text=re.compile("fini")), 60) == "holds"
    assert await waited(server, session, Condition(exited=True), 60) == "holds"


async def test_a_running_program_times_out(server: RunningServer, client: Client) -> None:
    session = (await client.spawn(["sleep", "600"])).id
    assert await waited(server, session, Condition(exited=True), 0.3) == "timeout"


async def test_quiet_counts_from_the_last_output(server: RunningServer, client: Client) -> None:
    script = "for i in $(seq 30); do echo tick $i; sleep 0.05; done; echo end; sleep 600"
    session = (await client.spawn(["sh", "-c", script])).id
    assert await waited(server, session, Condition(quiet=1.0), 60) == "holds"
    rows = (await client.capture(session)).rows
    assert any(row.startswith("end") for row in rows), "it was still talking"


async def test_a_session_closed_under_the_waiter_vanishes(
    server: RunningServer, client: Client
) -> None:
    session = (await client.spawn(["sleep", "600"])).id

    async def watched() -> bool:
        (summary,) = await client.list()
        return summary.clients > 0

    vanished = anyio.Event()

    async def waiting() -> None:
        with pytest.raises(SessionVanished):
            await waited(server, session, Condition(quiet=600), 60)  # never holds
        vanished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiting)
        await poll(watched)  # the waiter is attached
        await client.close(session)
    assert vanished.is_set()


def test_a_pattern_matches_within_one_row() -> None:
    rows = ["first half", "second half"]
    assert matches(re.compile("^second"), rows)
    assert not matches(re.compile("half\nsecond"), rows)
    assert not matches(re.compile("half second"), rows)
    assert Condition().empty and not Condition(exited=True).empty
