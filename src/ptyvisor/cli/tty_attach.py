"""Attach the current terminal to a session: raw mode, resize on SIGWINCH, a detach key.

The local terminal is a real terminal emulator, so it answers the program's
DA/DSR queries itself (``answers_queries``) and the server stays silent. On a
dropped connection (a server restart, say) it reconnects with backoff and resumes
from its seq; the replayed bytes lose their queries on the way, as they were answered
when live (replay.py). A server away for more than a second gets a note on the
bottom row ("reconnecting…") and, once back, a fresh screen. Keys typed meanwhile are
kept (a few KiB) and sent once back; more is refused with a bell and a note (keys
typed in the very instant the connection breaks may be lost with it: nothing
acknowledges input). A session that is gone when the server is back ends the
attachment (`SessionGone`).

It draws on the terminal's alternate screen and leaves it at the end, so the user's
shell screen comes back as it was, as with tmux (altscreen.py keeps the program from
switching out of it); when the program has exited, its last screen is then printed
into the shell. ``alt_screen=False`` draws in place instead, so the program's output
also lands in the terminal's own scrollback.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import sys
import termios
import tty

import anyio
from websockets.exceptions import InvalidStatus, WebSocketException

from ptyvisor.cli.altscreen import AltScreenGuard
from ptyvisor.client.client import Client, ConnectionLost, Output
from ptyvisor.errors import Disconnected, ServerError, SessionGone
from ptyvisor.terminal.replay import shown
from ptyvisor.wire.protocol import (
    Attached,
    ProcessChanged,
    ProcessState,
    SessionClosed,
    Snapshot,
    SnapshotMessage,
)

DEFAULT_DETACH_KEY = b"\x1d"  # Ctrl-]
PENDING_INPUT = 4096
"""Bytes typed while the server is away that are kept to send once it is back."""
DETACH_WAIT_SECONDS = 0.5
"""After the detach key, how long a second one may follow to send the key itself."""
STATUS_AFTER_SECONDS = 1.0
"""A server away longer than this (more than a restart takes) gets a note on screen."""
RESET_MODES = (
    b"\x1b[0m\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?1005l"
    b"\x1b[?2004l\x1b[?1004l\x1b[?1l\x1b>\x1b[?25h"
)
"""Undo whatever the program left switched on, so the shell gets a sane terminal back."""
ENTER_ALT_SCREEN = b"\x1b[?1049h\x1b[H\x1b[2J"
LEAVE_ALT_SCREEN = b"\x1b[?1049l"
"""Also restores the cursor saved on entering: where the shell's prompt left it."""


def parse_key(spec: str) -> bytes:
    """``^]``, ``^X``, or tmux's ``C-]``, ``C-x``: the control byte the terminal sends."""
    if len(spec) == 2 and spec[0] == "^":
        letter = spec[1]
    elif len(spec) == 3 and spec[:2] in ("C-", "c-"):
        letter = spec[2]
    else:
        raise ValueError(f"the detach key must look like ^] or C-], not {spec!r}")
    # ASCII only: "ß".upper() is two letters, the dotless i upper-cases to "I".
    code = ord(letter.upper()) if letter.isascii() else 0
    if not 0x40 <= code <= 0x5F:
        raise ValueError(f"{spec!r} is not a control key (^@ to ^_, ^A to ^Z)")
    return bytes([code & 0x1F])


class TerminalAttachment:
    def __init__(
        self,
        client: Client,
        session_id: str,
        detach_key: bytes,
        *,
        view_only: bool = False,
        alt_screen: bool = True,
        from_start: bool = False,
    ) -> None:
        """``from_start`` (without ``alt_screen``): replay the session's output from its
        first byte rather than draw its screen, so a quick command's output lands in
        the shell's scrollback whole, as if run directly (a snapshot when the log has
        already dropped the start)."""
        self._client = client
        self._alt = AltScreenGuard() if alt_screen else None
        self._from_start = from_start and not alt_screen
        self._skip_until = 0
        """Output before this seq is already on screen, drawn from a snapshot."""
        self._session_id = session_id
        self._detach_key = detach_key
        self._view_only = view_only
        """Watch only: keys other than the detach key are not sent, nor our size."""
        self._in = sys.stdin.fileno()
        self._out = sys.stdout.fileno()
        self.exit_code: int | None = None
        self.ended: ProcessState | None = None
        """How the program ended, once it has."""
        self.already_exited = False
        """It had exited before we attached."""
        self.detached = False
        self._end_seq: int | None = None
        """Where the output of a program that had exited before we attached ends."""
        self._live_seq = 0
        """Output before this seq is replay: the local terminal must not answer its
        queries again (replay.py)."""
        self._connected = True
        self._pending = bytearray()
        """Typed while the server was away: sent once reconnected."""
        self._status_shown = False

    @property
    def connected(self) -> bool:
        """Whether the server was there at the end (else a detach left it unreachable)."""
        return self._connected

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._out, view)
            view = view[written:]

    def _draw(self, snapshot: Snapshot) -> None:
        ansi = snapshot.screen.ansi.encode()
        if self._alt is None:
            self._write(b"\x1bc" + ansi)
            return
        self._alt.reset()
        self._skip_until = snapshot.seq
        self._write(RESET_MODES + self._alt.redraw(ansi))

    def _output(self, seq: int, data: bytes) -> bool:
        """Write the output at ``seq`` (less what a snapshot drew already); True when
        the program switched screens in it, so the screen must be redrawn."""
        if seq < self._skip_until:
            data, seq = data[self._skip_until - seq :], self._skip_until
        data = shown(seq, data, self._live_seq)
        switch = None
        if self._alt is not None:
            data, switch = self._alt.feed(data)
        self._write(data)
        return switch is not None

    async def _redraw(self) -> None:
        """The program switched screens: draw the one it shows now, from the server."""
        with contextlib.suppress(ServerError, Disconnected):
            self._draw(await self._client.snapshot(self._session_id, scrollback=False))

    async def run(self) -> int | None:
        """Returns the program's exit code, or None when detached with the key."""
        saved = termios.tcgetattr(self._in)
        tty.setraw(self._in)
        if self._alt is not None:
            self._write(ENTER_ALT_SCREEN)
        try:
            # Our size goes with the attach: we get it if nobody else holds it, and
            # take it back with our first key otherwise (see sizing.py).
            attached = await self._client.attach(
                self._session_id,
                since=0 if self._from_start else None,
                answers_queries=True,
                scrollback=self._alt is None,
                size=None if self._view_only else self._terminal_size(),
                view_only=self._view_only,
            )
            self._live_seq = attached.live_seq
            if attached.snapshot is not None:
                self._draw(attached.snapshot)
            await self._follow_exit(attached)
            if not self._shown(attached.seq):  # else it had ended, and all is shown
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._pump_input, tg.cancel_scope)
                    if not self._view_only:
                        tg.start_soon(self._follow_resizes)
                    await self._pump_output()
                    tg.cancel_scope.cancel()
        finally:
            termios.tcsetattr(self._in, termios.TCSADRAIN, saved)
            self._write(RESET_MODES + (LEAVE_ALT_SCREEN if self._alt else b"\r\n"))
        if self._alt is not None and self.ended is not None:
            await self._print_last_screen()
        return self.exit_code

    async def _print_last_screen(self) -> None:
        """The program has ended: its last screen goes into the shell, where running it
        directly would have left it (trailing blank rows dropped)."""
        with contextlib.suppress(ServerError, Disconnected):
            captured = await self._client.capture(self._session_id, ansi=True)
            rows = list(captured.rows)
            while rows and not _visible(rows[-1]):
                rows.pop()
            self._write(b"".join(row.encode() + b"\x1b[0m\r\n" for row in rows))

    async def _follow_exit(self, attached: Attached) -> None:
        """If the program had already exited, no process_changed may follow: take its
        status from the summary and stop once its output is shown up to where it ends."""
        if attached.session.process.state != "exited":
            return
        self.already_exited = True
        self._note_exit(attached.session.process)
        # Closed meanwhile (session_closed follows) or disconnected (we will reconnect).
        with contextlib.suppress(ServerError, Disconnected):
            self._end_seq = (await self._client.stats(self._session_id)).output_bytes

    def _shown(self, seq: int) -> bool:
        return self._end_seq is not None and seq >= self._end_seq

    def _note_exit(self, process: ProcessState) -> None:
        self.ended = process
        code = process.exit_code
        self.exit_code = code if code is not None else 128 + (process.signal or 0)

    def _terminal_size(self) -> tuple[int, int] | None:
        try:
            cols, rows = os.get_terminal_size(self._out)
        except OSError:
            return None
        return (cols, rows) if cols > 0 and rows > 0 else None

    async def _resize(self) -> None:
        size = self._terminal_size()
        if size is not None:
            await self._client.resize(self._session_id, *size)

    async def _follow_resizes(self) -> None:
        with anyio.open_signal_receiver(signal.SIGWINCH) as signals:
            async for _ in signals:
                await self._resize()

    async def _pump_input(self, scope: anyio.CancelScope) -> None:
        """Typed bytes to the program. The detach key detaches, unless it is pressed
        twice in a row: then the program gets it once (vim's ^] follows a tag)."""
        key = self._detach_key
        pending = b""  # typed since the first detach key: what decides
        while True:
            if pending:
                with anyio.move_on_after(DETACH_WAIT_SECONDS):
                    await anyio.wait_readable(self._in)
            else:
                await anyio.wait_readable(self._in)
            data = os.read(self._in, 65536) if _readable(self._in) else b""
            if pending and not data:  # nothing followed the key: detach
                break
            if not pending and not data:
                return
            data = pending + data
            pending = b""
            at = data.find(key)
            while at >= 0:
                if at + 1 == len(data):  # the key, last: wait for what follows
                    pending = key
                    data = data[:at]
                    break
                if data[at + 1 : at + 2] == key:  # twice: the program gets one
                    data = data[: at + 1] + data[at + 2 :]
                    at = data.find(key, at + 1)
                    continue
                await self._typed(data[:at])
                self.detached = True
                scope.cancel()
                return
            await self._typed(data)
        self.detached = True
        scope.cancel()

    async def _typed(self, data: bytes) -> None:
        if not data:
            return
        if self._view_only:
            self._status("watching only: keys are not sent (the detach key leaves)")
            return
        await self._send(data)

    async def _send(self, data: bytes) -> None:
        """Send typed input; while the server is away it waits (up to PENDING_INPUT
        bytes, sent once reconnected), and past that it is refused out loud."""
        if self._connected:
            try:
                await self._client.send_input(data)
                return
            except Disconnected:
                self._connected = False
        room = PENDING_INPUT - len(self._pending)
        self._pending += data[:room]
        if len(data) > room:
            self._status("not reconnected yet: typing is not sent", bell=True)

    async def _flush_pending(self) -> None:
        pending, self._pending = bytes(self._pending), bytearray()
        if pending:
            await self._client.send_input(pending)

    def _status(self, text: str, *, bell: bool = False) -> None:
        """A note on the bottom row, over the program's screen (redrawn once back)."""
        rows = os.get_terminal_size(self._out).lines if os.isatty(self._out) else 24
        self._write(
            b"\x1b7\x1b[%d;1H\x1b[0;7m\x1b[2K %s \x1b[0m\x1b8%s"
            % (rows, f"ptyvisor: {text}".encode(), b"\x07" if bell else b"")
        )
        self._status_shown = True

    async def _pump_output(self) -> None:
        async for event in self._client.events():
            match event:
                case Output():
                    if self._output(event.seq, event.data):
                        await self._redraw()
                    if self._shown(max(event.seq + len(event.data), self._skip_until)):
                        return
                case SnapshotMessage(reason="lagging"):
                    self._draw(event.snapshot)
                    if self._shown(event.snapshot.seq):
                        return
                case ProcessChanged() if event.process.state == "exited":
                    self._note_exit(event.process)
                    return
                case SessionClosed():
                    self.exit_code = self.exit_code or 0
                    return
                case ConnectionLost():
                    attached = await self._reconnect()
                    if attached is not None:
                        await self._follow_exit(attached)
                        if self._shown(attached.seq):
                            return
                case _:
                    pass

    async def _reconnect(self) -> Attached | None:
        """Back to the session: exactly the missed bytes when that is quick; when the
        server stays away long enough for a note on the screen ("reconnecting…"), a
        fresh screen from a snapshot, which also wipes the note. Raises SessionGone
        when the server is back but the session is not, and gives up on a refusal."""
        self._connected = False
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._note_when_away)
            attached = await self._attempt()
            tg.cancel_scope.cancel()
        self._connected = True
        self._live_seq = attached.live_seq
        if attached.snapshot is not None:
            self._draw(attached.snapshot)
        self._status_shown = False
        await self._flush_pending()
        return attached

    async def _note_when_away(self) -> None:
        await anyio.sleep(STATUS_AFTER_SECONDS)
        self._status("server away: reconnecting…")

    async def _attempt(self) -> Attached:
        delay = 0.1
        while True:
            try:
                attached = await self._client.reconnect(
                    resume=not self._status_shown, scrollback=False
                )
            except ServerError as error:
                if error.code == "unknown_session":
                    raise SessionGone(self._session_id) from None
                raise
            except InvalidStatus as refused:
                if refused.response.status_code in (401, 403):
                    raise
                attached = None
            except (OSError, WebSocketException, Disconnected, TimeoutError):
                attached = None
            if attached is not None:
                return attached
            await anyio.sleep(delay)
            delay = min(delay * 2, 2.0)


def _visible(row: str) -> bool:
    """Whether a captured row (with its SGR codes) shows anything."""
    return bool(re.sub(r"\x1b\[[0-9;:]*m", "", row).strip())


def _readable(fd: int) -> bool:
    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)
