"""A client never sees a wrong screen or a wrong order: a cold attach in the middle of an
escape sequence or a UTF-8 character draws what the program drew; the exit comes after
the program's last output; a lagging client gets its snapshot before the exit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect

from ptyvisor.client.client import Client, Output
from ptyvisor.config import ServerConfig
from ptyvisor.terminal import HeadlessTerminal
from ptyvisor.wire.protocol import (
    SERVER_MESSAGE,
    Attached,
    ProcessChanged,
    SnapshotMessage,
)
from tests.timeouts import scaled

from .conftest import TOKEN, RunningServer, output_until, until

pytestmark = pytest.mark.anyio

STAGES = [b"plain \x1b[3", b"1mRED\x1b[0m and caf\xc3", b"\xa9 done \xe2\x82", b"\xac!"]
"""Output cut inside an SGR sequence, then inside a two- and a three-byte character."""
STAGED = f"""
import os, sys
for stage in {STAGES!r}:
    os.write(1, stage)
    sys.stdin.readline()
"""


def cells(terminal: HeadlessTerminal) -> list[list[tuple[str, str, bool]]]:
    return [
        [(cell.data, cell.fg, cell.bold) for cell in terminal.line(row)]
        for row in range(terminal.rows)
    ]


@pytest.mark.parametrize("pause", [0, 1, 2])
async def test_cold_attach_mid_sequence_shows_the_programs_screen(
    client: Client, server: RunningServer, tmp_path: Path, pause: int
) -> None:
    """The program pauses after stage ``pause``; a client attaching then draws the
    snapshot, then the live bytes, as the README says: it must show what the program
    drew (the attach's snapshot carries the unfinished sequence, and its stream starts
    before the unfinished character)."""
    script = tmp_path / "staged.py"
    script.write_text(STAGED)
    session = await client.spawn(
        ["sh", "-c", f"stty -echo; exec {sys.executable} {script}"], cols=40, rows=5
    )
    await client.attach(session.id, since=0)
    seen = b""
    for stage in range(pause + 1):
        if stage:
            await client.input(session.id, "\n")
        seen += await output_until(client, STAGES[stage])
    async with Client.connect(server.url, TOKEN) as late:
        attached = await late.attach(session.id)
        assert attached.snapshot is not None and attached.replay == "snapshot"
        drawn = HeadlessTerminal(40, 5)
        drawn.feed(attached.snapshot.screen.ansi.encode())
        for _ in STAGES[pause + 1 :]:
            await client.input(session.id, "\n")
        drawn.feed(await output_until(late, b"\xac!"))
    reference = HeadlessTerminal(40, 5)
    reference.feed(b"".join(STAGES))
    assert reference.display[0].rstrip() == "plain RED and café done €!"
    assert reference.line(0)[6].fg == "red"
    assert [line.rstrip() for line in drawn.display] == [
        line.rstrip() for line in reference.display
    ]
    assert cells(drawn) == cells(reference)


async def test_exit_comes_after_the_last_output(client: Client) -> None:
    """A child that keeps the terminal open (no end-of-file for the reader) must not let
    ``exited`` overtake the program's last bytes, here leaving the alternate screen."""
    script = (
        "read go; sleep 30 </dev/null & "
        "printf '\\033[?1049halt screen'; printf '\\033[?1049lfinal words\\r\\n'; exit 3"
    )
    for _ in range(10):
        session = await client.spawn(["sh", "-c", script], cols=40, rows=5)
        await client.attach(session.id, since=0)
        await client.send_input("\n")
        events = await until(
            client, lambda e: isinstance(e, ProcessChanged) and e.process.state == "exited"
        )
        output = b"".join(e.data for e in events if isinstance(e, Output))
        assert output.endswith(b"final words\r\r\n"), output
        snapshot = await client.snapshot(session.id)
        assert not snapshot.screen.modes.alternate_screen
        assert snapshot.session.process.state == "exited"
        terminal = HeadlessTerminal(40, 5)
        terminal.feed(snapshot.screen.ansi.encode())
        assert "final words" in "\n".join(terminal.display)
        await client.close(session.id)


async def test_a_lagging_client_gets_its_snapshot_before_the_exit(
    server: RunningServer, server_config: ServerConfig, client: Client, tmp_path: Path
) -> None:
    server_config.client_buffer = 64 * 1024
    flood = "read go; head -c 4000000 /dev/zero | tr '\\0' x; printf '\\r\\nTHE END\\r\\n'; read x"
    session = await client.spawn(["sh", "-c", flood], cols=80, rows=10)
    # A client that stops reading (max_queue=1): its queue overflows, it lags.
    slow = await connect(
        server.url,
        additional_headers={"Authorization": f"Bearer {TOKEN}"},
        max_queue=1,
        open_timeout=10,
    )
    await slow.send(json.dumps({"type": "attach", "session": session.id, "since": 0}))
    kinds: list[str] = []
    while "attached" not in kinds:
        kinds.append(SERVER_MESSAGE.validate_json(await slow.recv()).type)
    await client.attach(session.id)
    await client.input(session.id, "\n")  # both attached: the flood may start
    await output_until(client, b"THE END", wait=60)
    await client.input(session.id, "\n")
    await until(client, lambda e: isinstance(e, ProcessChanged) and e.process.state == "exited")
    screen: HeadlessTerminal | None = None  # the last lagging snapshot, and output since
    with anyio.fail_after(scaled(60)):
        while "process" not in kinds:
            message = await slow.recv()
            if isinstance(message, bytes):
                kinds.append("output")
                if screen is not None:
                    screen.feed(message)
                continue
            parsed = SERVER_MESSAGE.validate_json(message)
            kinds.append(parsed.type)
            if isinstance(parsed, SnapshotMessage) and parsed.reason == "lagging":
                screen = HeadlessTerminal(80, 10)
                screen.feed(parsed.snapshot.screen.ansi.encode())
            assert not isinstance(parsed, Attached) or parsed.replay == "exact"
    await slow.close()
    assert screen is not None, kinds
    assert kinds.index("snapshot") < kinds.index("process"), kinds
    # Everything the program wrote reached this client before its exit did.
    assert "THE END" in "\n".join(screen.display), _runs(kinds)


def _runs(kinds: list[str]) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for kind in kinds:
        if runs and runs[-1][0] == kind:
            runs[-1] = (kind, runs[-1][1] + 1)
        else:
            runs.append((kind, 1))
    return runs
