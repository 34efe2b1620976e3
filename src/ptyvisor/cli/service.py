"""``ptyvisor service install`` / ``uninstall``: serve as a systemd user service.

The unit runs the keeper as its main process (``Type=notify``: systemd learns it
serves from ``READY=1``, see keeper/notify.py), so:

- ``systemctl --user stop ptyvisor`` is the documented stop: SIGTERM to the keeper
  only (``KillMode=mixed``), which stops and reaps every program; whatever is left
  when it has exited is killed, so nothing is left behind;
- ``systemctl --user reload ptyvisor`` is ``ptyvisor restart`` (programs keep running);
- a user service belongs to the user's service manager, not to a login session, so
  logging out does not end it; with nobody logged in the manager itself stops,
  unless ``loginctl enable-linger`` keeps it (docs/service.md says when).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ptyvisor.cli.formatting import complain, say
from ptyvisor.config import default_state_dir

UNIT = "ptyvisor.service"
PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=@+,-]+")


def unit_path() -> Path:
    """Where systemd looks for the user's own units."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user" / UNIT


def unit(python: str, port: int, state_dir: Path) -> str:
    """The unit file's text: serve on ``port`` and ``state_dir``, run by ``python``."""
    ptyvisor = [python, "-m", "ptyvisor"]
    place = ["--state-dir", str(state_dir)]
    serve = command_line([*ptyvisor, "serve", "--port", str(port), *place])
    url = f"ws://127.0.0.1:{port}/"
    reload = command_line([*ptyvisor, "restart", *place, "--url", url])
    return f"""[Unit]
Description=ptyvisor: coding-agent terminals, kept running
Documentation=https://pypi.org/project/ptyvisor/

[Service]
Type=notify
NotifyAccess=main
ExecStart={serve}
ExecReload={reload}
KillMode=mixed
TimeoutStopSec=30
Restart=on-failure

[Install]
WantedBy=default.target
"""


def command_line(argv: list[str]) -> str:
    """``argv`` as systemd reads a command line: a word with anything but plain
    characters double-quoted, and ``%`` (a specifier) and ``$`` (a variable) doubled."""
    words = []
    for arg in argv:
        escaped = arg.replace("%", "%%").replace("$", "$$")
        if not PLAIN_WORD.fullmatch(arg):
            escaped = '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
        words.append(escaped)
    return " ".join(words)


def run(options: argparse.Namespace) -> int:
    if options.action == "install":
        return install(options)
    return uninstall()


def install(options: argparse.Namespace) -> int:
    state_dir = (options.state_dir or default_state_dir()).absolute()
    path = unit_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(unit(sys.executable, options.port, state_dir))
    say(f"wrote {path}")
    if options.enable:
        if not _systemctl("daemon-reload") or not _systemctl("enable", "--now", UNIT):
            return 1
        say(f"started {UNIT}; `systemctl --user stop ptyvisor` stops it and its programs")
    else:
        say("start it: systemctl --user daemon-reload; systemctl --user enable --now ptyvisor")
    say("to keep it running while you are logged out: loginctl enable-linger")
    return 0


def uninstall() -> int:
    """Stop the service (its programs with it), disable it and remove the unit."""
    path = unit_path()
    if not path.exists():
        complain(f"ptyvisor service uninstall: no unit at {path}")
        return 1
    if shutil.which("systemctl") is not None:
        _systemctl("disable", "--now", UNIT, quiet=True)  # not running, or no manager
    path.unlink()
    if shutil.which("systemctl") is not None:
        _systemctl("daemon-reload", quiet=True)
    say(f"removed {path}")
    return 0


def _systemctl(*args: str, quiet: bool = False) -> bool:
    """``systemctl --user ARGS``; says what went wrong if it did, unless ``quiet``."""
    if shutil.which("systemctl") is None:
        complain("ptyvisor service: systemctl is not installed")
        return False
    result = subprocess.run(
        ["systemctl", "--user", *args], capture_output=True, text=True, check=False
    )
    if result.returncode != 0 and not quiet:
        complain(f"ptyvisor service: systemctl --user {' '.join(args)}: {result.stderr.strip()}")
    return result.returncode == 0
