"""``serve``'s log: one setup for the keeper and the server process, whose lines
cannot act on the terminal that shows them (see untrusted.py).

Stdlib only: the keeper uses it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from ptyvisor.keeper.privatefiles import append_only
from ptyvisor.wire.untrusted import printable

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FILE = "serve.log"
"""Where ``serve`` writes once the terminal it was started in is gone, or in the
background."""

log = logging.getLogger("ptyvisor.serve")


class InertFormatter(logging.Formatter):
    """A log formatter whose records cannot act on the terminal that shows the log,
    nor forge a log line: the message (which may hold a session's name, a reason, a
    program's error) is one printable line; a traceback keeps its line breaks (an
    exception's message may add some, never a control character)."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = printable(record.getMessage())
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        text = self.formatMessage(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        extra = [record.exc_text or "", self.formatStack(record.stack_info or "")]
        for part in filter(None, extra):
            text += "\n" + printable(part, newlines=True)
        return text


def configure(verbose: bool) -> None:
    """Log to standard error through `InertFormatter` (once per process). websockets
    logs every refused handshake at INFO with its path, which may hold a token: only
    its warnings are kept. Apprise logs nothing."""
    root = logging.getLogger()
    if not any(isinstance(h.formatter, InertFormatter) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(InertFormatter(FORMAT))
        root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger("websockets").setLevel(logging.WARNING)
    # Apprise's own lines, and those of urllib3 under it, name the URL they reach, and
    # such URLs hold secrets: the server logs each failure itself, with the scheme only
    # (server/notifications.py).
    for chatty in ("apprise", "urllib3"):
        logging.getLogger(chatty).setLevel(logging.CRITICAL + 1)


def open_log(state_dir: Path) -> int:
    """``<state_dir>/serve.log`` for appending: ours only, never through a link."""
    return append_only(state_dir / LOG_FILE)


class TerminalOutput:
    """Where serve's output goes: the terminal it was started in, until that closes.

    A closed terminal, or the end of the login serve ran in, sends SIGHUP, which is no
    reason to stop: from then on standard output and error go to ``serve.log`` and
    input is ``/dev/null``, so nothing more is written to a terminal that is gone."""

    def __init__(self, state_dir: Path) -> None:
        self._state_dir = state_dir
        self.on_terminal = any(os.isatty(fd) for fd in (1, 2))

    def hung_up(self) -> bool:
        """SIGHUP: move output to the log if it went to a terminal; whether it moved."""
        if not self.on_terminal:
            log.info("SIGHUP ignored: serve stops on SIGTERM, SIGINT or ptyvisor stop")
            return False
        self.on_terminal = False
        log_fd = open_log(self._state_dir)
        null_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # to the closed terminal: lost
                stream.flush()
        os.dup2(null_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        os.close(null_fd)
        log.info("the terminal closed; serving on, logging to %s", self._state_dir / LOG_FILE)
        return True
