"""The module paths others depend on keep working across the layout's moves: what an
agent started by an earlier version runs on every tool call, what an earlier keeper
starts at a restart after an upgrade, and the public Python API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import env_without_ptyvisor


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        input=stdin,
        env=env_without_ptyvisor(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_hook_entry_point_of_earlier_agents_still_runs() -> None:
    """``python -m ptyvisor.hooks AGENT`` (in the settings of running agents): outside a
    session, as here, it reads nothing, prints nothing and succeeds."""
    for module in ("ptyvisor.hooks", "ptyvisor.agents.hooks"):
        result = run("-m", module, "claude-code", stdin='{"hook_event_name": "Stop"}')
        assert (result.returncode, result.stdout) == (0, ""), (module, result.stderr)


def test_the_server_entry_point_of_earlier_keepers_still_runs() -> None:
    """``python -m ptyvisor.worker LINK TCP CONTROL``: given no keeper's link, it says
    so and exits 3, as the server process does."""
    for module in ("ptyvisor.worker", "ptyvisor.server.worker"):
        result = run("-m", module, "-1", "-1", "-1")
        assert result.returncode == 3, (module, result.stderr)
        assert "cannot start under the keeper" in result.stderr


def test_the_public_python_api() -> None:
    code = (
        "import ptyvisor, ptyvisor.sync, ptyvisor.errors; "
        "assert callable(ptyvisor.connect) and callable(ptyvisor.sync.connect); "
        "assert issubclass(ptyvisor.sync.WaitTimeout, ptyvisor.errors.ClientError)"
    )
    result = run("-c", code)
    assert result.returncode == 0, result.stderr


def test_the_tests_mirror_the_modules() -> None:
    """A folder of tests named like a package of ``src/ptyvisor`` holds that package's
    module tests, ``test_<module>.py``, so a rename that leaves a test file behind is
    seen here. Tests of a feature across modules sit in ``tests/`` itself; the real
    agent CLIs in ``tests/agents/clis/`` and the page in ``tests/web/``."""
    tests = Path(__file__).resolve().parent
    package = tests.parent / "src" / "ptyvisor"
    mirrored = [
        d for d in tests.rglob("*") if (package / d.relative_to(tests) / "__init__.py").is_file()
    ]
    assert {d.relative_to(tests).as_posix() for d in mirrored} >= {
        "agents", "cli", "client", "keeper", "server", "server/session", "terminal", "wire"
    }  # fmt: skip

    def names_a_module(test: Path) -> bool:
        module = package / test.parent.relative_to(tests) / test.stem.removeprefix("test_")
        return module.is_dir() or module.with_suffix(".py").is_file()

    strays = [
        test.relative_to(tests).as_posix()
        for folder in mirrored
        for test in folder.glob("test_*.py")
        if not names_a_module(test)
    ]
    assert not strays, f"test files named after no module: {strays}"
