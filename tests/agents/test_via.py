"""The far side of ``run --via`` (agents/via.py), under a real PTY: its hello, the
setup line typed back without echo, and the agent it becomes (a stand-in ``pi`` that
prints what it was given; tests/agents/clis/test_via.py runs the real one over ssh)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import ptyprocess
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.agents.via import HELLO, ViaSetup, missing
from ptyvisor.wire.frames import decode_frame, new_nonce
from ptyvisor.wire.scanner import FrameScanner
from tests.timeouts import scaled

from ..conftest import env_without_ptyvisor

SID = "s0000abcd"
STAND_IN = """#!/bin/sh
printf 'ARGS:%s\\n' "$*"
printf 'ENV:%s:%s:%s:%s\\n' "$PTYVISOR_SESSION" "$PTYVISOR_NONCE" "$PTYVISOR_AGENT" \\
  "${PTYVISOR_TTY:+tty}"
printf 'FAR:%s\\n' "${PTYVISOR_URL:-none}"
"""


@given(
    st.text(min_size=1, max_size=20),
    st.lists(st.text(max_size=30), max_size=5),
    st.one_of(st.none(), st.text(max_size=40)),
)
def test_the_setup_line_reads_back_as_written(
    agent: str, args: list[str], resume: str | None
) -> None:
    setup = ViaSetup(SID, new_nonce(), agent, args, resume)
    line = setup.line()
    assert line.endswith(b"\n") and line.count(b"\n") == 1  # one line, whatever it holds
    back = ViaSetup.from_line(b"keys typed early" + line[:-1])
    assert (back.session, back.nonce, back.agent, back.args, back.resume) == (
        SID,
        setup.nonce,
        agent,
        args,
        resume,
    )


@given(st.binary(max_size=300))
def test_any_other_line_is_refused_as_a_value_error(line: bytes) -> None:
    with contextlib.suppress(ValueError):  # anything else fails the test
        ViaSetup.from_line(line)


def test_the_reason_is_one_line_naming_the_wrapper() -> None:
    assert missing(["ssh", "-t", "my host"], 127).startswith("the far side of 'ssh -t 'my host''")
    assert "status 255" in missing(["ssh", "-t", "far"], 255)


def _read_until(
    child: ptyprocess.PtyProcess, scanner: FrameScanner, done: Callable[[bytes, list[bytes]], bool]
) -> tuple[bytes, list[bytes]]:
    """Read the far side's terminal until ``done(output, frames)``, or its end."""
    output, frames = b"", list[bytes]()
    deadline = time.monotonic() + scaled(20)
    while not done(output, frames):
        assert time.monotonic() < deadline, output
        try:
            result = scanner.feed(child.read(4096))
        except EOFError:
            break
        output += result.output
        frames += result.frames
    return output, frames


@pytest.mark.timeout(60)
def test_the_far_side_says_hello_takes_its_setup_unechoed_and_becomes_the_agent(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pi").write_text(STAND_IN)
    (bin_dir / "pi").chmod(0o755)
    token, nonce = new_nonce(), new_nonce()
    env = {
        **env_without_ptyvisor(),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "PTYVISOR_URL": "ws://a-server-over-there/",  # the far machine's own: not passed on
    }
    child = ptyprocess.PtyProcess.spawn(
        [sys.executable, "-m", "ptyvisor", "via-exec", SID, token], env=env
    )
    try:
        scanner = FrameScanner()
        _, frames = _read_until(child, scanner, lambda _, frames: bool(frames))
        payload = decode_frame(frames[0], SID, token)
        assert isinstance(payload, dict) and payload["type"] == HELLO
        setup = ViaSetup(SID, nonce, "pi", ["--model", "fake/m"], None)
        child.write(setup.line())
        output, _ = _read_until(child, scanner, lambda out, _: b"FAR:none\r\n" in out)
    finally:
        child.terminate(force=True)
    assert nonce.encode() not in output.split(b"ENV:")[0], "the setup line was echoed"
    text = output.decode()
    assert "--extension" in text and "--model fake/m" in text
    assert f"ENV:{SID}:{nonce}:pi:tty" in text
    assert "FAR:none" in text
    assert (tmp_path / ".local/state/ptyvisor/via" / SID).is_dir()


def test_a_bad_token_or_no_terminal_is_one_line() -> None:
    bad = subprocess.run(
        [sys.executable, "-m", "ptyvisor", "via-exec", SID, "not-a-token"],
        capture_output=True,
        text=True,
        env=env_without_ptyvisor(),
        check=False,
    )
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1, bad.stderr
    piped = subprocess.run(
        [sys.executable, "-m", "ptyvisor", "via-exec", SID, new_nonce()],
        capture_output=True,
        text=True,
        env=env_without_ptyvisor(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert piped.returncode == 1 and "needs a terminal" in piped.stderr
