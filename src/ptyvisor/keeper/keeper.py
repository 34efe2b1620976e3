"""The keeper: the small process that owns every program, so programs outlive the server.

``ptyvisor serve`` is the keeper. It takes the state directory's lock, binds the
port and the control socket, and starts the *server* (``python -m ptyvisor.server.worker``:
scanner, log, terminal, WebSockets — everything else) as its child, handing it the
listening sockets. When the server asks, the keeper forks a program (spawn.py) and
hands back duplicates of its PTY master and of a shared-memory ring (ring.py) that
the server copies the output into; it keeps its own copies, reaps the program when
it exits, and tells the server.

If the server dies (a crash, ``kill -9``, the OOM killer), or stops answering the
keeper's heartbeat (stopped, deadlocked: its event loop answers ``ping`` every
second, and `UNANSWERED_SECONDS` of silence gets it killed), the keeper starts a new
one at once and hands it every program: pids, PTY masters, rings, and the exit
statuses reaped meanwhile. The port never closes, so clients just reconnect, and
nothing a program wrote meanwhile is lost: it waits in its terminal. A planned
restart (``ptyvisor restart``, or SIGUSR2) also hands over what only the server
knew — screens, activity, queued messages — in memory. ``ptyvisor restart --upgrade``
(SIGUSR1) then replaces the keeper itself in place, with the installed code
(takeover.py): same pid, same descriptors, no program notices.

Stopping (SIGTERM, SIGINT, ``ptyvisor stop``) stops the server, then every program:
HUP (and CONT), KILL after a grace period, and everything they started, however
detached — the keeper is a child subreaper, so orphans become its children — is
reaped before it exits. SIGHUP is not a stop: it is what a closed terminal or an
ended login sends, and it moves the log to the state directory (`logs.TerminalOutput`).

Small enough to trust: stdlib only, no asyncio, no pydantic, one thread, and it
never parses program output.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import logging
import os
import selectors
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from ptyvisor.config import BadNotifyTarget, ServerConfig, control_path
from ptyvisor.errors import BadLinkMessage, SpawnError, Truncated
from ptyvisor.keeper import background, descriptors, logs, proctable, ring, spawn, takeover
from ptyvisor.keeper import options as serve_options
from ptyvisor.keeper.notify import notify
from ptyvisor.wire import link as wire

log = logging.getLogger("ptyvisor.keeper")

LOCK_FILE = "serve.lock"
STOP_GRACE_SECONDS = 2.0
"""How long programs get between HUP and KILL when the server stops."""
SERVER_STOP_SECONDS = 5.0
"""How long the server process gets to finish before it is killed."""
RESTART_BACKOFF = (0.0, 0.5, 1, 2, 5, 10)
"""Delays before restarting a server that keeps dying before it serves (a broken
upgrade, say); one that served is replaced at once."""
HEARTBEAT_SECONDS = 1.0
"""How often the keeper asks the server process whether its event loop still runs."""
UNANSWERED_SECONDS = 10.0
"""A server silent this long (stopped, deadlocked, its loop blocked) is replaced, as a
crashed one is: no program notices."""
START_SECONDS = 60.0
"""How long a new server has to say it serves (it adopts every program first)."""
PR_SET_CHILD_SUBREAPER = 36
HANDLED_SIGNALS = (
    signal.SIGCHLD,
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
UPGRADE_SIGNAL = signal.SIGUSR1
"""``ptyvisor restart --upgrade``; only sent to a keeper that handles it (an earlier
one would take it as the default, an exit)."""


class ServerPhase(StrEnum):
    """Where the keeper's server process is in its life (one at a time)."""

    BACKING_OFF = "backing off"
    """No server process: the next one starts at `Keeper._next_start` (at once after a
    crash of one that served, later and later after one that died before serving)."""
    STARTING = "starting"
    """Started; it has not said it serves."""
    SERVING = "serving"
    RESTARTING = "restarting"
    """Told to hand over and go (``ptyvisor restart``); the next starts at once."""
    STOPPING = "stopping"
    """Told to stop for good; once it is gone, every program is stopped."""


ServerEvent = Literal["start", "ready", "exited", "restart", "stop"]
SERVER_TRANSITIONS: dict[ServerPhase, dict[ServerEvent, ServerPhase]] = {
    ServerPhase.BACKING_OFF: {"start": ServerPhase.STARTING, "stop": ServerPhase.STOPPING},
    ServerPhase.STARTING: {
        "ready": ServerPhase.SERVING,
        "exited": ServerPhase.BACKING_OFF,
        "restart": ServerPhase.RESTARTING,
        "stop": ServerPhase.STOPPING,
    },
    ServerPhase.SERVING: {
        "ready": ServerPhase.SERVING,
        "exited": ServerPhase.BACKING_OFF,
        "restart": ServerPhase.RESTARTING,
        "stop": ServerPhase.STOPPING,
    },
    ServerPhase.RESTARTING: {
        "ready": ServerPhase.RESTARTING,
        "exited": ServerPhase.BACKING_OFF,
        "restart": ServerPhase.RESTARTING,
        "stop": ServerPhase.STOPPING,
    },
    ServerPhase.STOPPING: {
        "ready": ServerPhase.STOPPING,
        "exited": ServerPhase.STOPPING,
        "restart": ServerPhase.STOPPING,
        "stop": ServerPhase.STOPPING,
    },
}
"""Every phase's events; one a phase does not list is a bug (`Keeper._change`)."""


@dataclass
class Program:
    """A running (or exited, not yet forgotten) program the keeper owns."""

    session: str
    pid: int
    master: int
    ring: int
    tty: str
    identity: dict[str, Any]
    cols: int
    rows: int
    status: int | None = None


def main(argv: list[str]) -> int:
    """``ptyvisor serve``."""
    parser = argparse.ArgumentParser(
        prog="ptyvisor serve",
        description="Run the server: the page, the WebSocket API and every session. "
        "Programs outlive a crash or restart of the server process.",
    )
    serve_options.add_arguments(parser)
    parser.add_argument("--take-over", type=int, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.take_over is not None:
        return _take_over(options.take_over)
    problem = serve_options.check(options)
    if problem is None:
        try:
            config, explicit_token = serve_options.make_config(options)
        except (OSError, ssl.SSLError) as error:
            problem = f"cannot use the state directory or TLS files: {error}"
        except BadNotifyTarget as error:
            problem = f"a notification target cannot be used: {error}"
    if problem is not None:
        print(f"ptyvisor serve: {problem}", file=sys.stderr)
        return 2
    warning = serve_options.beyond_loopback_warning(config)
    if warning is not None:
        print(f"ptyvisor serve: {warning}", file=sys.stderr, flush=True)
    if options.detach:
        return _detach(argv, config)
    logs.configure(options.verbose)
    if options.no_keeper:
        from ptyvisor.server.worker import serve_in_process

        return serve_in_process(config, explicit_token=explicit_token)
    lock = _take_lock(config.state_dir)
    if isinstance(lock, str):
        print(f"ptyvisor serve: {lock}", file=sys.stderr)
        return 1
    if options.announce_fd is not None:
        os.set_inheritable(options.announce_fd, False)  # for whoever started us only
    try:
        keeper = Keeper(
            config,
            explicit_token=explicit_token,
            verbose=options.verbose,
            announce_fd=options.announce_fd,
            lock=lock,
        )
    except OSError as error:
        print(descriptors.listen_failure(config.host, config.port, error), file=sys.stderr)
        return 1
    return keeper.run()


def _take_over(fd: int) -> int:
    """``serve --take-over FD``: the keeper, re-executed in place by the one before
    (takeover.py), goes on from its state with this code."""
    try:
        state = takeover.read(fd)
    except (OSError, ValueError) as error:
        # Only reached when the check before execve was wrong: say so where it is seen.
        print(f"ptyvisor serve: cannot take over: {error}", file=sys.stderr)
        return 1
    logs.configure(state.verbose)
    settings = dict(state.config)
    url, control = str(settings.pop("url")), str(settings.pop("control_path"))
    config = ServerConfig.from_json(settings)
    config.bound(config.port, control, url)
    tcp = socket.socket(fileno=state.tcp)
    unix = None if state.control is None else socket.socket(fileno=state.control)
    for descriptor in state.descriptors:
        os.set_inheritable(descriptor, False)
    keeper = Keeper(
        config,
        explicit_token=state.explicit_token,
        verbose=state.verbose,
        lock=state.lock,
        listening=(tcp, unix),
    )
    for fields in state.programs:
        program = Program(**fields)
        keeper.programs[program.session] = program
        keeper._by_pid[program.pid] = program
    keeper._handover = (
        None if state.handover is None else [wire.parse_handover(h) for h in state.handover]
    )
    keeper._announced = True  # serving all along: no page line again
    log.info("upgraded in place: this keeper (pid %d) kept %d programs", os.getpid(),
             len(keeper.programs))  # fmt: skip
    return keeper.run()


def _detach(argv: list[str], config: ServerConfig) -> int:
    """``serve --detach``: the same serve, in the background; say where it serves."""
    holder = lock_holder(config.state_dir)
    if holder is not None:
        print(f"ptyvisor serve: {_another_serve(holder, config.state_dir)}", file=sys.stderr)
        return 1
    started = background.start([a for a in argv if a != "--detach"], config.state_dir)
    if isinstance(started, str):
        print(f"ptyvisor serve: it did not start:\n{started}", file=sys.stderr)
        return 1
    print("\n".join(started.announced))
    print(f"in the background: pid {started.pid}, log {started.log}; `ptyvisor stop` ends it")
    return 0


def _another_serve(pid: int | str, state_dir: Path) -> str:
    return f"another ptyvisor serve (pid {pid}) is running on {state_dir}"


def _take_lock(state_dir: Path) -> int | str:
    """An exclusive lock on the state directory (kept until exit), or why not."""
    path = state_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        return _another_serve(holder, state_dir)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def lock_holder(state_dir: Path) -> int | None:
    """The pid of the ``serve`` holding ``state_dir``'s lock, if one does."""
    try:
        fd = os.open(state_dir / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 64, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else None
        return None  # nobody holds it
    finally:
        os.close(fd)


def _become_subreaper() -> None:
    """Orphans of our programs become our children (Linux), so we can stop and reap them."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class Keeper:
    def __init__(
        self,
        config: ServerConfig,
        *,
        explicit_token: bool,
        verbose: bool,
        announce_fd: int | None = None,
        lock: int = -1,
        listening: tuple[socket.socket, socket.socket | None] | None = None,
    ) -> None:
        """``lock``: the state directory's lock (kept across an upgrade);
        ``listening``: the sockets, when a keeper before this one bound them."""
        self.config = config
        self._lock = lock
        self._announce_fd = announce_fd
        """Where to say that we serve: the command that started us in the background."""
        self._explicit_token = explicit_token
        self._verbose = verbose
        descriptors.raise_nofile_limit()
        _become_subreaper()
        if listening is not None:
            self.tcp, self.control = listening
        else:
            self.tcp = socket.create_server(
                (config.host, config.port),
                family=socket.AF_INET6 if ":" in config.host else socket.AF_INET,
                backlog=512,
            )
            self.control = descriptors.bind_private_unix(control_path(config.state_dir))
            config.bound(
                self.tcp.getsockname()[1],
                "" if self.control is None else str(control_path(config.state_dir)),
            )
        self._upgrade_due = False
        self.programs: dict[str, Program] = {}
        self._by_pid: dict[int, Program] = {}
        self.server: subprocess.Popen[bytes] | None = None
        self.link: socket.socket | None = None
        self._outgoing: deque[tuple[bytes, list[int], int | None]] = deque()
        self._handover: list[wire.SessionHandover] | None = None
        self._announced = False
        self.phase = ServerPhase.BACKING_OFF
        """The server process's phase, changed only by `_change`."""
        self._server_started = 0.0
        self._failed_starts = 0
        self._next_start = 0.0
        self._server_deadline: float | None = None
        self._last_heard = 0.0
        """When the server process last said anything on the link."""
        self._last_ping = 0.0
        self._pings = 0
        self._selector = selectors.DefaultSelector()
        self._signals: deque[int] = deque()
        self._output = logs.TerminalOutput(config.state_dir)
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    # ------------------------------------------------------------------ main loop

    def run(self) -> int:
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, self._on_signal)
        signal.set_wakeup_fd(self._wake_write, warn_on_full_buffer=False)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._reap()  # what exited while nobody listened (across an upgrade)
        try:
            while True:
                if self._upgrade_due and self.server is None and not self._signals:
                    self._upgrade_in_place()
                backing_off = self.phase is ServerPhase.BACKING_OFF
                if backing_off and time.monotonic() >= self._next_start:
                    self._start_server()
                if self.phase is ServerPhase.STOPPING and self.server is None:
                    self._stop_programs()
                    return 0
                self._wait_for_events()
        finally:
            self._close()

    def _wait_for_events(self) -> None:
        timeout = HEARTBEAT_SECONDS
        if self.phase is ServerPhase.BACKING_OFF:
            timeout = max(0.0, self._next_start - time.monotonic())
        if self._server_deadline is not None:
            timeout = min(timeout, max(0.0, self._server_deadline - time.monotonic()))
        if self.link is not None:
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self._outgoing else 0)
            self._selector.modify(self.link, events)
        for key, mask in self._selector.select(timeout):
            if key.fd == self._wake_read:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_read, 4096)
            elif self.link is not None and key.fd == self.link.fileno():
                if mask & selectors.EVENT_WRITE:
                    self._flush()
                if mask & selectors.EVENT_READ and self.link is not None:
                    self._read_link()
        while self._signals:
            self._handle_signal(self._signals.popleft())
        self._heartbeat()
        if self._server_deadline is not None and time.monotonic() >= self._server_deadline:
            self._server_deadline = None
            if self.server is not None:
                log.warning("the server did not finish in time; killing it")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.server.pid, signal.SIGKILL)

    def _heartbeat(self) -> None:
        """Ask the server process whether it still runs; replace one that has been
        silent too long. Not while it is told to stop or restart: those have their
        own deadline."""
        if self.server is None or self.link is None or self._server_deadline is not None:
            return
        now = time.monotonic()
        silent = now - self._last_heard
        serving = self.phase is ServerPhase.SERVING
        if silent > (UNANSWERED_SECONDS if serving else START_SECONDS):
            log.warning(
                "the server process %d has not answered for %.0f s (stopped or stuck); "
                "replacing it, programs keep running",
                self.server.pid,
                silent,
            )
            self._drop_link()  # what it would say now is not to be trusted
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.server.pid, signal.SIGKILL)
            return
        if serving and now - self._last_ping >= HEARTBEAT_SECONDS:
            self._last_ping = now
            self._pings += 1
            self._send(wire.Ping(self._pings))

    def _on_signal(self, signum: int, frame: object) -> None:
        del frame
        self._signals.append(signum)

    def _change(self, event: ServerEvent) -> ServerPhase:
        """The one way the server process's phase changes (see `SERVER_TRANSITIONS`);
        returns the phase it was in. An event its phase does not take is a bug."""
        before = self.phase
        try:
            self.phase = SERVER_TRANSITIONS[before][event]
        except KeyError:
            raise LookupError(f"the server process: {event!r} while {before}") from None
        if self.phase is not before:
            log.debug("server process: %s -> %s (%s)", before, self.phase, event)
        return before

    def _handle_signal(self, signum: int) -> None:
        if signum == signal.SIGCHLD:
            self._reap()
        elif signum == signal.SIGUSR2:
            self._restart()
        elif signum == UPGRADE_SIGNAL:
            self._upgrade()
        elif signum == signal.SIGHUP:
            self._terminal_closed()
        elif self.phase is not ServerPhase.STOPPING:
            log.info("stopping: every program is stopped first")
            notify("STOPPING=1")
            self._change("stop")
            self._tell_server(wire.Stop(), deadline=SERVER_STOP_SECONDS)

    def _terminal_closed(self) -> None:
        """SIGHUP: the terminal serve ran in closed, or the login it ran in ended.
        Programs run on; the log moves to the state directory, and the server process,
        which still writes to the closed terminal, is replaced by one that writes
        there too (a planned restart: no program notices, clients reconnect)."""
        if self._output.hung_up():
            self._restart()

    # ------------------------------------------------------------------ the server

    def _start_server(self) -> None:
        keeper_end, server_end = wire.pair()
        fds = [server_end.fileno(), self.tcp.fileno()]
        if self.control is not None:
            fds.append(self.control.fileno())
        argv = [sys.executable, "-m", "ptyvisor.server.worker", *map(str, fds)]
        self.server = subprocess.Popen(
            argv, pass_fds=fds, stdin=subprocess.DEVNULL, process_group=0, close_fds=True
        )
        server_end.close()
        keeper_end.setblocking(False)
        self.link = keeper_end
        self._selector.register(keeper_end, selectors.EVENT_READ)
        self._server_started = self._last_heard = time.monotonic()
        self._change("start")
        config = {**self.config.to_json(), "url": self.config.url}
        config["control_path"] = self.config.control_path
        config["verbose"] = self._verbose
        self._send(wire.Config(version=wire.VERSION, config=config))
        for program in self.programs.values():
            adopt = wire.Adopt(
                session=program.session,
                pid=program.pid,
                tty=program.tty,
                identity=program.identity,
                cols=program.cols,
                rows=program.rows,
                status=program.status,
            )
            self._send(adopt, [program.master, program.ring])
        self._send(wire.Adopted(state=self._handover))
        self._handover = None
        log.info("server process %d started with %d programs", self.server.pid, len(self.programs))

    def _server_exited(self, status: int) -> None:
        assert self.server is not None
        code = os.waitstatus_to_exitcode(status)
        self._drop_link()
        self.server = None
        self._server_deadline = None
        before = self._change("exited")
        if self.phase is ServerPhase.STOPPING:
            return
        if before is ServerPhase.RESTARTING:
            self._next_start = time.monotonic()
            return
        served = before is ServerPhase.SERVING
        self._failed_starts = 0 if served else self._failed_starts + 1
        delay = RESTART_BACKOFF[min(self._failed_starts, len(RESTART_BACKOFF) - 1)]
        log.warning(
            "the server process exited (%s); starting another%s; programs keep running",
            f"status {code}" if code >= 0 else f"signal {-code}",
            f" in {delay:g} s" if delay else "",
        )
        self._next_start = time.monotonic() + delay

    def _restart(self) -> None:
        if self.phase not in (ServerPhase.STARTING, ServerPhase.SERVING):
            return
        log.info("restarting the server process (programs keep running)")
        self._change("restart")
        self._tell_server(wire.Restart(), deadline=SERVER_STOP_SECONDS * 2)

    def _upgrade(self) -> None:
        """``ptyvisor restart --upgrade``: a planned restart, then, once the server has
        handed over and gone, this keeper re-executed with the installed code, if that
        code says it can take over (takeover.py); if not, the restart is all."""
        if self.phase is ServerPhase.STOPPING or self._upgrade_due:
            return
        refusal = takeover.installed_accepts()
        if refusal is not None:
            log.warning(
                "the installed ptyvisor cannot take over from this keeper (%s); "
                "restarting the server process only",
                refusal,
            )
        else:
            self._upgrade_due = True
        self._restart()

    def _upgrade_in_place(self) -> None:
        """Re-execute this process as ``serve --take-over`` with every descriptor the
        state names kept open; returns only if that failed (the old code goes on)."""
        self._upgrade_due = False
        state = takeover.State(
            config={
                **self.config.to_json(),
                "url": self.config.url,
                "control_path": self.config.control_path,
            },
            explicit_token=self._explicit_token,
            verbose=self._verbose,
            lock=self._lock,
            tcp=self.tcp.fileno(),
            control=None if self.control is None else self.control.fileno(),
            programs=[asdict(program) for program in self.programs.values()],
            handover=None if self._handover is None else [asdict(h) for h in self._handover],
        )
        fd = takeover.write(state)
        kept = [*state.descriptors, fd]
        for descriptor in kept:
            os.set_inheritable(descriptor, True)
        log.info(
            "upgrading in place: re-executing the keeper (pid %d) with %d programs",
            os.getpid(),
            len(self.programs),
        )
        for handler in logging.getLogger().handlers:
            handler.flush()
        try:
            os.execv(sys.executable, [sys.executable, "-m", "ptyvisor", "serve", "--take-over",
                                      str(fd)])  # fmt: skip
        except OSError as error:
            for descriptor in kept:
                os.set_inheritable(descriptor, False)
            os.close(fd)
            log.error("cannot re-execute the keeper (%s); it goes on as it was", error)

    def _tell_server(self, message: wire.ToServer, *, deadline: float) -> None:
        if self.server is None:
            return
        if self.link is not None:
            self._send(message)
        self._server_deadline = time.monotonic() + deadline

    # ------------------------------------------------------------------ the link

    def _send(self, message: wire.ToServer, fds: list[int] | None = None) -> None:
        if self.link is None:
            return
        self._outgoing.append(wire.encode(message, fds or ()))
        self._flush()

    def _flush(self) -> None:
        while self._outgoing and self.link is not None:
            packet, fds, blob = self._outgoing[0]
            try:
                socket.send_fds(self.link, [packet], fds)
            except BlockingIOError:
                return
            except OSError:
                self._drop_link()
                return
            self._outgoing.popleft()
            if blob is not None:
                os.close(blob)

    def _read_link(self) -> None:
        """Handle what the server sent. A message that is not one of the link's, or
        whose handling fails, costs that message (logged), never the keeper."""
        assert self.link is not None
        while self.link is not None:
            try:
                received = wire.receive(self.link)
            except BlockingIOError:
                return
            except (Truncated, BadLinkMessage) as bad:
                self._last_heard = time.monotonic()
                log.warning("a message from the server process was dropped: %s", bad)
                continue
            except OSError:
                received = None
            if received is None:
                self._drop_link()  # the server is going; SIGCHLD tells when it is gone
                return
            message, fds = received
            self._last_heard = time.monotonic()
            try:
                self._handle(message)
            except Exception:
                log.exception("handling %s from the server process failed", message.op)
            finally:
                for fd in fds:  # nothing the server sends carries descriptors we keep
                    os.close(fd)

    def _drop_link(self) -> None:
        if self.link is None:
            return
        self._selector.unregister(self.link)
        self.link.close()
        self.link = None
        for _packet, _fds, blob in self._outgoing:
            if blob is not None:
                os.close(blob)
        self._outgoing.clear()

    def _handle(self, message: wire.Message) -> None:
        match message:
            case wire.Spawn():
                self._spawn(message)
            case wire.Size(session=session, cols=cols, rows=rows):
                program = self.programs.get(session)
                if program is not None:
                    program.cols, program.rows = cols, rows
            case wire.IdentityChanged(session=session, identity=identity):
                program = self.programs.get(session)  # renamed: what the next server
                if program is not None:  # adopts it as
                    program.identity = identity
            case wire.Forget(session=session):
                self._forget(session)
            case wire.Handover(sessions=sessions):
                self._handover = sessions
            case wire.Ready():
                self._change("ready")
                if not self._announced:
                    self._announced = True
                    lines = serve_options.announce(self.config, explicit_token=self._explicit_token)
                    background.announce(self._announce_fd, lines)
                    self._announce_fd = None
                    notify("READY=1", f"STATUS=serving on {self.config.url}")
            case wire.Pong():
                pass  # heard: that is all a pong is for
            case _:
                log.warning("the server process sent %s, which only the keeper sends", message.op)

    # ------------------------------------------------------------------ programs

    def _spawn(self, message: wire.Spawn) -> None:
        """Start a program; every request gets an answer, whatever goes wrong (the
        server waits for it)."""
        try:
            self._start_program(message.id, message.spec)
        except Exception as error:
            log.exception("cannot start a program")
            self._send(wire.SpawnFailed(id=message.id, reason=f"keeper: {error}"))

    def _start_program(self, request: int, spec: wire.ProgramSpec) -> None:
        try:
            started = spawn.start(
                spec.argv, cwd=spec.cwd, env=spec.env, cols=spec.cols, rows=spec.rows
            )
        except SpawnError as error:
            self._send(wire.SpawnFailed(id=request, reason=str(error)))
            return
        try:
            ring_fd = ring.create(spec.ring_capacity)
        except OSError as error:
            _kill_and_reap(started.pid)
            os.close(started.fd)
            self._send(wire.SpawnFailed(id=request, reason=f"no memory: {error}"))
            return
        program = Program(
            session=spec.session_id,
            pid=started.pid,
            master=started.fd,
            ring=ring_fd,
            tty=started.tty,
            identity=spec.identity,
            cols=spec.cols,
            rows=spec.rows,
        )
        self.programs[program.session] = program
        self._by_pid[program.pid] = program
        spawned = wire.Spawned(
            id=request, session=program.session, pid=program.pid, tty=program.tty
        )
        self._send(spawned, [program.master, program.ring])
        self._reap()  # it may be gone already (SIGCHLD came before it was known)

    def _forget(self, session: str) -> None:
        program = self.programs.pop(session, None)
        if program is None:
            return
        if program.status is None:
            # Still running (the server gave up on it): stop it like the rest.
            _signal_tree(program.pid, signal.SIGHUP)
        self._by_pid.pop(program.pid, None)
        os.close(program.master)
        os.close(program.ring)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.server is not None and pid == self.server.pid:
                self.server.returncode = os.waitstatus_to_exitcode(status)
                self._server_exited(status)
                continue
            program = self._by_pid.get(pid)
            if program is None:
                continue  # an orphan a program left behind (we are its subreaper)
            program.status = status
            self._send(wire.Exited(session=program.session, status=status))

    def _stop_programs(self) -> None:
        """HUP every process we own (and CONT, so stopped jobs see it), KILL what is
        left after the grace period, and reap everything."""
        everything = proctable.descendants(os.getpid())
        if everything:
            log.info("stopping %d processes of %d programs", len(everything), len(self.programs))
        for signum in (signal.SIGHUP, signal.SIGCONT):
            for pid in everything:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signum)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while time.monotonic() < deadline and self._reap_all_dead():
            time.sleep(0.02)
        for pid in proctable.descendants(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while time.monotonic() < deadline and self._reap_all_dead():
            time.sleep(0.01)

    def _reap_all_dead(self) -> bool:
        """Reap what has exited; whether anything of ours is still alive."""
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        return bool(proctable.descendants(os.getpid()))

    def _close(self) -> None:
        for program in self.programs.values():
            with contextlib.suppress(OSError):
                os.close(program.master)
            with contextlib.suppress(OSError):
                os.close(program.ring)
        self.tcp.close()
        if self.control is not None:
            self.control.close()
            with contextlib.suppress(OSError):
                os.unlink(self.config.control_path)


def _signal_tree(pid: int, signum: int) -> None:
    for member in [pid, *proctable.descendants(pid)]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(member, signum)


def _kill_and_reap(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
