"""ptyvisor installs its extension for one session without displacing the user's own:
a hook / plugin / extension the user configured still runs beside ours, and the
user's configuration files are left exactly as they were."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.agents.clis.fake_model import FakeModelServer, Reply
from tests.agents.clis.offline import GEMINI_SETTINGS
from tests.agents.clis.ready import prompt_at_ready
from tests.agents.clis.under_ptyvisor import agent_session
from tests.timeouts import scaled

pytestmark = pytest.mark.anyio


def claude_user_hook(home: Path, marker: Path) -> list[Path]:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": f"touch {marker}"}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}))
    return [settings]


def opencode_user_plugin(home: Path, marker: Path, name: str = "opencode") -> list[Path]:
    plugin = home / ".config" / name / "plugins" / "mine.js"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_text(
        'import { writeFileSync } from "node:fs";\n'
        "export const Mine = async () => {\n"
        f"  writeFileSync({json.dumps(str(marker))}, 'loaded');\n"
        "  return {};\n"
        "};\n"
    )
    return [plugin]


def kilo_user_plugin(home: Path, marker: Path) -> list[Path]:
    return opencode_user_plugin(home, marker, "kilo")


def pi_user_extension(home: Path, marker: Path, folder: str = ".pi") -> list[Path]:
    extension = home / folder / "agent" / "extensions" / "mine.js"
    extension.parent.mkdir(parents=True, exist_ok=True)
    extension.write_text(
        'import { writeFileSync } from "node:fs";\n'
        "export default (pi) => {\n"
        f"  pi.on('session_start', async () => writeFileSync({json.dumps(str(marker))}, 'x'));\n"
        "};\n"
    )
    return [extension]


def oh_my_pi_user_extension(home: Path, marker: Path) -> list[Path]:
    """oh-my-pi loads Pi-style extensions from its agent folder too (the tests move it
    with ``PI_CODING_AGENT_DIR``, as for Pi)."""
    return pi_user_extension(home, marker, ".omp")


def gemini_user_hook(home: Path, marker: Path) -> list[Path]:
    """The user's own hook in their settings.json, which also holds what the offline
    run needs (so the test harness leaves the file as it is)."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": f"touch {marker}"}
    hooks = {"SessionStart": [{"matcher": "*", "hooks": [hook]}]}
    settings.write_text("// mine\n" + json.dumps({**GEMINI_SETTINGS, "hooks": hooks}))
    return [settings]


def qwen_user_hook(home: Path, marker: Path) -> list[Path]:
    """Qwen Code's user settings with a hook on the event ours reports Ready from, in
    its current format (``$version`` 4): Qwen itself rewrites an older one."""
    settings = home / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": f"touch {marker}"}
    user = {"$version": 4, "hooks": {"SessionStart": [{"hooks": [hook]}]}}
    settings.write_text(json.dumps(user, indent=2) + "\n")
    return [settings]


def droid_user_hook(home: Path, marker: Path) -> list[Path]:
    """Droid's user hooks file (``~/.factory/hooks.json``: the events at its top, no
    ``hooks`` key), beside the settings the offline run writes (which Droid itself
    rewrites: not the user's here)."""
    hooks = home / ".factory" / "hooks.json"
    hooks.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": f"touch {marker}"}
    hooks.write_text(json.dumps({"SessionStart": [{"hooks": [hook]}]}))
    return [hooks]


USER_CONFIG: dict[str, Callable[[Path, Path], list[Path]]] = {
    "claude-code": claude_user_hook,
    "opencode": opencode_user_plugin,
    "kilo": kilo_user_plugin,
    "pi": pi_user_extension,
    "oh-my-pi": oh_my_pi_user_extension,
    "gemini-cli": gemini_user_hook,
    "qwen-code": qwen_user_hook,
    "droid": droid_user_hook,
}


async def ran(marker: Path) -> None:
    """Until the user's own hook has left its marker file."""
    with anyio.fail_after(scaled(30)):
        while not marker.exists():  # noqa: ASYNC110, ASYNC240 - a local file: nothing to await
            await anyio.sleep(0.1)


@pytest.mark.parametrize("agent", sorted(USER_CONFIG))
async def test_users_own_extension_still_runs(agent: str, tmp_path: Path) -> None:
    marker = tmp_path / "user-extension-ran"
    user_files = USER_CONFIG[agent](tmp_path / "home", marker)
    before = {path: path.read_bytes() for path in user_files}
    async with FakeModelServer() as model, agent_session(agent, tmp_path, model) as run:
        await run.wait_phase("waiting", wait=90)  # ours reported Ready, and theirs ran:
        await ran(marker)
        model.assert_no_unexpected()
    assert {path: path.read_bytes() for path in user_files} == before


async def test_users_own_codex_hooks_still_run(tmp_path: Path) -> None:
    marker = tmp_path / "user-hook-ran"
    hooks = tmp_path / "home" / ".codex" / "hooks.json"
    hooks.parent.mkdir(parents=True, exist_ok=True)
    user_hook = {"type": "command", "command": f"touch {marker}"}
    hooks.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [user_hook]}]}}))
    before = hooks.read_bytes()
    async with FakeModelServer() as model, agent_session("codex", tmp_path, model) as run:
        model.script(Reply.text("hello back"))
        await run.wait_phase("waiting", wait=60)
        await run.type("hello")
        await run.wait_screen("hello", wait=15)
        await run.type("\r")
        await run.wait_phase("working", wait=30)  # ours reported the prompt, and theirs ran:
        await ran(marker)
        await run.wait_screen("hello back", wait=30)
        model.assert_no_unexpected()
    assert hooks.read_bytes() == before


async def test_users_own_copilot_hooks_still_run(tmp_path: Path) -> None:
    """Copilot's user hooks (``$COPILOT_HOME/hooks/*.json``) run beside our session
    plugin's; they fire from the first prompt on."""
    marker = tmp_path / "user-hook-ran"
    hooks = tmp_path / "home" / ".copilot" / "hooks" / "mine.json"
    hooks.parent.mkdir(parents=True, exist_ok=True)
    user_hook = {"type": "command", "bash": f"touch {marker}", "timeoutSec": 10}
    hooks.write_text(json.dumps({"version": 1, "hooks": {"userPromptSubmitted": [user_hook]}}))
    before = hooks.read_bytes()
    async with FakeModelServer() as model, agent_session("copilot", tmp_path, model) as run:
        model.script(Reply.text("hello back"))
        await prompt_at_ready(run, "copilot", "hello", ready_wait=60)
        await ran(marker)
        await run.wait_screen("hello back", wait=30)
        model.assert_no_unexpected()
    assert hooks.read_bytes() == before


async def test_a_droid_users_own_settings_file_still_counts(tmp_path: Path) -> None:
    """A ``--settings`` file the user passes is read into the session's (one option
    only: Droid takes the last), its hooks run beside ours, and it is not written."""
    marker = tmp_path / "user-settings-ran"
    theirs = tmp_path / "mine.json"
    hook = {"type": "command", "command": f"touch {marker}"}
    theirs.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}))
    before = theirs.read_bytes()
    args = ["--settings", str(theirs)]
    async with (
        FakeModelServer() as model,
        agent_session("droid", tmp_path, model, args=args) as run,
    ):
        await run.wait_phase("waiting", wait=90)  # ours reported Ready, and theirs ran:
        await ran(marker)
        model.assert_no_unexpected()
    assert theirs.read_bytes() == before


async def test_users_own_cline_hooks_still_run_and_its_data_stays_theirs(tmp_path: Path) -> None:
    """Cline runs one file per event from its hooks folder: the user's own
    ``~/.cline/hooks/TaskStart.sh`` runs after ours (chained), with the payload Cline
    gave ours. The session's conversation lands in the user's own data folder
    (``--data-dir`` names it), where ``cline --id`` and ``cline history`` find it."""
    marker = tmp_path / "user-hook-ran"
    hooks = tmp_path / "home" / ".cline" / "hooks" / "TaskStart.sh"
    hooks.parent.mkdir(parents=True, exist_ok=True)
    hooks.write_text(f"cat > {marker}\n")
    before = hooks.read_bytes()
    async with FakeModelServer() as model, agent_session("cline", tmp_path, model) as run:
        model.script(Reply.text("hello back"))
        await prompt_at_ready(run, "cline", "hello", ready_wait=60)
        await ran(marker)
        await run.wait_screen("hello back", wait=30)
        model.assert_no_unexpected()
        native = run.changes[-1].activity.native_session_id
    assert native is not None
    assert json.loads(marker.read_text())["sessionContext"]["rootSessionId"] == native
    sessions = tmp_path / "home" / ".cline" / "data" / "sessions"
    assert (sessions / native / f"{native}.json").is_file()
    assert hooks.read_bytes() == before
