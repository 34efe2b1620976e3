"""A local terminal attached to a session (tty_attach.py), run in this process on a
real PTY standing for the user's terminal, against a real server: the detach key
(once, twice, split across reads), watching only, the exit status, the terminal
given back as it was, and the last screen printed into the shell.
The command line's own tests (test_commands.py) run the same through `ptyvisor`."""

from __future__ import annotations

import os
import select
import signal
import sys
import termios
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.to_thread
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ptyvisor.cli.tty_attach import (
    DEFAULT_DETACH_KEY,
    ENTER_ALT_SCREEN,
    LEAVE_ALT_SCREEN,
    RESET_MODES,
    TerminalAttachment,
    _visible,
    parse_key,
)
from ptyvisor.client.client import Client
from tests.timeouts import scaled

from ..conftest import ECHO_READS, TOKEN, Pty, RunningServer, output_until, poll, wait_for

pytestmark = pytest.mark.anyio

KEY = DEFAULT_DETACH_KEY


# The key's grammar: pure.


@given(st.sampled_from("@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_abcdefghijklmnopqrstuvwxyz"))
def test_every_control_key_in_both_spellings(letter: str) -> None:
    byte = parse_key("^" + letter)
    assert byte == parse_key("C-" + letter) == parse_key("c-" + letter)
    assert byte == bytes([ord(letter.upper()) - 0x40])


SPECS = st.one_of(
    st.text(max_size=4),
    st.builds(lambda a, b: a + b, st.sampled_from(["^", "C-", "c-"]), st.text(max_size=2)),
)


@given(SPECS)
@example("^ß")  # upper-cases to two letters
@example("^\u0131")  # dotless i: upper-cases to I
@example("C-\u017f")  # long s: upper-cases to S
def test_anything_else_is_refused_with_a_value_error(spec: str) -> None:
    """What the user types after --detach-key: a key or a ValueError (which the CLI
    prints as one line), never another exception, never a byte that is no control key."""
    try:
        key = parse_key(spec)
    except ValueError:
        return
    assert len(key) == 1 and key[0] < 0x20
    assert spec[-1].isascii() and spec[:-1] in ("^", "C-", "c-")


def test_a_visible_row_has_more_than_colour_codes_and_spaces() -> None:
    assert not _visible("") and not _visible("   ")
    assert not _visible("\x1b[0m  \x1b[38;2;1;2;3m \x1b[m")
    assert _visible("\x1b[31m x")


# Attached, in this process, on a real PTY.


@dataclass
class Terminal:
    """The user's terminal: a PTY whose slave an attachment takes as stdin and stdout."""

    pty: Pty
    seen: bytearray

    async def shows(self, needle: bytes) -> bytes:
        """Everything written to the terminal so far, once it contains ``needle``."""

        def check() -> bool:
            self.seen += self.pty.read_available(quiet=0.01)
            return needle in self.seen

        await anyio.to_thread.run_sync(lambda: wait_for(check, f"{needle!r} on the terminal"))
        return bytes(self.seen)

    def type(self, data: bytes) -> None:
        os.write(self.pty.master, data)

    def attachment(self, client: Client, session: str, **options: bool) -> TerminalAttachment:
        """One on this terminal: it takes the descriptors of sys.stdin and sys.stdout
        when made (pytest's capture puts its own back before each test phase)."""
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "stdin", FileNumber(self.pty.slave))
            patch.setattr(sys, "stdout", FileNumber(self.pty.slave))
            return TerminalAttachment(client, session, KEY, **options)


@dataclass
class FileNumber:
    """Stands for sys.stdin and sys.stdout: what the attachment takes from them."""

    number: int

    def fileno(self) -> int:
        return self.number


@pytest.fixture
def terminal(pty_pair: Pty) -> Terminal:
    return Terminal(pty_pair, bytearray())


@asynccontextmanager
async def program(server: RunningServer, argv: list[str]) -> AsyncIterator[tuple[str, Client]]:
    """A session running ``argv`` and a client attached to it from the start, to see
    what the program writes (what it was sent, for ECHO_READS)."""
    async with Client.connect(server.url, TOKEN) as watcher:
        session = await watcher.spawn(argv)
        await watcher.attach(session.id, since=0, view_only=True)
        yield session.id, watcher


ECHO = [sys.executable, "-c", ECHO_READS]


@dataclass
class Running:
    attachment: TerminalAttachment
    done: anyio.Event
    result: list[int | None]

    async def finished(self) -> int | None:
        """What ``run`` returned, once it has."""
        with anyio.fail_after(scaled(15)):
            await self.done.wait()
        return self.result[0]


@asynccontextmanager
async def attached(
    server: RunningServer, terminal: Terminal, session: str, **options: bool
) -> AsyncIterator[Running]:
    """``TerminalAttachment.run`` on the terminal (stdin and stdout), in the background."""
    async with Client.connect(server.url, TOKEN) as client:
        running = Running(terminal.attachment(client, session, **options), anyio.Event(), [])

        async def run() -> None:
            running.result.append(await running.attachment.run())
            running.done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            yield running
            await running.finished()


async def taken(terminal: Terminal) -> None:
    """Until the attachment has read everything typed so far."""
    slave = terminal.pty.slave
    await poll(lambda: _async(not select.select([slave], [], [], 0)[0]))


async def _async(value: bool) -> bool:
    return value


async def program_got(watcher: Client, data: bytes) -> None:
    await output_until(watcher, f"got {data!r}".encode())


async def test_typed_keys_reach_the_program_and_the_key_alone_detaches(
    server: RunningServer, terminal: Terminal
) -> None:
    async with program(server, ECHO) as (session, watcher):
        async with attached(server, terminal, session) as running:
            await terminal.shows(b"READY")
            terminal.type(b"abc")
            await program_got(watcher, b"abc")
            terminal.type(KEY)
            assert await running.finished() is None
        attachment = running.attachment
        assert attachment.detached and attachment.connected and attachment.ended is None
        (summary,) = await watcher.list()
        assert summary.process.state == "running"


async def test_the_key_twice_sends_it_once_even_across_reads(
    server: RunningServer, terminal: Terminal
) -> None:
    async with program(server, ECHO) as (session, watcher):
        async with attached(server, terminal, session) as running:
            await terminal.shows(b"READY")
            terminal.type(KEY + KEY)
            await program_got(watcher, KEY)
            terminal.type(KEY)
            await taken(terminal)  # read alone: the attachment waits for what follows
            terminal.type(KEY + b"z")
            await program_got(watcher, KEY + b"z")
            terminal.type(b"x" + KEY)
        assert await running.finished() is None
        await program_got(watcher, b"x")


async def test_what_follows_the_key_in_the_same_read_is_not_sent(
    server: RunningServer, terminal: Terminal
) -> None:
    async with program(server, ECHO) as (session, watcher):
        async with attached(server, terminal, session) as running:
            await terminal.shows(b"READY")
            terminal.type(b"ab" + KEY + b"cd")
        assert await running.finished() is None
        async with Client.connect(server.url, TOKEN) as typist:
            await typist.attach(session)
            await typist.send_input(b"marker")
        output = await output_until(watcher, b"got b'marker'")
        assert b"got b'ab'" in output and b"cd" not in output


async def test_watching_only_sends_no_key_and_says_so(
    server: RunningServer, terminal: Terminal
) -> None:
    async with program(server, ECHO) as (session, watcher):
        async with attached(server, terminal, session, view_only=True) as running:
            await terminal.shows(b"READY")
            terminal.type(b"secret")
            await terminal.shows(b"watching only")
            terminal.type(KEY)
        assert await running.finished() is None
        async with Client.connect(server.url, TOKEN) as typist:
            await typist.attach(session)
            await typist.send_input(b"marker")
        output = await output_until(watcher, b"got b'marker'")
        assert b"secret" not in output


@pytest.mark.parametrize(
    ("script", "code"), [("exit 3", 3), ("kill -KILL $$", 128 + signal.SIGKILL)]
)
async def test_run_returns_the_programs_exit_status(
    server: RunningServer, terminal: Terminal, script: str, code: int
) -> None:
    async with program(server, ["sh", "-c", f"echo waiting; read x; {script}"]) as (session, _):
        async with attached(server, terminal, session) as running:
            await terminal.shows(b"waiting")
            terminal.type(b"\r")
        assert await running.finished() == code
        assert running.attachment.ended is not None and not running.attachment.detached


async def test_the_terminal_is_given_back_and_the_last_screen_printed_into_the_shell(
    server: RunningServer, terminal: Terminal
) -> None:
    stdin = terminal.pty.slave
    cooked = termios.tcgetattr(stdin)
    cooked[3] |= termios.ECHO | termios.ICANON
    termios.tcsetattr(stdin, termios.TCSANOW, cooked)
    before = termios.tcgetattr(stdin)
    script = "printf 'line one\\r\\nline two\\r\\n'; stty -echo; read x"
    async with program(server, ["sh", "-c", script]) as (session, _):
        async with attached(server, terminal, session) as running:
            await terminal.shows(b"line two")
            assert termios.tcgetattr(stdin)[3] & termios.ICANON == 0, "raw while attached"
            terminal.type(b"\r")
        assert await running.finished() == 0
    assert termios.tcgetattr(stdin) == before
    shown = await terminal.shows(b"line two\x1b[0m\r\n")
    assert shown.startswith(ENTER_ALT_SCREEN)
    after = shown.split(LEAVE_ALT_SCREEN)[1]
    assert after == b"line one\x1b[0m\r\nline two\x1b[0m\r\n", "trailing blank rows dropped"


async def test_in_place_it_stays_off_the_alternate_screen_and_prints_nothing_after(
    server: RunningServer, terminal: Terminal
) -> None:
    async with program(server, ["sh", "-c", "echo in-place; read x"]) as (session, _):
        async with attached(server, terminal, session, alt_screen=False) as running:
            await terminal.shows(b"in-place")
            terminal.type(b"\r")
        assert await running.finished() == 0
    shown = await terminal.shows(b"\x1b[?25h\r\n")
    assert b"\x1b[?1049h" not in shown and shown.endswith(RESET_MODES + b"\r\n")
    assert shown.count(b"in-place") == 1, "the last screen is where it was drawn already"
