"""The real agent CLIs, installed once per test session by ``scripts/install_agents.sh``.

Tests that drive the agents must fail, not skip, when they cannot be installed: a
silently skipped end-to-end suite proves nothing. So every problem raises
:class:`AgentsUnavailable` with the installer's own output.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from ptyvisor.agents.launch import PROGRAMS

__all__ = [
    "AGENTS",
    "INSTALL_SCRIPT",
    "AgentsUnavailable",
    "agent_bin_dir",
    "agent_command",
    "installed_bin_dir",
]

ROOT = Path(__file__).resolve().parents[3]
INSTALL_SCRIPT = ROOT / "scripts" / "install_agents.sh"

AGENTS: dict[str, str] = {name: program for name, program in PROGRAMS.items()}
"""Agent name -> its executable in ``node_modules/.bin`` (the launcher's own table)."""

INSTALL_TIMEOUT = 45 * 60
"""A cold install downloads about 1.2 GB; it takes well under a minute on a good link."""


class AgentsUnavailable(RuntimeError):
    """The pinned agent CLIs could not be installed or found."""


@functools.cache
def agent_bin_dir() -> Path:
    """Install the pinned CLIs (a no-op when already there) and return the bin directory.

    Cached for the process, so a pytest session runs the installer at most once.
    ``$PTYVISOR_AGENTS_BIN`` names another install's bin directory instead
    (scripts/check_agent_updates.sh: the newest versions).
    """
    given = os.environ.get("PTYVISOR_AGENTS_BIN")
    bin_dir = (
        Path(given)
        if given
        else installed_bin_dir(INSTALL_SCRIPT, "the agent CLIs", AgentsUnavailable)
    )
    missing = [name for name in AGENTS.values() if not (bin_dir / name).exists()]
    if missing:
        raise AgentsUnavailable(f"{INSTALL_SCRIPT.name} printed {bin_dir!s} but it lacks {missing}")
    return bin_dir


def installed_bin_dir(script: Path, what: str, failure: type[Exception]) -> Path:
    """Run one of the pinned npm installers (a no-op when its cache is complete) and
    return the ``node_modules/.bin`` it prints last; any problem raises ``failure``
    with the installer's own output."""
    if shutil.which("npm") is None:
        raise failure(
            f"npm is not on PATH: the tests need Node.js 20+ with npm to install {what} "
            f"({script.relative_to(ROOT)})"
        )
    try:
        result = subprocess.run(
            ["bash", str(script)],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
            env=os.environ.copy(),
        )
    except subprocess.TimeoutExpired as error:
        raise failure(f"{script.name} timed out after {error.timeout} s") from None
    if result.returncode != 0:
        raise failure(
            f"{script.name} failed with exit code {result.returncode}:\n"
            f"{result.stderr[-4000:]}{result.stdout[-2000:]}"
        )
    lines = result.stdout.strip().splitlines()
    if not lines:
        raise failure(f"{script.name} printed no directory: {result.stderr[-2000:]}")
    return Path(lines[-1])


def agent_command(agent: str) -> list[str]:
    """The argv prefix that runs ``agent``'s real binary (installing it if needed)."""
    try:
        name = AGENTS[agent]
    except KeyError:
        raise ValueError(f"unknown agent {agent!r}; known: {', '.join(AGENTS)}") from None
    return [str(agent_bin_dir() / name)]
