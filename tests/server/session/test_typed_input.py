"""Input on its way to a program (server/session/typed_input.py): in order, bounded,
and an Enter held back for an agent that loses one typed too soon after its keys
(Gemini CLI: ``agents.launch.SUBMIT_GAP``). The queue alone, then a real session."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from ptyvisor.agents.launch import SUBMIT_GAP
from ptyvisor.client.client import Client, Output
from ptyvisor.server.session.typed_input import SETTLE_LIMIT, TypedInput
from tests.timeouts import scaled

from ...test_ready_screen import stand_in

GAP = 0.1


def drained(
    queue: TypedInput, now: float, *, draws: float | None = 1e-9
) -> list[tuple[float, bytes]]:
    """Everything the queue gives, and when (to the microsecond), running its clock
    forward as it asks; the program draws what it gets ``draws`` seconds after each
    write (at once, by default; None: never)."""
    out = []
    while (due := queue.next(now)) is not None:
        if isinstance(due, float):
            now += due
            continue
        out.append((round(now, 6), due))
        if draws is not None:
            queue.output_seen(now + draws)
    return out


def test_without_a_gap_input_goes_as_it_came() -> None:
    queue = TypedInput(limit=100)
    assert queue.add(b"hello\r", 0.0) and queue.add(b"\r", 0.01)
    assert drained(queue, 0.0) == [(0.0, b"hello\r\r")]


def test_an_enter_typed_with_its_text_goes_a_gap_after_it() -> None:
    queue = TypedInput(limit=100, gap=GAP)
    queue.add(b"hello\r", 5.0)
    assert drained(queue, 5.0) == [(5.0, b"hello"), (5.0 + GAP, b"\r")]


def test_an_enter_soon_after_keys_waits_and_a_lone_one_does_not() -> None:
    queue = TypedInput(limit=100, gap=GAP)
    queue.add(b"hi", 1.0)
    queue.add(b"\r", 1.03)  # 30 ms later: Gemini would take it for a newline
    assert drained(queue, 1.03) == [(1.03, b"hi"), (1.13, b"\r")]  # a gap after it showed
    queue.add(b"\r", 9.0)  # long after: as it came
    assert drained(queue, 9.0) == [(9.0, b"\r")]


def test_what_is_typed_after_a_held_enter_waits_behind_it() -> None:
    queue = TypedInput(limit=100, gap=GAP)
    queue.add(b"one\r", 0.0)
    queue.add(b"x", 0.01)
    queue.add(b"\x1b[200~two\rlines\x1b[201~", 0.02)  # a paste's own line break stays
    assert drained(queue, 0.02) == [
        (0.02, b"one"),
        (0.12, b"\rx\x1b[200~two\rlines\x1b[201~"),  # a gap after "one" showed
    ]


def test_a_held_enter_waits_until_the_program_has_drawn_the_text() -> None:
    """On a busy machine the program may read the text late: the Enter goes once it
    has drawn it and been quiet for the gap, not a fixed time after the text."""
    queue = TypedInput(limit=100, gap=GAP)
    queue.add(b"hello\r", 0.0)
    sent = drained(queue, 0.0, draws=1.5)  # it takes 1.5 s to show the text
    assert [data for _, data in sent] == [b"hello", b"\r"]
    assert sent[1][0] == pytest.approx(1.5 + GAP, abs=GAP / 2 + 1e-9)


def test_a_program_that_never_draws_or_never_stops_gets_its_enter_anyway() -> None:
    queue = TypedInput(limit=100, gap=GAP)
    queue.add(b"secret\r", 0.0)
    assert drained(queue, 0.0, draws=None)[1][0] == pytest.approx(SETTLE_LIMIT, abs=GAP)
    queue = TypedInput(limit=100, gap=GAP)
    queue.add(b"busy\r", 0.0)
    assert queue.next(0.0) == b"busy"
    now = 0.0
    while (due := queue.next(now)) != b"\r":
        assert isinstance(due, float)
        now += min(due, GAP / 4)
        queue.output_seen(now)  # a spinner: never quiet
    assert now == pytest.approx(SETTLE_LIMIT, abs=GAP)


def test_the_queue_is_bounded_and_takes_back_what_was_not_written() -> None:
    queue = TypedInput(limit=8, gap=GAP)
    assert queue.add(b"12345678", 0.0) and not queue.add(b"9", 0.0)
    assert queue.next(0.0) == b"12345678"
    queue.put_back(b"5678")
    assert len(queue) == 4 and queue.next(0.0) == b"5678"


READS = """
import os, time, termios, tty
tty.setraw(0)
w("ready\\r\\n"); sys.stdout.flush()
while True:
    data = os.read(0, 1024)
    w(json.dumps([time.monotonic(), data.decode()]) + "\\r\\n"); sys.stdout.flush()
"""


@pytest.mark.anyio
@pytest.mark.parametrize("agent", ["gemini-cli", None])
async def test_through_a_session_the_enter_comes_on_its_own_for_gemini(
    client: Client, tmp_path: Path, agent: str | None
) -> None:
    env = stand_in(tmp_path, "gemini", "import json\n" + READS)
    argv = [] if agent else [str(tmp_path / "bin" / "gemini")]
    session = await client.spawn(argv, agent=agent, env=env)
    await client.attach(session.id, since=0)
    seen = b""
    with anyio.fail_after(scaled(15)):
        while b"ready" not in seen:
            event = await client.next_event()
            if isinstance(event, Output):
                seen += event.data
        await client.send_keys(session.id, "hello", "Enter")
        reads: list[tuple[float, str]] = []
        while "".join(data for _, data in reads) != "hello\r":
            event = await client.next_event()
            if isinstance(event, Output):
                seen += event.data
                lines = seen.decode().split("\r\n")
                reads = [tuple(json.loads(line)) for line in lines if line.startswith("[")]
    if agent is None:
        assert [data for _, data in reads] == ["hello\r"]  # as it was typed
    else:
        (text_at, text), (enter_at, enter) = reads
        assert (text, enter) == ("hello", "\r")
        assert enter_at - text_at >= SUBMIT_GAP[agent] * 0.9
    await client.close(session.id)
