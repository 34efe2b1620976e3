"""Signals from any program: notifications, bells, progress and shell-integration marks
in the output become inferred activity (``source: terminal``), pass through to clients
unchanged, and never outrank an extension's frames.

Parser units first (no PTY), then end to end through a real server: an interactive
bash with OSC 133 integration, a program emitting each notification kind, and a
session where an extension's frames and the terminal's signals both arrive."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.agents.activity import ActivityTracker
from ptyvisor.cli.formatting import format_table
from ptyvisor.client.client import Client, Event, Output
from ptyvisor.terminal import (
    MAX_SIGNALS,
    SIGNAL_TEXT_CHARS,
    HeadlessTerminal,
    TerminalSignal,
)
from ptyvisor.wire.protocol import ActivityChanged, ProcessChanged

from .conftest import PTYVISOR_BIN, RunningServer, child_env, output_of, until

# ---------------------------------------------------------------------- the parser


def signals_of(*feeds: bytes) -> list[TerminalSignal]:
    terminal = HeadlessTerminal(80, 24)
    for data in feeds:
        terminal.feed(data)
    return terminal.take_signals()


def test_each_kind_is_noticed() -> None:
    assert signals_of(
        b"\x1b]9;Build finished\x07",
        b"\x1b]9;4;1;42\x1b\\",
        b"\x1b]9;4;0\x07",
        b"\x1b]9;4;3;\x07",
        b"\x1b]777;notify;Tests;all green\x07",
        b"\x1b]99;i=1:d=1;kitty says hi\x1b\\",
        b"\x1b]133;A\x07\x1b]133;B\x07\x1b]133;C\x07\x1b]133;D;2\x07\x1b]133;D\x07",
        b"ding\x07",
    ) == [
        TerminalSignal("notification", text="Build finished"),
        TerminalSignal("progress", state=1, value=42),
        TerminalSignal("progress", state=0),
        TerminalSignal("progress", state=3),
        TerminalSignal("notification", text="Tests: all green"),
        TerminalSignal("notification", text="kitty says hi"),
        TerminalSignal("prompt"),
        TerminalSignal("prompt"),
        TerminalSignal("command"),
        TerminalSignal("done", value=2),
        TerminalSignal("done"),
        TerminalSignal("bell"),
    ]


def test_a_signal_split_across_feeds_is_noticed_once() -> None:
    data = b"\x1b]777;notify;T;B\x07\x1b]133;D;1\x1b\\\x07"
    for cut in range(1, len(data)):
        assert signals_of(data[:cut], data[cut:]) == [
            TerminalSignal("notification", text="T: B"),
            TerminalSignal("done", value=1),
            TerminalSignal("bell"),
        ], cut


def test_a_bel_ending_a_string_is_no_bell() -> None:
    assert signals_of(b"\x1b]0;title\x07\x1b]8;;http://x\x07link\x1b]8;;\x07") == []
    assert signals_of(b"\x1b]2;ti", b"tle\x07") == []
    # A BEL inside an escape sequence is executed, as a VT does.
    assert signals_of(b"\x1b[\x07m") == [TerminalSignal("bell")]


def test_what_is_not_a_signal() -> None:
    assert (
        signals_of(
            b"\x1b]9;9;/home/me\x07",  # ConEmu: working directory
            b"\x1b]9;4;7;10\x07",  # no such progress state
            b"\x1b]777;preexec\x07",
            b"\x1b]99;i=1:p=?;\x07",  # a kitty query: no text
            b"\x1b]133;P;k=i\x07",
            b"\x1b]9;cancelled\x18",  # CAN cancels the string
            b"\x1bP1$r\x07q\x1b\\",  # a DCS payload's BEL is payload
        )
        == []
    )


def test_signals_are_bounded() -> None:
    terminal = HeadlessTerminal(80, 24)
    terminal.feed(b"\x07" * (MAX_SIGNALS + 10) + b"\x1b]9;last\x07")
    taken = terminal.take_signals()
    assert len(taken) == MAX_SIGNALS
    assert taken[-1] == TerminalSignal("notification", text="last"), "the newest are kept"
    assert terminal.take_signals() == []

    long = "x" * 3000
    terminal.feed(f"\x1b]9;a\tb\x01c {long}\x07".encode())
    [signal] = terminal.take_signals()
    assert signal.text == ("a b c " + long)[:SIGNAL_TEXT_CHARS]
    terminal.feed(b"\x1b]9;4;1;250\x07\x1b]9;4;1;99999999999\x07")
    assert [s.value for s in terminal.take_signals()] == [100, None]


def test_skipped_bytes_give_no_signals() -> None:
    terminal = HeadlessTerminal(80, 24)
    terminal.skip(b"\x07\x1b]9;lost\x07\x1b]133;A\x07")
    assert terminal.take_signals() == []


# ---------------------------------------------------------------------- end to end


def activity_is(
    phase: str, reason: str | None, source: str = "terminal"
) -> Callable[[Event], bool]:
    def check(event: Event) -> bool:
        if not isinstance(event, ActivityChanged):
            return False
        a = event.activity
        return (a.phase.value, a.reason, a.source) == (phase, reason, source)

    return check


def exited(event: Event) -> bool:
    return isinstance(event, ProcessChanged) and event.process.state == "exited"


RCFILE = r"""
PROMPT_COMMAND='printf "\033]133;D;%s\007\033]133;A\007" "$?"'
PS1='$ \[\033]133;B\007\]'
PS0=$'\033]133;C\007'
"""


@pytest.mark.anyio
async def test_a_shell_with_prompt_marks(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    rcfile = tmp_path / "rc"
    rcfile.write_text(RCFILE)
    env = child_env() | {"INPUTRC": "/dev/null", "HISTFILE": "/dev/null"}
    argv = ["bash", "--noprofile", "--rcfile", str(rcfile), "-i"]
    session = await client.spawn(argv, env=env)
    assert (session.activity.phase.value, session.activity.source) == ("unavailable", "process")
    await client.attach(session.id, since=0)
    events = await until(client, activity_is("waiting", "prompt"))

    # A command that runs until the test lets it end: working, then the prompt again.
    await client.send_input(b"read -r line\r")
    events += await until(client, activity_is("working", "command"))
    await client.send_input(b"go\r")
    events += await until(client, activity_is("waiting", "prompt"))
    summary = {s.id: s for s in await client.list()}[session.id]
    assert (summary.activity.phase.value, summary.activity.source) == ("waiting", "terminal")
    row = format_table([summary]).splitlines()[1]
    assert re.search(r"\s+running\s+Ready\?\s+\d+s\s+-\s+prompt\s", row), row

    # A failing command's status stays the reason through the prompt that follows.
    await client.send_input(b"false\r")
    events += await until(client, activity_is("waiting", "exited 1"))

    # A notification outlasts the prompt after it, until the user types.
    start = len(events)
    await client.send_input(rb"printf '\033]9;tests done\007'" + b"\r")
    events += await until(client, activity_is("needs_input", "tests done"))
    prompt = re.compile(rb"\x1b\]9;tests done\x07\x1b\]133;D;0\x07.*\x1b\]133;B\x07", re.S)
    while not prompt.search(output_of(events[start:])):
        events += await until(client, lambda e: isinstance(e, Output))
    await client.capture(session.id)  # the prompt's marks are rendered, and applied
    summary = {s.id: s for s in await client.list()}[session.id]
    assert (summary.activity.phase.value, summary.activity.reason) == ("needs_input", "tests done")

    await client.send_input(b"exit\r")
    events += await until(client, exited)
    changes = [e.activity for e in events if isinstance(e, ActivityChanged)]
    assert changes[-1].source == "process", "the exit is the process's"
    assert all(c.source == "terminal" for c in changes[:-1])
    assert all(e.pending_interaction is None for e in events if isinstance(e, ActivityChanged))
    output = output_of(events)
    for mark in (b"\x1b]133;A\x07", b"\x1b]133;B\x07", b"\x1b]133;C\x07", b"\x1b]133;D;1\x07"):
        assert mark in output, mark


NOTIFICATIONS: list[tuple[str, bytes, str, str | None]] = [
    # printf argument, the bytes a client must see, phase, reason
    (r"\033]9;Build finished\007", b"\x1b]9;Build finished\x07", "needs_input", "Build finished"),
    (r"\033]9;4;1;42\033\\", b"\x1b]9;4;1;42\x1b\\", "working", "42%"),
    (
        r"\033]777;notify;Tests;all green\007",
        b"\x1b]777;notify;Tests;all green\x07",
        "needs_input",
        "Tests: all green",
    ),
    (r"\033]9;4;0;0\007", b"\x1b]9;4;0;0\x07", "waiting", None),
    (
        r"\033]99;i=1:d=1;kitty says hi\033\\",
        b"\x1b]99;i=1:d=1;kitty says hi\x1b\\",
        "needs_input",
        "kitty says hi",
    ),
    (r"\033]9;4;3;\007", b"\x1b]9;4;3;\x07", "working", None),
    (r"ding\007", b"ding\x07", "needs_input", "bell"),
]


@pytest.mark.anyio
async def test_each_notification_kind_and_progress(server: RunningServer, client: Client) -> None:
    steps = "".join(f"printf '{arg}'; read -r line\n" for arg, *_ in NOTIFICATIONS)
    session = await client.spawn(
        ["sh", "-c", "read -r line\n" + steps + "exit 0\n"], env=child_env()
    )
    await client.attach(session.id, since=0)
    await client.send_input(b"go\r")  # attached: the events that follow reach us
    events: list[Event] = []
    for _arg, sent, phase, reason in NOTIFICATIONS:
        events += await until(client, activity_is(phase, reason))
        await client.send_input(b"next\r")
        assert sent in output_of(events), "the program's own sequence reaches the client"
    events += await until(client, exited)
    changes = [e for e in events if isinstance(e, ActivityChanged)]
    assert all(e.pending_interaction is None for e in changes), "never an interaction"
    assert [(c.activity.phase.value, c.activity.source) for c in changes][-1] == (
        "stopped",
        "process",
    )


@pytest.mark.anyio
async def test_the_extension_wins_over_the_terminal(server: RunningServer, client: Client) -> None:
    script = rf"""
        read -r line
        {PTYVISOR_BIN} emit activity working --agent script --reason compiling
        printf '\033]9;look at me\007\033]133;A\007\007\033]9;4;0\007\033]133;D;1\007'
        echo signals-sent
        read -r line
        {PTYVISOR_BIN} emit activity waiting
        printf '\033]133;C\007\033]9;4;1;10\007'
        echo more-sent
        read -r line
    """
    session = await client.spawn(["sh", "-c", script], env=child_env())
    await client.attach(session.id, since=0)
    await client.send_input(b"go\r")  # attached: the events that follow reach us
    events = await until(client, activity_is("working", "compiling", "extension"))
    events += await until(client, output_has(b"signals-sent"))
    # A capture brings the headless terminal, and so its signals, up to date.
    await client.capture(session.id)
    activity = {s.id: s for s in await client.list()}[session.id].activity
    assert (activity.phase.value, activity.reason, activity.source) == (
        "working",
        "compiling",
        "extension",
    )

    await client.send_input(b"go\r")
    events += await until(client, activity_is("waiting", None, "extension"))
    events += await until(client, output_has(b"more-sent"))
    await client.capture(session.id)
    activity = {s.id: s for s in await client.list()}[session.id].activity
    assert (activity.phase.value, activity.source) == ("waiting", "extension")
    await client.send_input(b"go\r")
    events += await until(client, exited)
    changes = [e.activity for e in events if isinstance(e, ActivityChanged)]
    assert [(c.phase.value, c.source) for c in changes] == [
        ("working", "extension"),
        ("waiting", "extension"),
        ("stopped", "process"),
    ]


def output_has(needle: bytes) -> Callable[[Event], bool]:
    """True at the output event that completes ``needle``."""
    seen = bytearray()

    def check(event: Event) -> bool:
        seen.extend(output_of([event]))
        return needle in seen

    return check


SIGNAL_PIECES = [
    b"\x1b]9;", b"\x1b]9;4;", b"\x1b]777;notify;", b"\x1b]99;", b"\x1b]133;", b"A", b"C",
    b"D;", b";", b"1", b"250", b"-7", b"x" * 300, b"\x07", b"\x1b\\", b"\x1b", b"\x9c",
    b"\xff\xfe", "é…".encode(),
]  # fmt: skip


@given(st.lists(st.sampled_from(SIGNAL_PIECES) | st.binary(max_size=20), max_size=60))
def test_any_output_gives_bounded_signals_the_tracker_takes(pieces: list[bytes]) -> None:
    """Whatever a program writes: the parser keeps its bounds and the tracker turns the
    signals into activity without raising, never with an interaction."""
    terminal = HeadlessTerminal(40, 5)
    tracker = ActivityTracker(0)
    for at, piece in enumerate(pieces, start=1):
        terminal.feed(piece)
        signals = terminal.take_signals()
        assert len(signals) <= MAX_SIGNALS
        assert all(len(s.text or "") <= SIGNAL_TEXT_CHARS for s in signals)
        tracker.terminal_signals(signals, at)
        assert tracker.pending is None
        assert tracker.activity.source in ("terminal", "process")
