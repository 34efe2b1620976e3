"""Tests for ``ptyvisor emit``, run as a real subprocess writing to a real PTY."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ptyvisor.agents.emit import MAX_REASON_CHARS, PHASES, write_frame
from ptyvisor.wire.frames import decode_frame
from ptyvisor.wire.scanner import FrameScanner

from ..conftest import Pty, env_without_ptyvisor, extension_session_env

SID = "test-session_1"
NONCE = "0123456789abcdef0123456789abcdef"
EMIT = "import sys; from ptyvisor.agents.emit import main; sys.exit(main(sys.argv[1:]))"


def session_env(tty_path: str) -> dict[str, str]:
    return extension_session_env(SID, NONCE, tty_path)


def run_emit(
    args: list[str], env: dict[str, str], *, code: str = EMIT
) -> subprocess.CompletedProcess[str]:
    # start_new_session: no controlling terminal, so /dev/tty can never be the
    # developer's terminal and the fallback path is deterministic.
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,
        check=False,
    )


def decode_single(data: bytes) -> dict[str, object]:
    result = FrameScanner().feed(data)
    assert result.output == b""
    assert len(result.frames) == 1
    payload = decode_frame(result.frames[0], SID, NONCE)
    assert isinstance(payload, dict), payload
    return payload


def test_emit_writes_one_authentic_frame(pty_pair: Pty) -> None:
    before = time.time_ns() // 1_000_000
    proc = run_emit(
        [
            "activity",
            "needs_input",
            "--reason",
            "Permission: run `rm -rf build`?",
            "--agent=claude",
            "--native-session-id",
            "abc-123",
        ],
        session_env(pty_pair.path),
    )
    after = time.time_ns() // 1_000_000
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    payload = decode_single(pty_pair.read_available())
    at = payload.pop("at")
    assert isinstance(at, int)
    assert before <= at <= after
    assert payload == {
        "type": "activity",
        "phase": "needs_input",
        "agent": "claude",
        "reason": "Permission: run `rm -rf build`?",
        "native_session_id": "abc-123",
    }


@pytest.mark.parametrize("phase", PHASES)
def test_every_phase_is_accepted(pty_pair: Pty, phase: str) -> None:
    proc = run_emit(["activity", phase], session_env(pty_pair.path))
    assert proc.returncode == 0
    payload = decode_single(pty_pair.read_available())
    assert set(payload) == {"type", "phase", "at"}
    assert payload["phase"] == phase


def test_reason_is_truncated(pty_pair: Pty) -> None:
    reason = "é" * (MAX_REASON_CHARS + 500)
    proc = run_emit(["activity", "failed", "--reason", reason], session_env(pty_pair.path))
    assert proc.returncode == 0
    assert decode_single(pty_pair.read_available())["reason"] == "é" * MAX_REASON_CHARS


def test_option_value_may_look_like_an_option(pty_pair: Pty) -> None:
    proc = run_emit(
        ["activity", "--reason", "--agent", "--", "waiting"], session_env(pty_pair.path)
    )
    assert proc.returncode == 0
    payload = decode_single(pty_pair.read_available())
    assert (payload["phase"], payload["reason"]) == ("waiting", "--agent")


@pytest.mark.parametrize(
    "env",
    [
        env_without_ptyvisor(),
        env_without_ptyvisor(PTYVISOR_SESSION=SID),
        env_without_ptyvisor(PTYVISOR_NONCE=NONCE),
        env_without_ptyvisor(PTYVISOR_SESSION=SID, PTYVISOR_NONCE="not-a-nonce"),
        env_without_ptyvisor(PTYVISOR_SESSION="bad id", PTYVISOR_NONCE=NONCE),
    ],
    ids=["none", "no-nonce", "no-session", "bad-nonce", "bad-session"],
)
def test_outside_a_session_is_a_silent_no_op(pty_pair: Pty, env: dict[str, str]) -> None:
    env["PTYVISOR_TTY"] = pty_pair.path
    proc = run_emit(["activity", "working"], env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert pty_pair.read_available(0.2) == b""


def test_unopenable_tty_and_no_controlling_tty_exits_zero(tmp_path: Path) -> None:
    env = session_env(str(tmp_path / "missing"))
    proc = run_emit(["activity", "working"], env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_non_terminal_path_is_not_written(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"")
    proc = run_emit(["activity", "working"], session_env(str(target)))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert target.read_bytes() == b""


def test_falls_back_to_controlling_tty(pty_pair: Pty, tmp_path: Path) -> None:
    # Become session leader (start_new_session) and acquire the PTY as the
    # controlling terminal by opening it without O_NOCTTY, then emit.
    code = (
        "import os, sys; os.open(sys.argv[1], os.O_RDWR); del sys.argv[1]; "
        "from ptyvisor.agents.emit import main; sys.exit(main(sys.argv[1:]))"
    )
    env = session_env(str(tmp_path / "missing"))
    proc = run_emit([pty_pair.path, "activity", "starting"], env, code=code)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert decode_single(pty_pair.read_available())["phase"] == "starting"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["activity", "dancing"], "unknown phase"),
        (["activity"], "missing <phase>"),
        ([], "activity"),
        (["status", "working"], "activity"),
        (["activity", "working", "--colour", "red"], "unknown option"),
        (["activity", "working", "--reason"], "needs a value"),
        (["activity", "working", "extra"], "unexpected argument"),
    ],
)
def test_usage_errors_exit_2(pty_pair: Pty, args: list[str], message: str) -> None:
    proc = run_emit(args, session_env(pty_pair.path))
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "usage:" in proc.stderr
    assert proc.stdout == ""
    assert pty_pair.read_available(0.2) == b""


@pytest.mark.parametrize("args", [["--help"], ["activity", "-h"]])
def test_help(args: list[str]) -> None:
    proc = run_emit(args, env_without_ptyvisor())
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("usage: ptyvisor emit activity")


def test_emit_imports_nothing_heavy() -> None:
    code = "import sys, json, ptyvisor.agents.emit; print(json.dumps(sorted(sys.modules)))"
    proc = run_emit([], env_without_ptyvisor(), code=code)
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(proc.stdout))
    ours = {m for m in modules if m == "ptyvisor" or m.startswith("ptyvisor.")}
    assert ours <= {
        "ptyvisor",
        "ptyvisor.agents",
        "ptyvisor.agents.emit",
        "ptyvisor.wire",
        "ptyvisor.wire.cjson",
        "ptyvisor.wire.frame_encoding",
    }
    heavy = {
        "pydantic",
        "anyio",
        "websockets",
        "pyte",
        "ptyprocess",
        "argparse",
        "asyncio",
        "typing",
    }
    assert not modules & heavy


def test_write_frame_in_process(pty_pair: Pty) -> None:
    env = session_env(pty_pair.path)
    assert write_frame({"type": "activity", "phase": "working", "at": 1}, env)
    assert decode_single(pty_pair.read_available()) == {
        "type": "activity",
        "phase": "working",
        "at": 1,
    }


def test_a_reused_pts_path_is_not_the_sessions_any_more(pty_pair: Pty) -> None:
    """A hook that outlives its session (Codex runs hooks outside the program's
    process session) must not write into the next PTY given the same /dev/pts/N."""
    env = session_env(pty_pair.path)
    payload = {"type": "activity", "phase": "stopped", "at": 1}
    now = os.stat(pty_pair.path).st_ctime_ns
    env["PTYVISOR_TTY_ID"] = str(now - 1)  # the PTY that had this path before
    assert not write_frame(payload, env)
    assert pty_pair.read_available() == b""
    env["PTYVISOR_TTY_ID"] = str(now)
    assert write_frame(payload, env)
    assert decode_single(pty_pair.read_available()) == payload


def test_the_kernel_gives_a_reused_pts_path_a_new_change_time(tmp_path: Path) -> None:
    """What PTYVISOR_TTY_ID relies on: devpts makes a new inode for every PTY, stamped
    with the (coarse, a few ms) clock, so a PTY that lived past one tick and the one
    given its path next differ."""
    probe = tmp_path / "clock"
    for _ in range(20):
        master, slave = os.openpty()
        path, before = os.ttyname(slave), os.fstat(slave).st_ctime_ns
        while True:  # the session lives on past the inode clock's tick
            probe.touch()
            if os.stat(probe).st_ctime_ns > before:
                break
        os.close(slave)
        os.close(master)
        master, slave = os.openpty()
        try:
            if os.ttyname(slave) == path:
                assert os.fstat(slave).st_ctime_ns != before
                return
        finally:
            os.close(slave)
            os.close(master)
    pytest.fail("the kernel never reused a /dev/pts path")


def test_write_frame_refuses_unframeable_payload(pty_pair: Pty) -> None:
    env = session_env(pty_pair.path)
    assert not write_frame({"reason": "x" * 70_000}, env)
    assert not write_frame({"bad": object()}, env)
    assert pty_pair.read_available(0.2) == b""


def test_write_frame_outside_session_returns_false() -> None:
    assert not write_frame({"type": "activity"}, env_without_ptyvisor())
