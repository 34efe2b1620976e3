"""Run each real agent TUI fully offline against the fake model server, and drive it.

:func:`offline_env` builds, for one agent, an environment and extra argv that start its
*interactive TUI* against ``model_url`` with every switch that stops outside traffic,
configured only inside ``home`` (a temporary directory): the user's own ``~`` and config
are never read or written. The environment is built from scratch (PATH, locale and
the agent's settings), so an API key or proxy in the caller's environment cannot leak in.

:class:`AgentTui` runs one TUI under a real PTY in the current asyncio event loop,
renders its output with ptyvisor's :class:`~ptyvisor.terminal.HeadlessTerminal`
(answering the terminal queries the TUIs send at start-up) and offers screen waits
and keystrokes. The per-agent facts (keys, markers, timings) are in
``tests/agents/clis/test_agents_offline.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import ptyprocess

from ptyvisor.agents.launch import read_jsonc
from ptyvisor.terminal import HeadlessTerminal
from tests.timeouts import scaled

from .installed import agent_bin_dir

__all__ = [
    "API_KEY",
    "GEMINI_SETTINGS",
    "MODEL",
    "AgentTui",
    "offline_env",
]

API_KEY = "sk-ant-fake-offline-0123456789abcdefghij"
"""The key every agent sends to the fake server (shaped like a real one, never valid)."""
MODEL = "fake-model"
"""The model id configured for Codex, OpenCode, Pi and Qwen Code (Claude Code keeps its
default)."""

_PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "TZ")


def _base_env(home: Path) -> dict[str, str]:
    """What every agent gets: a private HOME and XDG tree, a UTF-8 xterm, no telemetry."""
    env = {name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ}
    # The install's own bin first: its pinned Node is what the agents run on (Pi needs
    # Node >= 22.19, newer than many machines have).
    env["PATH"] = f"{agent_bin_dir()}{os.pathsep}{env.get('PATH', '/usr/local/bin:/usr/bin:/bin')}"
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        {
            "HOME": str(home),
            "USER": "ptyvisor",
            "SHELL": "/bin/bash",
            "TERM": "xterm-256color",
            "COLORTERM": "truecolor",
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "TMPDIR": str(home / "tmp"),
            "DO_NOT_TRACK": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "TMPDIR"):
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    return env


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _claude_code(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    config = home / ".claude"
    env.update(
        {
            "CLAUDE_CONFIG_DIR": str(config),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
            "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
        }
    )
    # Without this the first-run onboarding dead-ends on a connectivity check; the key
    # must be approved (by its last 20 characters) and the project trusted, or a dialog
    # waits for a keystroke before the prompt appears.
    _write_json(
        config / ".claude.json",
        {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": "2.1.332",
            "theme": "dark",
            "numStartups": 1,
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
            "projects": {
                str(project): {
                    "hasTrustDialogAccepted": True,
                    "hasCompletedProjectOnboarding": True,
                    "allowedTools": [],
                }
            },
        },
    )
    # 2.1.332 defaults to "auto" mode, where a model-backed classifier answers permission
    # prompts; the tests need the classic mode that asks the user.
    return ["--permission-mode", "default"]


def _codex(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    env.update({"CODEX_HOME": str(codex_home), "FAKE_MODEL_API_KEY": API_KEY})
    (codex_home / "config.toml").write_text(
        f"""model = "{MODEL}"
model_provider = "fake"
check_for_update_on_startup = false
suppress_unstable_features_warning = true

[model_providers.fake]
name = "Fake"
base_url = "{url}/v1"
env_key = "FAKE_MODEL_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false

[projects.{json.dumps(str(project))}]
trust_level = "trusted"
"""
    )
    # on-request + workspace-write: a command the model marks
    # sandbox_permissions="require_escalated" asks for approval (0.171 accepts only
    # on-request|never for -a). --no-daemon keeps the app-server inside this process.
    # request_user_input is otherwise offered in Plan mode only.
    return [
        "--no-daemon",
        "--ask-for-approval",
        "on-request",
        "--sandbox",
        "workspace-write",
        "--enable",
        "default_mode_request_user_input",
    ]


def _opencode(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    return _opencode_like("opencode", env, url)


def _kilo(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    """Kilo Code CLI, an OpenCode fork: the same config under its own names."""
    return _opencode_like("kilo", env, url)


def _opencode_like(name: str, env: dict[str, str], url: str) -> list[str]:
    prefix = name.upper()
    env.update(
        {
            f"{prefix}_DISABLE_MODELS_FETCH": "1",
            f"{prefix}_DISABLE_AUTOUPDATE": "1",
            f"{prefix}_DISABLE_LSP_DOWNLOAD": "1",
            f"{prefix}_DISABLE_SHARE": "1",
            # Each config dir gets a background `npm install @opencode-ai/plugin`
            # (in-process, npm's own fetch stack); offline it fails at once from the empty
            # cache in our HOME instead of reaching registry.npmjs.org.
            "npm_config_offline": "true",
        }
    )
    model = {"name": "Fake model", "tool_call": True, "limit": {"context": 200000, "output": 8192}}
    _write_json(
        Path(env["XDG_CONFIG_HOME"]) / name / f"{name}.json",
        {
            "$schema": "https://opencode.ai/config.json",
            "model": f"fake/{MODEL}",
            "small_model": f"fake/{MODEL}",
            "autoupdate": False,
            "share": "disabled",
            "permission": {"bash": "ask"},
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": f"{url}/v1", "apiKey": API_KEY},
                    "models": {MODEL: model},
                }
            },
        },
    )
    return []


def _pi(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    agent_dir = home / ".pi" / "agent"
    env.update({"PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"})
    _write_json(
        agent_dir / "models.json",
        {
            "providers": {
                "fake": {
                    "baseUrl": f"{url}/v1",
                    "api": "openai-completions",
                    "apiKey": API_KEY,
                    "models": [{"id": MODEL, "name": "Fake model"}],
                }
            }
        },
    )
    _write_json(agent_dir / "settings.json", {"defaultProvider": "fake", "defaultModel": MODEL})
    return ["--offline"]


def _oh_my_pi(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    """oh-my-pi 18 (a Pi fork on Bun) has no offline switch: it looks up models.dev and
    probes local model servers' ports, which fail at once with no network. Its own
    ``models.yml`` names the fake provider; ``--no-title`` stops a second request that
    names the session. The first-run wizard is skipped unless a test asks for it."""
    agent_dir = home / ".omp" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    env.update({"PI_CODING_AGENT_DIR": str(agent_dir), "OMP_SKIP_SETUP": "1"})
    # YAML is a superset of JSON: no YAML writer needed.
    provider = {
        "baseUrl": f"{url}/v1",
        "apiKey": API_KEY,
        "api": "openai-completions",
        "models": [{"id": MODEL, "name": "Fake model"}],
    }
    (agent_dir / "models.yml").write_text(json.dumps({"providers": {"fake": provider}}) + "\n")
    # Its update check asks the npm registry at every start.
    (agent_dir / "config.yml").write_text(json.dumps({"startup": {"checkUpdate": False}}) + "\n")
    return ["--model", f"fake/{MODEL}", "--no-title"]


GEMINI_MODEL = "gemini-2.5-flash"
"""A model Gemini CLI knows (an explicit one also skips its model router's side call)."""
GEMINI_SETTINGS: dict[str, object] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}
"""The auth type must be chosen (with only the key set, a dialog asks at first run); no
usage statistics, update checks or folder-trust dialog."""


def _gemini_cli(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    env.update(
        {
            "GEMINI_API_KEY": API_KEY,
            "GOOGLE_GEMINI_BASE_URL": url,
            "GEMINI_MODEL": GEMINI_MODEL,
            "GEMINI_CLI_HOME": str(home),
        }
    )
    # Added to settings a test wrote as the user's (a file that has them is not rewritten).
    path = home / ".gemini" / "settings.json"
    settings = read_jsonc(path) or {}
    if any(settings.get(key) != value for key, value in GEMINI_SETTINGS.items()):
        _write_json(path, {**settings, **GEMINI_SETTINGS})
    return []


def _qwen_code(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    # The offline switches go into the *system* settings file (the machine admin's
    # layer, moved by its variable), so ~/.qwen/settings.json stays the user's own.
    system = home / "etc" / "qwen-code" / "settings.json"
    env.update(
        {
            "OPENAI_API_KEY": API_KEY,  # selects OpenAI-compatible auth: no auth dialog
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_MODEL": MODEL,
            "QWEN_CODE_SYSTEM_SETTINGS_PATH": str(system),
        }
    )
    _write_json(
        system,
        {
            "security": {"auth": {"selectedType": "openai"}},
            "model": {"name": MODEL},
            "general": {"enableAutoUpdate": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            # After each turn 0.24.4 asks the model (with tools) for a next-prompt
            # suggestion; it would take a scripted reply.
            "ui": {"enableFollowupSuggestions": False},
            # Background agents (memory extraction, its "dream", skill review) would
            # ask the model with tools too.
            "memory": {
                "enableManagedAutoMemory": False,
                "enableManagedAutoDream": False,
                "enableAutoSkill": False,
            },
            # The npm tarball's bundled rg lacks its execute bit (a warning box).
            "tools": {"useRipgrep": False},
        },
    )
    # 0.24.4 defaults to "auto" mode, where a model-backed classifier answers
    # permission prompts; the tests need the mode that asks the user.
    return ["--approval-mode", "default"]


def _copilot(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    """GitHub Copilot CLI with no GitHub login: offline mode against a BYOK provider.
    Its folder-trust dialog still shows at every start (the tests answer it)."""
    env.update(
        {
            "COPILOT_HOME": str(home / ".copilot"),
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": f"{url}/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": API_KEY,
            "COPILOT_MODEL": MODEL,
            "COPILOT_AUTO_UPDATE": "false",
        }
    )
    return []


def _droid(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    """Factory Droid with no login: airgap mode and a custom model. Its folder-trust
    dialog reads trust from the user's settings only, where the project is trusted."""
    env.update(
        {
            "FACTORY_HOME_OVERRIDE": str(home),
            "FACTORY_AIRGAP_ENABLED": "true",
            # Even in airgap mode a background sync calls api.factory.ai; a port
            # nobody listens on fails it at once (never the fake model's: it would
            # count as an unexpected request).
            "FACTORY_API_BASE_URL": "http://127.0.0.1:9",
            "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false",
        }
    )
    model = {
        "id": "custom:fake-model",
        "model": MODEL,
        "displayName": "Fake model",
        "baseUrl": f"{url}/v1",
        "apiKey": API_KEY,
        "provider": "generic-chat-completion-api",
        "maxOutputTokens": 8192,
        "noImageSupport": True,
    }
    _write_json(
        home / ".factory" / "settings.json",
        {
            "customModels": [model],
            "sessionDefaultSettings": {"model": "custom:fake-model", "autonomyMode": "normal"},
            "trustedFolders": {str(project): {"trustedAt": "2026-01-01T00:00:00.000Z"}},
            "logoAnimation": "off",
        },
    )
    return []


def _cline(env: dict[str, str], home: Path, project: Path, url: str) -> list[str]:
    """Cline CLI with no login: an OpenAI-compatible provider in its data folder (the
    entry needs ``updatedAt``, or the TUI opens its provider picker), no start-up
    notices, no update check. Its TUI approves every call by default; the tests need
    it to ask, as a user who turned auto-approve off would see it."""
    env.update({"CLINE_DISABLE_CLINE_PASS_NOTICE": "1", "CLINE_NO_AUTO_UPDATE": "1"})
    settings = home / ".cline" / "data" / "settings"
    provider = {
        "settings": {
            "provider": "openai-compatible",
            "apiKey": API_KEY,
            "model": MODEL,
            "baseUrl": f"{url}/v1",
        },
        "updatedAt": "2026-01-01T00:00:00.000Z",
        "tokenSource": "manual",
    }
    _write_json(
        settings / "providers.json",
        {
            "version": 1,
            "lastUsedProvider": "openai-compatible",
            "modes": {},
            "providers": {"openai-compatible": provider},
        },
    )
    _write_json(
        settings / "global-settings.json",
        {"autoUpdateEnabled": False, "telemetryOptOut": True, "toolAutoApprove": False},
    )
    return ["--auto-approve", "false"]


_BUILDERS: dict[str, Callable[[dict[str, str], Path, Path, str], list[str]]] = {
    "claude-code": _claude_code,
    "codex": _codex,
    "opencode": _opencode,
    "kilo": _kilo,
    "pi": _pi,
    "oh-my-pi": _oh_my_pi,
    "gemini-cli": _gemini_cli,
    "qwen-code": _qwen_code,
    "copilot": _copilot,
    "droid": _droid,
    "cline": _cline,
}


def offline_env(
    agent: str, home: Path, project: Path, model_url: str
) -> tuple[dict[str, str], list[str]]:
    """Environment and extra argv to run ``agent``'s TUI in ``project`` against the fake
    model at ``model_url`` (``http://127.0.0.1:PORT``, no ``/v1``), configured in ``home``.

    The returned environment is complete (not to be merged into ``os.environ``).
    """
    try:
        build = _BUILDERS[agent]
    except KeyError:
        raise ValueError(f"unknown agent {agent!r}; known: {', '.join(_BUILDERS)}") from None
    home.mkdir(parents=True, exist_ok=True)
    project = project.resolve()
    env = _base_env(home.resolve())
    argv = build(env, home.resolve(), project, model_url.rstrip("/"))
    return env, argv


class AgentTui:
    """One TUI under a PTY, its output rendered by a headless terminal.

    Use ``async with AgentTui(argv, env=..., cwd=...) as tui:``; on exit the program's
    whole session is hung up and killed if it is still running.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        cols: int = 120,
        rows: int = 40,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.output = bytearray()
        """Everything the program wrote, for debugging."""
        self.terminal = HeadlessTerminal(cols, rows, on_reply=self._reply)
        self.started_at = 0.0
        self._process: ptyprocess.PtyProcess | None = None
        self._eof = asyncio.Event()

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        self.started_at = time.monotonic()
        self._process = ptyprocess.PtyProcess.spawn(
            self.argv,
            cwd=str(self.cwd),
            env=self.env,
            dimensions=(self.terminal.rows, self.terminal.cols),
        )
        self._process.delayafterclose = 0
        self._process.delayafterterminate = 0
        os.set_blocking(self._process.fd, False)
        asyncio.get_running_loop().add_reader(self._process.fd, self._readable)

    async def __aenter__(self) -> AgentTui:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.kill()

    @property
    def pid(self) -> int:
        assert self._process is not None, "not started"
        return int(self._process.pid)

    def _readable(self) -> None:
        assert self._process is not None
        try:
            data = os.read(self._process.fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: the slave side is closed, every process has gone
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self._process.fd)
            self._eof.set()
            return
        self.output += data
        self.terminal.feed(data)

    def _reply(self, data: bytes) -> None:
        """The headless terminal answers DA/DSR queries; some TUIs wait for them."""
        self.write(data)

    def write(self, data: bytes | str) -> None:
        """Send keystrokes (a str is UTF-8 encoded) to the program."""
        assert self._process is not None, "not started"
        raw = data.encode() if isinstance(data, str) else data
        with contextlib.suppress(OSError):
            os.write(self._process.fd, raw)

    async def wait_exit(self, wait: float) -> int | None:
        """Wait for the program to exit and its PTY to close; returns its exit code
        (``None`` when killed by a signal). Fails if it is still running after ``wait``."""
        assert self._process is not None
        deadline = time.monotonic() + scaled(wait)
        while self._process.isalive():
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.argv[0]} still running after {wait} s\n{self.screen}")
            await asyncio.sleep(0.05)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._eof.wait(), max(0.1, deadline - time.monotonic()))
        status: int | None = self._process.exitstatus
        return status

    async def kill(self) -> None:
        """Hang up, then kill, every process in the program's session (its helpers too)."""
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(process.fd)
        for sig in (signal.SIGHUP, signal.SIGKILL):
            members = _session_members(process.pid)
            if not members:
                break
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + scaled(2)
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                if not _session_members(process.pid):
                    break
        with contextlib.suppress(Exception):
            process.close(force=True)

    # -- the screen ------------------------------------------------------------------

    @property
    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.terminal.display]

    @property
    def screen(self) -> str:
        """The visible screen as text, trailing blanks trimmed."""
        return "\n".join(self.lines).rstrip("\n")

    async def wait_for(
        self,
        expected: str | re.Pattern[str] | Callable[[str], bool],
        *,
        wait: float = 20.0,
        what: str = "",
    ) -> str:
        """Poll the screen until it shows ``expected`` (text, regex or predicate); returns
        the screen. Fails with the screen when ``wait`` seconds pass or the program exits."""
        check: Callable[[str], bool]
        if isinstance(expected, str):
            check = functools.partial(_shows, expected)
        elif isinstance(expected, re.Pattern):
            check = functools.partial(_matches, expected)
        else:
            check = expected
        deadline = time.monotonic() + scaled(wait)
        while True:
            screen = self.screen
            if check(screen):
                return screen
            if time.monotonic() > deadline or self._eof.is_set():
                why = "exited" if self._eof.is_set() else f"not shown within {wait} s"
                raise AssertionError(
                    f"{what or expected!r} {why}; {self.argv[0]} screen:\n{screen}"
                )
            await asyncio.sleep(0.05)

    async def settle(self, quiet: float = 0.3, *, wait: float = 5.0) -> None:
        """Wait until the program has written nothing for ``quiet`` seconds."""
        deadline = time.monotonic() + scaled(wait)
        size = len(self.output)
        last = time.monotonic()
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            if len(self.output) != size:
                size = len(self.output)
                last = time.monotonic()
            elif time.monotonic() - last >= quiet:
                return


def _shows(text: str, screen: str) -> bool:
    return text in screen


def _matches(pattern: re.Pattern[str], screen: str) -> bool:
    return pattern.search(screen) is not None


def _session_members(sid: int) -> list[int]:
    """Pids in session ``sid`` (Linux /proc), so helpers the agent started die too."""
    members: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] != "Z":
            members.append(int(entry.name))
    return members
