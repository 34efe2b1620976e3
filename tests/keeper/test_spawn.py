"""A program starts under ptyvisor as from a clean login: default signal dispositions,
an empty signal mask, the documented environment, the usual descriptor limit, and
nothing of the server's own terminal. Real PTYs, real programs."""

from __future__ import annotations

import resource
import sys

import pytest

from ptyvisor.client.client import Client
from ptyvisor.keeper.spawn import ORIGINAL_NOFILE

from ..conftest import output_until

pytestmark = pytest.mark.anyio

SHOW_STATUS = "grep -E '^(SigIgn|SigBlk):' /proc/self/status; echo done"


async def test_signal_dispositions_are_default_and_the_mask_is_empty(client: Client) -> None:
    session = await client.spawn(["sh", "-c", SHOW_STATUS])
    await client.attach(session.id, since=0)
    output = (await output_until(client, b"done")).decode()
    assert "SigIgn:\t0000000000000000" in output, output
    assert "SigBlk:\t0000000000000000" in output, output


async def test_a_broken_pipe_ends_the_writer_as_in_a_terminal(client: Client) -> None:
    script = "yes | head -1; echo status=${PIPESTATUS[*]}; ls --color=always /usr/bin | head -2"
    session = await client.spawn(["bash", "-c", script + "; echo end"])
    await client.attach(session.id, since=0)
    output = (await output_until(client, b"end\r\n")).decode()
    assert "status=141 0" in output, output
    assert "Broken pipe" not in output and "write error" not in output, output


async def test_the_environment_is_the_documented_one(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the server were started inside tmux, in a terminal of its own.
    for name, value in {
        "TMUX": "/tmp/tmux-0/default,1,0",
        "TMUX_PANE": "%3",
        "TERM": "tmux-256color",
        "TERM_PROGRAM": "tmux",
        "COLUMNS": "100",
        "LINES": "40",
        "STY": "1.pts-0",
        "KITTY_WINDOW_ID": "1",
        "PTYVISOR_TOKEN": "server-secret",
        "KEEP_ME": "yes",
    }.items():
        monkeypatch.setenv(name, value)
    show = "env | sort; echo ID-NOW=$(stat -c %Z $PTYVISOR_TTY); echo done"
    session = await client.spawn(["sh", "-c", show])
    await client.attach(session.id, since=0)
    output = (await output_until(client, b"done")).decode().replace("\r\n", "\n")
    env = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
    for dropped in ("TMUX", "TMUX_PANE", "TERM_PROGRAM", "COLUMNS", "LINES", "STY"):
        assert dropped not in env, dropped
    assert "KITTY_WINDOW_ID" not in env and "PTYVISOR_TOKEN" not in env
    assert env["TERM"] == "xterm-256color"
    assert env["COLORTERM"] == "truecolor"
    assert env["KEEP_ME"] == "yes"
    assert env["PTYVISOR_SESSION"] == session.id
    assert env["PTYVISOR_TTY"].startswith("/dev/pts/")
    # Which PTY that path names: its inode's change time (stat -c %Z: in seconds).
    assert int(env["PTYVISOR_TTY_ID"]) // 10**9 == int(env["ID-NOW"])
    # A spawn's env may still set both.
    await client.detach()
    session = await client.spawn(
        ["sh", "-c", "echo T=$TERM C=$COLORTERM."], env={"TERM": "vt100", "COLORTERM": ""}
    )
    await client.attach(session.id, since=0)
    assert b"T=vt100 C=." in await output_until(client, b".\r\n")


async def test_programs_get_the_descriptor_limit_the_server_started_with(
    client: Client,
) -> None:
    original_soft = ORIGINAL_NOFILE[0]
    session = await client.spawn(["sh", "-c", "echo limit=$(ulimit -n)."])
    await client.attach(session.id, since=0)
    output = await output_until(client, b".\r\n")
    assert f"limit={original_soft}.".encode() in output, output
    # ... while the server itself runs with the raised one.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard in (soft, resource.RLIM_INFINITY)


async def test_only_the_terminal_is_inherited(client: Client) -> None:
    listing = f"{sys.executable} -c \"import os; print(sorted(os.listdir('/proc/self/fd')))\""
    session = await client.spawn(["sh", "-c", f"exec {listing}"])
    await client.attach(session.id, since=0)
    output = (await output_until(client, b"]")).decode()
    # 0-2: the terminal; 3: the listing's own directory handle.
    assert "['0', '1', '2', '3']" in output, output
