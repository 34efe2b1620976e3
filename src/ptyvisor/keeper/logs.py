"""``serve``'s log: one setup for the keeper and the server process, whose lines
cannot act on the terminal that shows them (see untrusted.py).

Stdlib only: the keeper uses it.
"""

from __future__ import annotations

import logging

from ptyvisor.wire.untrusted import printable

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
    its warnings are kept."""
    root = logging.getLogger()
    if not any(isinstance(h.formatter, InertFormatter) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(InertFormatter(FORMAT))
        root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger("websockets").setLevel(logging.WARNING)
