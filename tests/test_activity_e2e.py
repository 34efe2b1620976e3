"""Activity end to end: a real shell script under a real PTY calls the real
``ptyvisor emit``; a real WebSocket client sees typed state and clean output."""

from __future__ import annotations

import base64
import json
import sys

import pytest

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.client.client import Client, Output
from ptyvisor.wire.protocol import ActivityChanged, ProcessChanged

from .conftest import PTYVISOR_BIN, RunningServer, child_env, output_of, poll, until

pytestmark = pytest.mark.anyio


def exited(event: object) -> bool:
    return isinstance(event, ProcessChanged) and event.process.state == "exited"


async def test_shell_script_drives_activity(server: RunningServer, client: Client) -> None:
    script = f"""
        read go
        echo before
        {PTYVISOR_BIN} emit activity starting --agent script
        {PTYVISOR_BIN} emit activity working --reason 'compiling'
        echo middle
        {PTYVISOR_BIN} emit activity waiting
        echo after
        read line
        exit 0
    """
    session = await client.spawn(["sh", "-c", script], env=child_env())
    await client.attach(session.id, since=0)
    await client.send_input(b"go\r")  # its reports once this client sees them (a busy CI)
    events = await until(
        client,
        lambda e: isinstance(e, ActivityChanged) and e.activity.phase is ActivityPhase.WAITING,
    )
    phases = [e.activity for e in events if isinstance(e, ActivityChanged)]
    assert [a.phase for a in phases] == ["starting", "working", "waiting"]
    assert phases[1].reason == "compiling"
    assert all(a.agent == "script" for a in phases), "agent is sticky once reported"

    listed = {s.id: s for s in await client.list()}
    assert listed[session.id].activity.phase is ActivityPhase.WAITING
    assert listed[session.id].process.state == "running"

    await client.send_input(b"go\r")
    events += await until(client, exited)
    output = output_of(events)
    assert b"before" in output and b"middle" in output and b"after" in output
    assert b"7733" not in output, "frames must never reach a client"
    final = [e for e in events if isinstance(e, ActivityChanged)][-1]
    assert final.activity.phase is ActivityPhase.STOPPED

    stats = await client.stats(session.id)
    assert stats.frames_applied == 3
    assert stats.frames_rejected == {}


def frame(session: str, nonce: str, payload: bytes, version: str = "1") -> str:
    """A frame as a shell ``printf`` argument (octal escapes for ESC and BEL)."""
    encoded = base64.urlsafe_b64encode(payload).rstrip(b"=").decode()
    return f"\\033]7733;ptyvisor;{version};{session};{nonce};{encoded}\\007"


TWO_REPORTS_AT_ONCE = """
import os, sys, time
from ptyvisor.wire.frame_encoding import encode_frame
sys.stdin.readline()
env = os.environ
def frame(phase, **more):
    payload = {"type": "activity", "phase": phase, "at": time.time_ns() // 1_000_000, **more}
    return encode_frame(env["PTYVISOR_SESSION"], env["PTYVISOR_NONCE"], payload)
os.write(1, frame("working", reason="one write", agent="script") + frame("waiting"))
sys.stdin.readline()
"""


async def test_every_report_of_one_read_is_a_transition(
    server: RunningServer, client: Client
) -> None:
    """Two reports the server reads at once (a busy machine joins a hook's Working and
    the next hook's Ready into one read) are two transitions, each as it was: for
    attached clients, and in the timeline. Each used to be published as the tracker
    stood after the whole read, and the Working was lost."""
    session = await client.spawn([sys.executable, "-c", TWO_REPORTS_AT_ONCE], env=child_env())
    await client.attach(session.id, since=0)
    await client.send_input(b"go\r")
    events = await until(
        client,
        lambda e: isinstance(e, ActivityChanged) and e.activity.phase is ActivityPhase.WAITING,
    )
    changes = [e.activity for e in events if isinstance(e, ActivityChanged)]
    assert [(a.phase.value, a.reason) for a in changes] == [
        ("working", "one write"),
        ("waiting", None),
    ]

    async def recorded() -> list[str]:
        transitions = (await client.timeline(session.id)).transitions
        return [t.phase.value for t in transitions]

    assert (await poll(recorded))[-2:] == ["working", "waiting"]
    await client.send_input(b"go\r")
    await until(client, exited)


async def test_spoofed_frames_change_nothing(server: RunningServer, client: Client) -> None:
    good = json.dumps({"type": "activity", "phase": "working", "at": 1}).encode()
    wrong_nonce = "0" * 32
    cases = {
        "nonce": frame("$PTYVISOR_SESSION", wrong_nonce, good),
        "session": frame("someone-else", "$PTYVISOR_NONCE", good),
        "version": frame("$PTYVISOR_SESSION", "$PTYVISOR_NONCE", good, version="2"),
        "encoding": frame("$PTYVISOR_SESSION", "$PTYVISOR_NONCE", b"{not json"),
        "invalid": frame(
            "$PTYVISOR_SESSION",
            "$PTYVISOR_NONCE",
            json.dumps({"type": "activity", "phase": "dancing", "at": 1}).encode(),
        ),
        "unknown type": frame(
            "$PTYVISOR_SESSION", "$PTYVISOR_NONCE", json.dumps({"type": "x", "at": 1}).encode()
        ),
    }
    lines = [f'printf "A{i}{frame_text}B{i}\\n"' for i, frame_text in enumerate(cases.values())]
    # Bad base64 and an unterminated frame (aborted by the next escape sequence).
    lines.append('printf "C0\\033]7733;ptyvisor;1;$PTYVISOR_SESSION;$PTYVISOR_NONCE;@@@\\007D0\\n"')
    lines.append('printf "C1\\033]7733;ptyvisor;1;$PTYVISOR_SESSION;\\033[1mD1\\033[0m\\n"')
    # An oversized frame: 70 000 payload bytes, never terminated within the limit.
    # Its tail passes through as the program's own output, so it ends with ST, which
    # alone is nothing to a terminal: with BEL, that would be a bell (needs_input).
    lines.append(
        'printf "C2\\033]7733;ptyvisor;1;$PTYVISOR_SESSION;$PTYVISOR_NONCE;"; '
        "head -c 70000 /dev/zero | tr '\\0' 'A'; printf '\\033\\\\D2\\n'"
    )
    lines.append("echo done; read line")
    session = await client.spawn(["sh", "-c", "\n".join(lines)], env=child_env())
    await client.attach(session.id, since=0)
    events = await until(client, lambda e: isinstance(e, Output) and b"done" in e.data)
    output = output_of(events).replace(b"\r\n", b"\n")
    assert not [e for e in events if isinstance(e, ActivityChanged)]
    for i in range(len(cases)):
        assert f"A{i}B{i}\n".encode() in output, output
    assert b"C0D0\n" in output
    assert b"C1\x1b[1mD1\x1b[0m\n" in output, "an aborted frame must not swallow what follows"
    assert b"\x1b]7733" not in output
    assert b"D2\n" in output
    await client.snapshot(session.id)  # the headless terminal has seen it all too
    listed = {s.id: s for s in await client.list()}
    assert listed[session.id].activity.phase is ActivityPhase.UNAVAILABLE
    stats = await client.stats(session.id)
    assert stats.frames_applied == 0
    assert stats.frames_rejected["nonce"] == 1
    assert stats.frames_rejected["session"] == 1
    assert stats.frames_rejected["version"] == 1
    assert stats.frames_rejected["encoding"] == 2
    assert stats.frames_rejected["invalid"] == 2
    assert stats.frames_rejected["unterminated"] == 2
    await client.close(session.id)


async def test_nonce_never_reaches_clients(server: RunningServer, client: Client) -> None:
    session = await client.spawn(
        ["sh", "-c", 'printf "%s\\n" "$PTYVISOR_NONCE" > nonce.txt; echo ok; read x'],
        cwd=str(server.config.state_dir.parent),
        env=child_env(),
    )
    await client.attach(session.id, since=0)
    events = await until(client, lambda e: isinstance(e, Output) and b"ok" in e.data)
    nonce = (server.config.state_dir.parent / "nonce.txt").read_text().strip()
    assert len(nonce) == 32
    snapshot = await client.snapshot(session.id)
    stats = await client.stats(session.id)
    everything = (
        snapshot.model_dump_json()
        + stats.model_dump_json()
        + json.dumps([s.model_dump(mode="json") for s in await client.list()])
        + repr(events)
    )
    assert nonce not in everything
    await client.close(session.id)


async def test_an_activity_event_is_sent_only_on_a_real_change(
    server: RunningServer, client: Client
) -> None:
    """A repeated report (an agent saying `waiting` again at its first prompt) is no
    event; one that changes something besides the phase says what in ``changed``;
    and an agent that said `stopped` before exiting gets one `stopped`, not two. The
    script waits for a line, so that its first report comes once the client is
    attached (before, it is no event to this client: CI on a busy machine)."""
    script = f"""
        read go
        {PTYVISOR_BIN} emit activity waiting --agent script
        {PTYVISOR_BIN} emit activity waiting --agent script
        {PTYVISOR_BIN} emit activity waiting --agent script --reason 'first prompt'
        {PTYVISOR_BIN} emit activity stopped
        echo done
    """
    session = await client.spawn(["sh", "-c", script], env=child_env())
    await client.attach(session.id, since=0)
    await client.send_input(b"go\r")
    # The exit's own activity change, if any, is sent before the process change.
    events = await until(client, exited)
    changes = [e for e in events if isinstance(e, ActivityChanged)]
    assert [(c.activity.phase.value, c.changed) for c in changes] == [
        ("waiting", ["phase", "since", "agent", "source"]),
        ("waiting", ["reason"]),
        ("stopped", ["phase", "since", "reason"]),
    ]
