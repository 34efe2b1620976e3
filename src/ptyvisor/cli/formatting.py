"""What the command line prints: ``ls``'s table, ``capture``'s text or JSON, event
lines for ``events``, and how a program ended.

Names, reasons, commands and interaction titles come from inside sessions, and any
of them may hold escape sequences: everything the CLI prints that it did not write
itself goes through `say` (or a cell through `untrusted.printable`), which shows
control characters instead of sending them to the user's terminal. Only
``capture`` (the program's own screen) and an attached terminal pass a program's
output on as it is.
"""

from __future__ import annotations

import json
import shlex
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from ptyvisor.terminal.widths import cut_to_width, text_width
from ptyvisor.wire.protocol import (
    Captured,
    ProcessState,
    SessionSummary,
)
from ptyvisor.wire.untrusted import printable


def say(text: str = "", *, file: TextIO | None = None, end: str = "\n") -> None:
    """Print a line (or lines) of the CLI's own, which may quote untrusted text:
    control characters are shown, line breaks kept (a cell of a table is made
    printable whole first, so its own line breaks are shown too)."""
    out = sys.stdout if file is None else file
    out.write(printable(text, newlines=True) + end)
    out.flush()


def complain(text: str) -> None:
    """`say` on standard error."""
    say(text, file=sys.stderr)


PHASE_LABELS = {
    "unavailable": "Live",
    "starting": "Starting",
    "working": "Working",
    "needs_input": "Needs input",
    "waiting": "Ready",
    "failed": "Failed",
    "stopped": "Stopped",
}


def process_event(process: ProcessState) -> dict[str, Any]:
    return {
        "type": "process",
        "at": process.exited_at or int(time.time() * 1000),
        "state": process.state,
        "exit_code": process.exit_code,
        "signal": process.signal,
        "ended": process.ended,
    }


def event_text(event: dict[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event["at"] / 1000))
    if event["type"] == "activity":
        label = PHASE_LABELS.get(event["phase"], event["phase"])
        reason = f"  {printable(event['reason'])}" if event.get("reason") else ""
        return f"{when}  {label:<11}{reason}".rstrip()
    if event["type"] == "process":
        if event["state"] != "exited":
            return f"{when}  process {event['state']}"
        fields = {k: event[k] for k in ("state", "exit_code", "signal", "ended")}
        return f"{when}  process {ended_text(ProcessState.model_validate(fields))}"
    return f"{when}  session closed"


def format_capture(captured: Captured, *, json_output: bool) -> str:
    """``capture``'s output: the lines (blank lines at the end dropped), or JSON."""
    if json_output:
        document = {
            "session": captured.session,
            "size": captured.size.model_dump(),
            "rows": captured.rows,
            "scrollback": captured.scrollback,
            "cursor": {"row": captured.cursor_row, "col": captured.cursor_col},
            "title": captured.title,
            "modes": captured.modes.model_dump(),
        }
        return json.dumps(document, indent=2) + "\n"
    lines = [*captured.scrollback, *captured.rows]
    while lines and lines[-1] == "":
        lines.pop()
    return "".join(line + "\n" for line in lines)


def ended_text(process: ProcessState) -> str:
    """ "exited 3", "killed by SIGTERM": how a program ended, as the CLI says it."""
    if process.signal is not None:
        try:
            name = signal.Signals(process.signal).name
        except ValueError:
            name = f"signal {process.signal}"
        return f"killed by {name}"
    return f"exited {process.exit_code if process.exit_code is not None else '?'}"


LS_HEADER = (
    "ID", "NAME", "PROCESS", "ACTIVITY", "FOR", "AGENT", "REASON", "PENDING", "QUEUED",
    "CLIENTS", "COMMAND",
)  # fmt: skip
REASON_CHARS = 40


def format_table(
    sessions: list[SessionSummary],
    *,
    width: int | None = None,
    hosts: Sequence[str] | None = None,
    unreachable: Sequence[tuple[str, str]] = (),
) -> str:
    """``ls``'s table; ``width``: cut each row to it (a terminal's width); ``hosts``:
    a HOST column first, each session's (``ls --all-contexts``), then a line for each
    of ``unreachable`` (host, why)."""
    rows: list[tuple[str, ...]] = [LS_HEADER]
    now = time.time() * 1000
    for s in sessions:
        process: str = s.process.state
        if s.process.ended == "lost":
            process = "lost"
        elif s.process.state == "exited":
            process = ended_text(s.process)
        if s.past:
            process = f"past, {process}"
        reason = printable(" ".join((s.activity.reason or "").split())) or "-"
        reason = cut_to_width(reason, REASON_CHARS)
        row = (
            s.id,
            s.name,
            process,
            _activity_label(s),
            _ago(now - s.activity.since),
            s.agent or "-",
            reason,
            _pending(s),
            "yes" if s.queued_message is not None else "-",
            str(s.clients),
            shlex.join(s.command or s.argv),
        )
        rows.append(tuple(printable(cell) for cell in row))
    if hosts is not None:
        rows = [
            ("HOST", *rows[0]),
            *((printable(h), *r) for h, r in zip(hosts, rows[1:], strict=True)),
        ]
    lines = columns(rows)
    lines += [
        f"{printable(host)}  (cannot be reached: {printable(why)})" for host, why in unreachable
    ]
    if width is not None:
        lines = [cut_to_width(line, width) for line in lines]
    return "\n".join(lines)


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of printable cells aligned in columns, by the cells each takes on the
    terminal (a name in CJK takes two per character); the last column as long as it
    is."""
    widths = [max(text_width(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "".join(
            cell + " " * (width - text_width(cell) + 2)
            for cell, width in zip(row, widths, strict=False)
        )
        + row[-1]
        for row in rows
    ]


def _activity_label(s: SessionSummary) -> str:
    """The phase; ``?`` after it when inferred from the terminal, not reported."""
    label = PHASE_LABELS[s.activity.phase.value]
    return f"{label}?" if s.activity.source == "terminal" else label


PENDING_ID_CHARS = 12
"""How much of an interaction id ``ls`` shows: enough for ``answer`` as a prefix."""
PENDING_WHAT_CHARS = 30


def _pending(s: SessionSummary) -> str:
    """The pending interaction, short: its id (prefix), kind and tool or first question."""
    interaction = s.pending_interaction
    if interaction is None:
        return "-"
    if interaction.kind == "question" and interaction.questions:
        what = interaction.questions[0].question
    else:
        what = interaction.tool or interaction.title
    what = cut_to_width(printable(" ".join(what.split())), PENDING_WHAT_CHARS)
    return f"{interaction.id[:PENDING_ID_CHARS]} {interaction.kind}: {what}"


def _ago(ms: float) -> str:
    seconds = max(int(ms // 1000), 0)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"
