"""The JavaScript client (clients/js) against a real ``ptyvisor serve``: its own tests,
run by Node's test runner on the pinned Node 22 the agents use (its WebSocket is
Node's own): exact replay across ``ptyvisor restart`` and a ``kill -9`` of the server
process, a flood that makes it lag and redraw, and a real hook's approval answered
by two clients at once."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ptyvisor.wire.typescript import wire_typescript
from tests.agents.clis.installed import agent_bin_dir
from tests.timeouts import scaled

from ..conftest import PTYVISOR_BIN, wait_for
from ..keeper.conftest import Serve
from ..server.test_control import BASH, WRAPPER

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "js"


def test_the_javascript_client_against_a_real_server(tmp_path: Path, env: dict[str, str]) -> None:
    # A small client buffer: the flood test's client lags behind it.
    serve = Serve(tmp_path, env, "--client-buffer", "262144")
    hooks = tmp_path / "hook"
    hooks.mkdir()
    (hooks / "payload.json").write_text(json.dumps(BASH))
    (hooks / "wrap.py").write_text(WRAPPER)
    port = serve.url.split("://", 1)[1].split("/", 1)[0]
    node_env = {
        **env,
        "PTYVISOR_TEST_URL": f"ws://{port}/ws",
        "PTYVISOR_TEST_SERVE_URL": serve.url,
        "PTYVISOR_BIN": PTYVISOR_BIN,
        "PTYVISOR_KEEPER_PID": str(serve.proc.pid),
        "PTYVISOR_TEST_HOOK_DIR": str(hooks),
        "PTYVISOR_TEST_PYTHON": sys.executable,
        "PATH": f"{Path(PTYVISOR_BIN).parent}{os.pathsep}{env.get('PATH', '')}",
    }
    try:
        result = subprocess.run(
            [str(agent_bin_dir() / "node"), "--test", "--test-reporter=spec", "test/*.test.mjs"],
            cwd=PACKAGE,
            env=node_env,
            capture_output=True,
            text=True,
            timeout=scaled(240),
            check=False,
        )
    finally:
        serve.stop()
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    summary = dict(re.findall("^\u2139 (pass|fail) (\\d+)$", result.stdout, re.MULTILINE))
    assert summary == {"pass": "3", "fail": "0"}, result.stdout[-3000:]


def test_it_type_checks_strictly_and_types_a_typescript_frontend(tsc: Path, tmp_path: Path) -> None:
    """The pinned tsc checks the client's JavaScript (its JSDoc) with --strict and
    emits the declarations `npm pack` ships; a TypeScript frontend compiles against
    them."""
    # The package as `npm pack` sees it: its wire types generated from the schema.
    package = tmp_path / "package"
    shutil.copytree(PACKAGE / "src", package / "src")
    shutil.copy(PACKAGE / "tsconfig.json", package)
    (package / "src" / "wire.d.ts").write_text(wire_typescript(), encoding="utf-8")
    types = tmp_path / "types"
    checked = subprocess.run(
        [str(tsc), "-p", str(package), "--outDir", str(types)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shutil.copy(package / "src" / "wire.d.ts", types / "wire.d.ts")
    shutil.copy(Path(__file__).with_name("usage.ts"), tmp_path / "usage.ts")
    compiled = subprocess.run(
        [
            str(tsc),
            "--noEmit",
            "--strict",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
            "--lib",
            "es2022,dom",
            str(tmp_path / "usage.ts"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    # What `npm pack` puts in the tarball an Electron app installs (its prepack
    # script did the steps above).
    shutil.copy(PACKAGE / "package.json", package)
    shutil.copy(PACKAGE / "README.md", package)
    shutil.copytree(types, package / "types")
    packed = subprocess.run(
        [shutil.which("npm") or "npm", "pack", "--ignore-scripts", "--dry-run", "--json"],
        cwd=package,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert packed.returncode == 0, packed.stderr
    files = {entry["path"] for entry in json.loads(packed.stdout)[0]["files"]}
    assert {"src/index.js", "src/wire.d.ts", "types/index.d.ts", "types/wire.d.ts"} <= files


def test_the_minimal_frontend_example_shows_a_session(tmp_path: Path, env: dict[str, str]) -> None:
    """examples/minimal_frontend.mjs against a real server: the session's screen."""
    serve = Serve(tmp_path, env)
    try:
        started = serve.cli("run", "-d", "--", "sh", "-c", "echo shown-by-the-example; exec cat")
        assert started.returncode == 0, started.stderr
        port = serve.url.split("://", 1)[1].split("/", 1)[0]
        with subprocess.Popen(
            [str(agent_bin_dir() / "node"), str(ROOT / "examples" / "minimal_frontend.mjs")],
            env={**env, "PTYVISOR_URL": f"ws://{port}/ws"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as example:
            assert example.stdout is not None and example.stderr is not None
            out, err = example.stdout, example.stderr
            os.set_blocking(out.fileno(), False)  # read what has come so far
            shown = b""

            def read() -> bool:
                nonlocal shown
                shown += out.read() or b""
                assert example.poll() is None, shown + err.read()
                return b"shown-by-the-example" in shown

            try:
                wait_for(read, "the example to show the session's screen")
            finally:
                example.kill()
    finally:
        serve.stop()
