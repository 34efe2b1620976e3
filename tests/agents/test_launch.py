"""How each agent is started with our extension for one session only."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptyvisor.agents.launch import (
    CLAUDE_EVENTS,
    CLINE_EVENTS,
    CODEX_EVENTS,
    COPILOT_EVENTS,
    DECISION_TIMEOUT_SECONDS,
    DROID_EVENTS,
    GEMINI_EVENTS,
    MAX_SETTINGS_BYTES,
    AgentName,
    cline_runner,
    extensions_dir,
    hook_argv,
    hook_command,
    launch,
    pasted_as,
    qwen_system_defaults,
    read_jsonc,
    resume_args,
)
from ptyvisor.wire.frames import FRAME_PREFIX, new_nonce


def test_claude_gets_inline_settings_with_our_hooks(tmp_path: Path) -> None:
    started = launch("claude-code", ["--model", "x"], session_dir=tmp_path)
    assert started.argv[0] == "claude" and started.argv[1] == "--settings"
    assert started.argv[-2:] == ["--model", "x"]
    settings = json.loads(started.argv[2])
    assert set(settings["hooks"]) == set(CLAUDE_EVENTS)
    (entry,) = settings["hooks"]["PermissionRequest"][0]["hooks"]
    assert shlex.split(entry["command"]) == hook_argv("claude-code")
    assert started.env == {}, "nothing in the user's own configuration is touched"


def test_codex_overrides_are_valid_toml(tmp_path: Path) -> None:
    started = launch("codex", ["--enable", "x"], session_dir=tmp_path)
    assert started.argv[:3] == ["codex", "--no-daemon", "--dangerously-bypass-hook-trust"]
    overrides = [started.argv[i + 1] for i, arg in enumerate(started.argv) if arg == "-c"]
    assert len(overrides) == len(CODEX_EVENTS)
    for override in overrides:
        key, _, value = override.partition("=")
        parsed = tomllib.loads(f"value = {value}")["value"]
        command = parsed[0]["hooks"][0]["command"]
        assert key.startswith("hooks.")
        assert shlex.split(command) == hook_argv("codex")


def test_codex_flags_the_user_gave_are_not_repeated(tmp_path: Path) -> None:
    started = launch("codex", ["--no-daemon", "-a", "on-request"], session_dir=tmp_path)
    assert started.argv.count("--no-daemon") == 1, "codex refuses a flag given twice"
    assert "--dangerously-bypass-hook-trust" in started.argv


@pytest.mark.parametrize(
    ("agent", "program", "variable"),
    [("opencode", "opencode", "OPENCODE_CONFIG_DIR"), ("kilo", "kilo", "KILO_CONFIG_DIR")],
)
def test_opencode_and_kilo_get_a_session_config_dir(
    agent: AgentName, program: str, variable: str, tmp_path: Path
) -> None:
    """Kilo Code CLI is an OpenCode fork: the same two plugins, in a folder named by its
    own variable; resuming is the same ``--session``."""
    started = launch(agent, ["--model", "m"], session_dir=tmp_path, resume="ses_abc")
    assert started.argv == [program, "--model", "m", "--session=ses_abc"]
    assert list(started.env) == [variable]
    folder = Path(started.env[variable])
    plugin = folder / "plugin" / "ptyvisor.js"
    assert plugin.resolve() == (extensions_dir() / "opencode" / "ptyvisor.js").resolve()
    tui = json.loads((folder / "tui.json").read_text())
    assert tui == {"plugin": [str(extensions_dir() / "opencode" / "ptyvisor-tui.js")]}


def test_pi_extension_only_for_the_interactive_tui(tmp_path: Path) -> None:
    tui = launch("pi", ["--model", "fake/m"], session_dir=tmp_path)
    assert tui.argv[:2] == ["pi", "--extension"]
    assert Path(tui.argv[2]) == extensions_dir() / "pi" / "ptyvisor.js"
    for machine in (["--mode", "json"], ["-p", "hello"], ["--mode=rpc"]):
        assert "--extension" not in launch("pi", machine, session_dir=tmp_path).argv


def test_gemini_gets_a_session_home_beside_the_users_own(tmp_path: Path) -> None:
    """The user's ``.gemini`` is linked in entry by entry; settings.json is a copy of
    theirs (comments allowed, as Gemini reads it) with our hook after theirs."""
    theirs = tmp_path / "home" / ".gemini"
    (theirs / "tmp").mkdir(parents=True)
    (theirs / "oauth_creds.json").write_text("{}")
    user_hook = {"matcher": "*", "hooks": [{"type": "command", "command": "touch x"}]}
    settings = {"ui": {"theme": "ANSI // not a comment"}, "hooks": {"AfterAgent": [user_hook]}}
    raw = "// mine\n" + json.dumps(settings) + "\n/* end */\n"
    (theirs / "settings.json").write_text(raw)
    started = launch(
        "gemini-cli", ["-m", "x"], session_dir=tmp_path / "s", env={"HOME": str(tmp_path / "home")}
    )
    assert started.argv == ["gemini", "-m", "x"]
    ours = Path(started.env["GEMINI_CLI_HOME"]) / ".gemini"
    assert (ours / "tmp").resolve() == (theirs / "tmp").resolve()
    assert (ours / "oauth_creds.json").resolve() == (theirs / "oauth_creds.json").resolve()
    merged = json.loads((ours / "settings.json").read_text())
    assert merged["ui"] == settings["ui"]
    assert set(merged["hooks"]) == set(GEMINI_EVENTS)
    first, ours_entry = merged["hooks"]["AfterAgent"]
    assert first == user_hook
    (hook,) = ours_entry["hooks"]
    assert shlex.split(hook["command"]) == hook_argv("gemini-cli")
    assert hook["name"] == "ptyvisor" and hook["timeout"] == 10_000  # milliseconds
    # BeforeTool is for the question tool only (Gemini: an unanchored regex): the
    # other calls pay one hook run, AfterTool's.
    before = merged["hooks"]["BeforeTool"][-1]["matcher"]
    assert re.search(before, "ask_user") and not re.search(before, "run_shell_command")
    assert not re.search(before, "ask_user_v2")
    assert {merged["hooks"][e][-1]["matcher"] for e in GEMINI_EVENTS if e != "BeforeTool"} == {"*"}
    assert (theirs / "settings.json").read_text() == raw, "the user's file is untouched"
    assert (ours.parent / ".agents").readlink() == tmp_path / "home" / ".agents"
    # Removing the session folder (as the supervisor does) removes links, never targets.
    (theirs / "tmp" / "chat.jsonl").write_text("kept")
    shutil.rmtree(tmp_path / "s")
    assert (theirs / "tmp" / "chat.jsonl").read_text() == "kept"
    assert (theirs / "oauth_creds.json").exists()
    # GEMINI_CLI_HOME of the user's own wins over HOME, as in Gemini.
    moved = launch(
        "gemini-cli",
        [],
        session_dir=tmp_path / "t",
        env={"HOME": "/nonexistent", "GEMINI_CLI_HOME": str(tmp_path / "home")},
    )
    assert (Path(moved.env["GEMINI_CLI_HOME"]) / ".gemini" / "tmp").exists()


def test_gemini_with_unreadable_user_settings_is_left_to_report_them(tmp_path: Path) -> None:
    theirs = tmp_path / ".gemini"
    theirs.mkdir()
    (theirs / "settings.json").write_text("{ not json")
    started = launch("gemini-cli", [], session_dir=tmp_path / "s", env={"HOME": str(tmp_path)})
    settings = Path(started.env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json"
    assert settings.resolve() == (theirs / "settings.json").resolve()
    nothing = launch(
        "gemini-cli", [], session_dir=tmp_path / "t", env={"HOME": str(tmp_path / "no")}
    )
    fresh = json.loads(
        (Path(nothing.env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json").read_text()
    )
    assert set(fresh) == {"hooks"}
    # A first run's conversations go to the user's own .gemini, to be resumed later.
    assert (tmp_path / "no" / ".gemini" / "tmp").is_dir()


def test_qwen_code_gets_a_session_copy_of_the_system_defaults(tmp_path: Path) -> None:
    started = launch("qwen-code", ["--approval-mode", "default"], session_dir=tmp_path)
    assert started.argv == ["qwen", "--approval-mode", "default"]
    defaults = json.loads(Path(started.env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"]).read_text())
    assert set(defaults["hooks"]) == set(CLAUDE_EVENTS)
    (entry,) = defaults["hooks"]["PermissionRequest"][0]["hooks"]
    assert shlex.split(entry["command"]) == hook_argv("qwen-code")
    # Qwen reads a command hook timeout of 1000 or more as milliseconds.
    assert entry["timeout"] == DECISION_TIMEOUT_SECONDS * 1000
    (stop,) = defaults["hooks"]["Stop"][0]["hooks"]
    assert stop["timeout"] < 1000
    # PreToolUse ends an approval (Qwen asks first); a tool's end matters only for the
    # question tool, so no other tool call pays a second hook run.
    matchers = {event: entries[0]["matcher"] for event, entries in defaults["hooks"].items()}
    assert matchers.pop("PostToolUse") == matchers.pop("PostToolUseFailure")
    assert re.fullmatch(defaults["hooks"]["PostToolUse"][0]["matcher"], "ask_user_question")
    assert not re.search(defaults["hooks"]["PostToolUse"][0]["matcher"], "run_shell_command")
    assert set(matchers.values()) == {"*"}


def test_qwen_code_keeps_the_machines_system_defaults(tmp_path: Path) -> None:
    """The session file replaces the machine's for that process: what it held stays."""
    machine = tmp_path / "system-defaults.json"
    theirs = {"type": "command", "command": "audit"}
    machine.write_text(
        json.dumps({"ui": {"theme": "GitHub"}, "hooks": {"Stop": [{"hooks": [theirs]}]}})
    )
    merged = qwen_system_defaults(machine)
    assert merged["ui"] == {"theme": "GitHub"}
    hooks = merged["hooks"]
    assert isinstance(hooks, dict)
    assert hooks["Stop"][0] == {"hooks": [theirs]} and len(hooks["Stop"]) == 2
    assert set(hooks) == set(CLAUDE_EVENTS)
    machine.write_text("{not json")
    assert set(qwen_system_defaults(machine)) == {"hooks"}


def test_gemini_is_not_made_headless_by_a_server_started_in_ci(tmp_path: Path) -> None:
    """Gemini runs headless (and exits) when CI or GITHUB_ACTIONS is ``true``; under
    ptyvisor it has a terminal, so those reach it as ``1`` (still set, not ``true``)."""
    env = {"HOME": str(tmp_path), "CI": "true", "GITHUB_ACTIONS": "true", "OTHER": "true"}
    started = launch("gemini-cli", [], session_dir=tmp_path / "s", env=env)
    assert started.env["CI"] == "1" and started.env["GITHUB_ACTIONS"] == "1"
    assert "OTHER" not in started.env
    calm = launch("gemini-cli", [], session_dir=tmp_path / "t", env={"HOME": str(tmp_path)})
    assert "CI" not in calm.env and "GITHUB_ACTIONS" not in calm.env


def test_droid_draws_its_tui_under_a_server_started_in_ci(tmp_path: Path) -> None:
    """Droid draws only its logo when CI or CONTINUOUS_INTEGRATION is set to anything
    but ``0`` or ``false`` (checked against the real TUI, test_droid_e2e.py under CI)."""
    for value in ("true", "1", "yes"):
        env = {"CI": value, "CONTINUOUS_INTEGRATION": value, "GITHUB_ACTIONS": "true"}
        started = launch("droid", [], session_dir=tmp_path, env=env)
        assert started.env == {"CI": "0", "CONTINUOUS_INTEGRATION": "0"}, value
    for calm in ({}, {"CI": "0"}, {"CI": "false", "CONTINUOUS_INTEGRATION": "0"}):
        assert launch("droid", [], session_dir=tmp_path, env=calm).env == {}, calm


def test_oh_my_pi_loads_pis_extension_in_its_tui_only(tmp_path: Path) -> None:
    """oh-my-pi (a Pi fork) takes Pi's extension with ``-e``; its machine modes and
    its subcommands (``acp`` speaks a protocol on stdout) get none. It resumes with
    ``--resume=<id>``."""
    tui = launch("oh-my-pi", ["--model", "fake/m"], session_dir=tmp_path, resume=UUID)
    assert tui.argv == [
        "omp",
        "-e",
        str(extensions_dir() / "pi" / "ptyvisor.js"),
        "--model",
        "fake/m",
        f"--resume={UUID}",
    ]
    for machine in (["-p", "hi"], ["--mode", "json"], ["--mode=rpc"], ["acp"], ["models"]):
        assert "-e" not in launch("oh-my-pi", machine, session_dir=tmp_path).argv, machine
    assert "-e" in launch("oh-my-pi", ["explain acp"], session_dir=tmp_path).argv


def test_copilot_gets_a_session_plugin_running_our_hook_per_event(tmp_path: Path) -> None:
    """``--plugin-dir`` adds the plugin for this run only; each event's command names
    the event, which Copilot's payloads do not."""
    started = launch("copilot", ["--model", "x"], session_dir=tmp_path, resume=UUID)
    assert started.argv[:2] == ["copilot", "--plugin-dir"]
    plugin = Path(started.argv[2])
    assert started.argv[3:] == ["--model", "x", f"--resume={UUID}"]
    assert started.env == {}, "nothing in the user's own configuration is touched"
    manifest = json.loads((plugin / "plugin.json").read_text())
    assert (manifest["name"], manifest["hooks"]) == ("ptyvisor", "hooks.json")
    hooks = json.loads((plugin / "hooks.json").read_text())
    assert hooks["version"] == 1
    assert list(hooks["hooks"]) == list(COPILOT_EVENTS)
    for event, (entry,) in hooks["hooks"].items():
        assert entry["type"] == "command"
        assert shlex.split(entry["bash"]) == hook_argv("copilot", event)
    # A second start of the same session (a restart) rewrites the same folder.
    assert launch("copilot", [], session_dir=tmp_path).argv[2] == str(plugin)
    assert resume_args("copilot", UUID) == [f"--resume={UUID}"]


def test_droid_gets_a_runtime_settings_file_with_our_hook_per_event(tmp_path: Path) -> None:
    """``--settings`` is a layer for this run only, its hooks added to the user's; a
    ``--settings`` of the user's own is read into the session's file, never written."""
    started = launch("droid", ["--auto", "low"], session_dir=tmp_path, resume=UUID, env={})
    assert started.argv[:2] == ["droid", "--settings"]
    file = Path(started.argv[2])
    assert started.argv[3:] == ["--auto", "low", f"--resume={UUID}"]
    assert started.env == {}
    hooks = json.loads(file.read_text())["hooks"]
    assert list(hooks) == list(DROID_EVENTS)
    for (entry,) in hooks.values():
        (hook,) = entry["hooks"]
        assert shlex.split(hook["command"]) == hook_argv("droid")
    theirs = tmp_path / "theirs.json"
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    theirs.write_text(json.dumps({**mine, "customModels": [{"model": "m"}]}))
    before = theirs.read_text()
    for option in (["--settings", str(theirs)], [f"--settings={theirs}"]):
        started = launch("droid", ["-x", *option], session_dir=tmp_path / "s")
        assert started.argv[3:] == ["-x"]
        merged = json.loads(Path(started.argv[2]).read_text())
        assert merged["customModels"] == [{"model": "m"}]
        stop = merged["hooks"]["Stop"]
        assert stop[0] == mine["hooks"]["Stop"][0] and len(stop) == 2
        assert set(merged["hooks"]) == set(DROID_EVENTS)
    assert theirs.read_text() == before
    # One Droid cannot read is passed on as it is, for Droid to report.
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    started = launch("droid", ["--settings", str(broken)], session_dir=tmp_path / "b")
    assert started.argv == ["droid", "--settings", str(broken)]
    assert resume_args("droid", UUID) == [f"--resume={UUID}"]


def test_a_settings_path_from_a_spawn_request_cannot_hold_the_server(tmp_path: Path) -> None:
    """launch runs in the server's event loop: a FIFO, a device or a huge file named as
    the user's settings is not read (Droid gets the path as it was given, to report)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as file:
        file.truncate(MAX_SETTINGS_BYTES + 1)
    for theirs in (fifo, Path("/dev/zero"), huge):
        started = launch("droid", ["--settings", str(theirs)], session_dir=tmp_path / "s")
        assert started.argv == ["droid", "--settings", str(theirs)], theirs
        assert read_jsonc(theirs) is None
    # Gemini's session home links a settings file it cannot read, as it is.
    gemini = tmp_path / "home" / ".gemini"
    gemini.mkdir(parents=True)
    os.mkfifo(gemini / "settings.json")
    launch("gemini-cli", [], session_dir=tmp_path / "g", env={"HOME": str(tmp_path / "home")})
    linked = tmp_path / "g" / "gemini" / ".gemini" / "settings.json"
    assert linked.is_symlink() and linked.resolve() == (gemini / "settings.json").resolve()


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    args=st.lists(
        st.sampled_from(["--settings", "--settings=", "-x", "="]) | st.text(max_size=12), max_size=6
    )
)
def test_any_droid_arguments_start_it_with_ours_first(tmp_path: Path, args: list[str]) -> None:
    """The user's arguments are untrusted: whatever they are, Droid gets our settings
    flag first, then their arguments in order, less their ``--settings`` options."""
    started = launch("droid", args, session_dir=tmp_path / "s", env={})
    assert started.argv[:2] == ["droid", "--settings"]
    rest = started.argv[3:]
    assert not any(a == "--settings" or a.startswith("--settings=") for a in rest)
    remaining = iter(args)
    assert all(a in remaining for a in rest), "not a subsequence of theirs"
    if not any(a == "--settings" or a.startswith("--settings=") for a in args):
        assert rest == args


UUID = "7c70be05-d2f2-46d2-a042-f558b1353317"
CLINE_ID = "1796509832523_enbov"


def test_cline_gets_a_session_folder_of_the_users_entries_and_our_hook_files(
    tmp_path: Path,
) -> None:
    """``CLINE_DIR`` moves Cline's hooks folder: the session's links every entry of
    the user's ``~/.cline`` but ``hooks``, and ``--data-dir`` names their own data
    folder (keeping the session out of Cline's hub)."""
    home = tmp_path / "home"
    theirs = home / ".cline"
    (theirs / "rules").mkdir(parents=True)
    env = {"HOME": str(home)}
    started = launch("cline", ["-p"], session_dir=tmp_path / "s", resume=CLINE_ID, env=env)
    folder = Path(started.env["CLINE_DIR"])
    assert started.argv == ["cline", f"--data-dir={theirs / 'data'}", "-p", "--id", CLINE_ID]
    assert (theirs / "data").is_dir()  # made where Cline would make it: the user's
    assert (folder / "rules").resolve() == (theirs / "rules").resolve()
    assert (folder / "data").resolve() == (theirs / "data").resolve()
    assert sorted(p.name for p in (folder / "hooks").iterdir()) == sorted(CLINE_EVENTS)
    for event in CLINE_EVENTS:
        text = (folder / "hooks" / event).read_text()
        assert text == f"#!/bin/sh\nexec {hook_command('cline', event)}\n"
    # Their own folders, named by option or variable, and their own data folder.
    other = tmp_path / "other"
    (other / "skills").mkdir(parents=True)
    for args, variables in (
        (["--config", str(other)], env),
        ([f"--config={other}"], env),
        ([], {**env, "CLINE_DIR": str(other)}),
    ):
        started = launch("cline", args, session_dir=tmp_path / "o", env=variables)
        assert started.argv == ["cline", f"--data-dir={other / 'data'}"]
        assert (Path(started.env["CLINE_DIR"]) / "skills").resolve() == other / "skills"
    # "~user" of no user: taken as Cline takes it, a relative path (Path.expanduser raised).
    started = launch("cline", ["--config", "~0"], session_dir=tmp_path / "t", env=env)
    assert started.argv == ["cline", f"--data-dir={Path('~0', 'data')}"]
    assert not Path("~0").exists()  # not made in the server's working directory
    started = launch("cline", ["--data-dir", "d"], session_dir=tmp_path / "d", env=env)
    assert started.argv == ["cline", "--data-dir", "d"]
    data = {**env, "CLINE_DATA_DIR": str(tmp_path / "data")}
    started = launch("cline", [], session_dir=tmp_path / "e", env=data)
    assert started.argv == ["cline", f"--data-dir={tmp_path / 'data'}"]
    sandboxed = {**env, "CLINE_SANDBOX": "1", "CLINE_SANDBOX_DATA_DIR": str(tmp_path / "x")}
    assert launch("cline", [], session_dir=tmp_path / "f", env=sandboxed).argv == ["cline"]


def test_a_cline_users_own_hooks_still_run(tmp_path: Path) -> None:
    """Cline runs one file per event from a folder: the user's own file for an event
    we hook runs after ours with the same payload, and its output and status are the
    hook's (its PreToolUse may cancel a call); their file for any other event is
    linked. Run here as Cline runs ours (``sh FILE``, the payload on stdin)."""
    home = tmp_path / "home"
    hooks = home / ".cline" / "hooks"
    hooks.mkdir(parents=True)
    got = tmp_path / "got.json"
    (hooks / "PreToolUse.py").write_text(
        "import sys\n"
        f"open({str(got)!r}, 'w').write(sys.stdin.read())\n"
        'print(\'{"cancel": true, "errorMessage": "theirs"}\')\n'
        "sys.exit(3)\n"
    )
    (hooks / "TaskCancel.sh").write_text("echo cancelled\n")
    (hooks / "notes.txt").write_text("not a hook\n")
    started = launch("cline", [], session_dir=tmp_path / "s", env={"HOME": str(home)})
    ours = Path(started.env["CLINE_DIR"]) / "hooks"
    assert (ours / "TaskCancel.sh").resolve() == (hooks / "TaskCancel.sh").resolve()
    assert (ours / "notes.txt").is_symlink()
    assert not (ours / "PreToolUse.py").exists()
    payload = '{"hookName": "tool_call", "tool_call": {"name": "run_commands"}}\n'
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PTYVISOR_")}
    done = subprocess.run(
        ["sh", str(ours / "PreToolUse")],
        input=payload.encode(),
        capture_output=True,
        env={**clean, "PATH": f"{Path(shutil.which('python3') or '').parent}:/usr/bin:/bin"},
        timeout=30,
        check=False,
    )
    assert done.returncode == 3, done
    assert json.loads(done.stdout) == {"cancel": True, "errorMessage": "theirs"}
    assert got.read_text() == payload
    # A home from a spawn request whose path would be code if written unquoted.
    odd = tmp_path / "a\n touch pwned #" / "home"
    (odd / ".cline" / "hooks").mkdir(parents=True)
    (odd / ".cline" / "hooks" / "TaskStart").write_text("cat > /dev/null\n")
    started = launch("cline", [], session_dir=tmp_path / "t", env={"HOME": str(odd)})
    file = Path(started.env["CLINE_DIR"]) / "hooks" / "TaskStart"
    subprocess.run(["sh", str(file)], input=b"{}", cwd=tmp_path, env=clean, timeout=30, check=True)
    assert not (tmp_path / "pwned").exists()


def test_cline_runs_a_hook_file_by_its_first_line_or_its_ending(tmp_path: Path) -> None:
    """As Cline 3.0.65 does: a ``#!`` line's words (``env`` dropped; a shell or Python
    by its name, found on PATH), else the ending; a FIFO is not read."""
    cases = {
        "a": ("#!/usr/bin/env -S node --x\n", ["-S", "node", "--x"]),
        "b": ("#!/opt/py/bin/python3 -u\n", ["python3", "-u"]),
        "c": ("#!/opt/tool --flag\n", ["/opt/tool", "--flag"]),
        "d.py": ("print(1)\n", ["python3"]),
        "e.mjs": ("", ["node"]),
        "f.ts": ("", ["bun", "run"]),
        "g": ("echo hi\n", ["bash"]),
    }
    for name, (text, runner) in cases.items():
        (tmp_path / name).write_text(text)
        assert cline_runner(tmp_path / name) == [*runner, str(tmp_path / name)], name
    os.mkfifo(tmp_path / "fifo.sh")
    assert cline_runner(tmp_path / "fifo.sh") == ["bash", str(tmp_path / "fifo.sh")]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    args=st.lists(
        st.sampled_from(["--config", "--config=", "--data-dir", "-c", "="]) | st.text(max_size=12),
        max_size=6,
    )
)
def test_any_cline_arguments_keep_our_hooks_folder(tmp_path: Path, args: list[str]) -> None:
    """The user's arguments are untrusted: whatever they are, no ``--config`` of
    theirs replaces the session's folder, and the rest reach Cline in order."""
    started = launch("cline", args, session_dir=tmp_path / "s", env={"HOME": str(tmp_path)})
    rest = started.argv[1:]
    if rest[:1] and rest[0].startswith("--data-dir=") and rest[0] not in args:
        rest = rest[1:]  # ours, naming their data folder
    elif not any(a.split("=", 1)[0] == "--data-dir" for a in args):
        raise AssertionError(f"no data folder: {started.argv}")
    assert not any(a == "--config" or a.startswith("--config=") for a in rest)
    remaining = iter(args)
    assert all(a in remaining for a in rest), "not a subsequence of theirs"
    assert Path(started.env["CLINE_DIR"], "hooks", "TaskStart").is_file()


def test_the_hook_command_runs_ours_whatever_the_agents_python_settings(
    tmp_path: Path,
) -> None:
    """An agent's environment and working directory are the user's: a ``PYTHONPATH``,
    a ``ptyvisor`` folder in the project or a ``PYTHONSTARTUP`` must not change which
    code the hook runs (``-I``), and without ``site`` (``-S``) it still finds ours."""
    decoy = tmp_path / "project"
    (decoy / "ptyvisor").mkdir(parents=True)
    (decoy / "ptyvisor" / "__init__.py").write_text("raise SystemExit('decoy ptyvisor ran')")
    (decoy / "json.py").write_text("raise SystemExit('decoy json ran')")
    master, slave = os.openpty()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(decoy),
        "PYTHONSTARTUP": str(decoy / "json.py"),
        "PTYVISOR_SESSION": "s1",
        "PTYVISOR_NONCE": new_nonce(),
        "PTYVISOR_TTY": os.ttyname(slave),
    }
    event = {"session_id": UUID, "hook_event_name": "Stop"}
    result = subprocess.run(
        hook_command("claude-code"),
        shell=True,
        cwd=decoy,
        env=env,
        input=json.dumps(event).encode(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    os.set_blocking(master, False)
    assert FRAME_PREFIX in os.read(master, 65536), "the hook wrote no frame"
    os.close(master)
    os.close(slave)


def test_what_cline_calls_a_long_paste() -> None:
    """Its marker (3.0.65, seen in its input history): the first 48 characters with
    every run of whitespace one space, trimmed, and the count of lines (a last empty
    line not counted); fewer than 5 lines are the text itself."""
    text = "line one\nline two\nline three\nline four\nline five\nline six"
    shown = "[line one line two line three line four line five... Pasted +6 lines]"
    assert pasted_as("cline", text) == shown
    assert pasted_as("cline", "a\r\nb\rc\nd\n") is None
    assert pasted_as("cline", "  a\n\tb\nc\nd\ne\n") == "[a b c d e... Pasted +5 lines]"
    assert pasted_as("cline", "\n\n\n\n\n") == "[Pasted +5 lines]"
    cut = "x" * 47 + " yz\n" + "\n".join("abcd")
    assert pasted_as("cline", cut) == f"[{'x' * 47}... Pasted +5 lines]"  # then trimmed
    assert pasted_as("claude-code", text) is None
