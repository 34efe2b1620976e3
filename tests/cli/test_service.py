"""``ptyvisor service install`` / ``uninstall``: the user unit written, checked by
systemd's own parser (``systemd-analyze verify``, where installed), and removed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ptyvisor.cli.service import command_line

from .test_commands import clean_env, run_cli

ANALYZE = shutil.which("systemd-analyze")


def verify(unit: Path) -> str:
    """What systemd says about the unit: nothing when it reads every line."""
    assert ANALYZE is not None
    result = subprocess.run(
        [ANALYZE, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    return (result.stderr + result.stdout).strip()


@pytest.mark.parametrize("state", ["state", "a state dir/with 100% and $HOME"])
def test_install_writes_a_unit_systemd_reads_and_uninstall_removes_it(
    tmp_path: Path, state: str
) -> None:
    env = clean_env(tmp_path / "home", tmp_path / state)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    unit = tmp_path / "config" / "systemd" / "user" / "ptyvisor.service"
    installed = run_cli("service", "install", "--port", "7799", env=env)
    assert installed.returncode == 0 and f"wrote {unit}" in installed.stdout, installed.stderr
    text = unit.read_text()
    [exec_start] = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    python, _, rest = exec_start.removeprefix("ExecStart=").partition(" ")
    assert Path(python).resolve() == Path(sys.executable).resolve()  # this ptyvisor's Python
    state_dir = ["--state-dir", str(tmp_path / state)]
    assert rest == command_line(["-m", "ptyvisor", "serve", "--port", "7799", *state_dir])
    for line in ("Type=notify", "KillMode=mixed", "WantedBy=default.target"):
        assert f"\n{line}\n" in text
    assert "ExecReload=" in text and " restart " in text
    if ANALYZE is not None:
        assert verify(unit) == ""
    removed = run_cli("service", "uninstall", env=env)
    assert removed.returncode == 0 and not unit.exists(), removed.stderr
    again = run_cli("service", "uninstall", env=env)
    assert again.returncode == 1 and "no unit" in again.stderr


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
def test_a_damaged_unit_is_what_verify_would_catch(tmp_path: Path) -> None:
    """The check above can fail: systemd complains about a line it cannot read."""
    env = clean_env(tmp_path / "home", tmp_path / "state")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    assert run_cli("service", "install", env=env).returncode == 0
    unit = tmp_path / "config" / "systemd" / "user" / "ptyvisor.service"
    unit.write_text(unit.read_text().replace("KillMode=mixed", "KillMode=gently"))
    assert "kill mode" in verify(unit)


def test_command_lines_quote_what_systemd_would_read_otherwise() -> None:
    assert command_line(["/usr/bin/python3", "-m", "ptyvisor"]) == "/usr/bin/python3 -m ptyvisor"
    assert command_line(["/a b/c", '"q"', "50%", "$X", "a\\b"]) == (
        '"/a b/c" "\\"q\\"" "50%%" "$$X" "a\\\\b"'
    )
