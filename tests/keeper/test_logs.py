"""serve's log (keeper/logs.py): a line of it cannot act on the terminal that shows
it nor pass for another line, whatever a session's name or a program's error holds;
and the terminal serve started in may go away without taking serve with it."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.keeper.logs import FORMAT, LOG_FILE, InertFormatter

from ..conftest import Pty, wait_for

UNSAFE = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))} | {"\u202e", "\u2028"}


def formatted(message: str, *args: object, exc: BaseException | None = None) -> str:
    record = logging.LogRecord("ptyvisor.test", logging.WARNING, __file__, 1, message, args, None)
    if exc is not None:
        record.exc_info = (type(exc), exc, exc.__traceback__)
    return InertFormatter(FORMAT).format(record)


@given(st.text(max_size=40))
def test_a_message_is_one_line_that_cannot_act_on_a_terminal(name: str) -> None:
    line = formatted("session %s ended", name)
    assert not UNSAFE & set(line), repr(line)
    assert line.split(" ", 2)[2].startswith("WARNING ptyvisor.test: session ")


def test_the_escapes_show_what_was_there() -> None:
    line = formatted("name %r and %s", "x", "\x1b]0;owned\x07\nFORGED ERROR")
    assert "\\x1b]0;owned\\x07\\nFORGED ERROR" in line and "\n" not in line


def test_a_traceback_keeps_its_lines_but_not_a_control_character() -> None:
    try:
        raise RuntimeError("bad \x1b[2J name\nsecond line")
    except RuntimeError as error:
        text = formatted("it failed", exc=error)
    first, *rest = text.split("\n")
    assert first.endswith("WARNING ptyvisor.test: it failed")
    assert rest[0] == "Traceback (most recent call last):"
    assert "RuntimeError: bad \\x1b[2J name" in rest and "second line" in rest
    assert "\x1b" not in text


HUNG_UP = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from ptyvisor.keeper.logs import TerminalOutput, configure, log
    configure(False)
    output = TerminalOutput(Path(sys.argv[1]))
    print("on terminal", output.on_terminal, flush=True)
    moved = output.hung_up()
    print("moved", moved, "again", output.hung_up(), flush=True)
    log.warning("after \\x1b[31m")
    print("stdin", os.read(0, 10), flush=True)
    """
)


def test_a_closed_terminal_moves_the_output_to_the_log(tmp_path: Path, pty_pair: Pty) -> None:
    """SIGHUP: from then on output goes to serve.log, input is /dev/null; with no
    terminal (a second SIGHUP), nothing moves and it is logged as ignored."""
    with open(pty_pair.path, "rb+", buffering=0) as tty:
        done = subprocess.run(
            [sys.executable, "-c", HUNG_UP, str(tmp_path)],
            stdin=tty,
            stdout=tty,
            stderr=tty,
            timeout=60,
            check=True,
        )
    assert done.returncode == 0
    on_terminal = wait_for(lambda: pty_pair.read_available(quiet=0.05), "the first line")
    assert b"on terminal True" in on_terminal
    log = (tmp_path / LOG_FILE).read_text()
    assert "moved True again False" in log
    assert "SIGHUP ignored" in log and "the terminal closed; serving on" in log
    assert "after \\x1b[31m" in log and "\x1b" not in log
    assert "stdin b''" in log, "input is /dev/null"
