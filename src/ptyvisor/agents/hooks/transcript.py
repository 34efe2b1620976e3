"""An agent's transcript read back by a hook: its last records, bounded.

Gemini CLI and Factory Droid append one JSON record a line and pass the file's path in
their hook payloads; what a hook cannot learn from the payload (a turn's error, the
call a dialog is for) is in the records the turn just wrote. The path and the file are
the session's, so untrusted: only a regular file is read, a FIFO there does not hold
the hook (the agent waits for it), and only the last ``limit`` bytes are read.
"""

from __future__ import annotations

import os
import stat

from ptyvisor.wire import cjson

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from typing import Any


def last_records(path: object, limit: int) -> list[dict[str, Any]]:
    """The JSON objects among the last ``limit`` bytes' lines, oldest first; none if
    the file cannot be read. A line cut by the start of the tail, one being written
    and whatever is not an object are skipped."""
    if not isinstance(path, str) or not path:
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return []
            size = os.lseek(fd, 0, os.SEEK_END)
            os.lseek(fd, max(0, size - limit), os.SEEK_SET)
            tail = os.read(fd, limit).decode("utf-8", "replace")
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return []
    records: list[dict[str, Any]] = []
    for line in tail.splitlines():
        try:
            record = cjson.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
