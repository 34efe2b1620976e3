"""Starting an agent with ptyvisor's extension installed for that session only.

Never by editing the user's own configuration: each agent is given our hooks,
plugin or extension through a per-process switch, so the user's own hooks and
settings keep working beside ours.

| agent | how |
| --- | --- |
| claude-code | ``--settings <inline JSON>`` with command hooks (merged with the user's) |
| codex | ``-c hooks.<Event>=…``, ``--no-daemon``, ``--dangerously-bypass-hook-trust`` |
| opencode | ``OPENCODE_CONFIG_DIR`` = a session folder: ``plugin/`` + ``tui.json`` name ours |
| kilo | the same through ``KILO_CONFIG_DIR`` (Kilo Code CLI is an OpenCode fork) |
| pi | ``--extension <file>``, only for the interactive TUI |
| oh-my-pi | the same extension with ``-e <file>`` (a Pi fork on Bun) |
| gemini-cli | ``GEMINI_CLI_HOME`` = a session home: the user's ``.gemini`` + our hooks |
| qwen-code | ``QWEN_CODE_SYSTEM_DEFAULTS_PATH`` = a session file with our command hooks |
| copilot | ``--plugin-dir <session folder>``: a plugin whose ``hooks.json`` runs ours |
| droid | ``--settings <session file>``: a runtime settings layer holding our hooks |
| cline | ``CLINE_DIR`` = a session folder: the user's entries + our hook files; ``--data-dir`` |

Gemini CLI 0.61 reads settings from ``~/.gemini`` (``GEMINI_CLI_HOME`` moves that
home), the project, and system files it skips unless root owns them; it has no flag
for extra settings. So the session gets a home of its own whose ``.gemini`` links
every entry of the user's (credentials, history, extensions…) and whose
``settings.json`` is a copy of the user's with our hook appended to each event: theirs
run too, and their files are never written (a setting changed during the session is
kept in the session's copy only).

Qwen Code 0.24 has no settings flag; of its settings files (system defaults, user,
project, system), the lowest one, *system defaults*, can be moved by an environment
variable, and hooks from every file are concatenated. So the session's copy of that
file (`qwen_system_defaults`) keeps whatever the machine's has and adds our hooks,
and the user's ``~/.qwen/settings.json`` is neither read nor written by us.

GitHub Copilot CLI 1.0 loads hooks from the user's and the project's files and from
plugins; ``--plugin-dir`` adds a plugin for one run without installing it, so the
session gets a plugin folder of its own holding only a ``hooks.json``. Copilot's hook
payloads do not name their event, so each event's entry passes its name as an
argument.

Factory Droid 0.225 takes ``--settings FILE``, a settings layer "merged for this
process only", above the user's, project's and org's, whose hooks are added to theirs.
A user who passes ``--settings`` themselves gets the session's copy of their file with
our hooks added (`droid_settings`): theirs is read, never written.

Cline CLI 3.0 runs hook files from ``<CLINE_DIR or ~/.cline>/hooks`` (and from the
workspace and ``~/Documents/Cline/Hooks``), one file per event in each folder. So the
session gets a ``CLINE_DIR`` of its own (`cline_dir`) that links every entry of the
user's but ``hooks``, whose ``hooks`` holds our event files, links the user's other
hook files, and chains the user's own file for an event we hook after ours. By
default the TUI runs its session inside a background "hub" process started by the
first TUI, with that process's environment, where a hook cannot tell which session it
is in: ``--data-dir`` with the user's own data folder keeps the session in the TUI's
process (Cline's "sandbox" mode, which moves no data).

Codex asks the user to review a new hook before running it; ptyvisor's hook is a
fixed command it ships, so it takes that step for the user (documented in
docs/agents.md) rather than leaving the session silently unreported.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from ptyvisor.errors import BadNativeId
from ptyvisor.wire.untrusted import native_id_problem

AgentName = Literal[
    "claude-code",
    "codex",
    "opencode",
    "kilo",
    "pi",
    "oh-my-pi",
    "gemini-cli",
    "qwen-code",
    "copilot",
    "droid",
    "cline",
]
AGENTS: tuple[AgentName, ...] = get_args(AgentName)

PROGRAMS: dict[AgentName, str] = {
    "claude-code": "claude",
    "codex": "codex",
    "opencode": "opencode",
    "kilo": "kilo",
    "pi": "pi",
    "oh-my-pi": "omp",
    "gemini-cli": "gemini",
    "qwen-code": "qwen",
    "copilot": "copilot",
    "droid": "droid",
    "cline": "cline",
}
"""Each agent's program, as its package installs it."""

CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStop",
    "SessionEnd",
)
CODEX_EVENTS = (
    # Not SessionStart: 0.171 fires it with the first prompt, after the turn has begun
    # (on screen, see BUSY_SCREEN), so its Ready would be wrong, and Codex waits for
    # each hook before it goes on.
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Stop",
    "SessionEnd",
)
GEMINI_EVENTS = (
    "SessionStart",
    "BeforeAgent",
    "BeforeTool",
    "AfterTool",
    "Notification",
    "AfterAgent",
    "SessionEnd",
)
GEMINI_MATCHERS = {"BeforeTool": "^ask_user$"}
"""Only Gemini's question tool needs ``BeforeTool`` (its questions are in its input
alone); for every other call ``AfterTool`` says enough (hooks/gemini_cli.py). Gemini
tests a tool matcher as an unanchored regular expression."""
GEMINI_HOOK_NAME = "ptyvisor"
"""What Gemini shows while our hook runs, and the name ``hooksConfig.disabled`` takes."""
CODEX_FLAGS = ("--no-daemon", "--dangerously-bypass-hook-trust")
COPILOT_EVENTS = (
    # Not sessionStart: 1.0 fires it with the first prompt, like Codex. Not
    # permissionRequest: it fires for commands Copilot then runs without asking (a
    # read-only ``echo``), so only the ``notification`` of type ``permission_prompt``
    # says that its dialog shows.
    "userPromptSubmitted",
    "preToolUse",
    "postToolUse",
    "postToolUseFailure",
    "notification",
    "errorOccurred",
    "agentStop",
    "sessionEnd",
)
DROID_EVENTS = (
    # Not PreToolUse: it comes before Droid decides whether to ask, and the dialog's
    # Notification finds the call in the transcript (hooks/droid.py). Not
    # SubagentStop: its payload has no id of the subagent's requests.
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "Notification",
    "Stop",
    "SessionEnd",
)
CLINE_EVENTS = (
    # Not UserPromptSubmit nor PreCompact: 3.0.65 never runs them. Not TaskCancel: the
    # TUI's Esc fires SessionShutdown instead.
    "TaskStart",
    "TaskResume",
    "PreToolUse",
    "PostToolUse",
    "TaskComplete",
    "TaskError",
    "SessionShutdown",
)
HOOK_TIMEOUT_SECONDS = 10
DECISION_TIMEOUT_SECONDS = 24 * 60 * 60
CODEX_DECISION_TIMEOUT_SECONDS = 30
"""Codex's PermissionRequest hook: it holds at most ``codex_answer_wait_seconds`` (20)."""
"""Claude's PermissionRequest hook holds until a client answers: the user may be away."""
PI_MACHINE_MODES = ("--mode", "-p", "--print", "--rpc", "--json")
OMP_COMMANDS = frozenset(
    {
        *("acp", "agents", "auth-broker", "auth-gateway", "bench", "browser-relay"),
        *("cleanse", "collab", "commit", "completions", "compress", "config"),
        *("dry-balance", "gallery", "gc", "git", "grep", "grievances", "if-bench"),
        *("images", "install", "join", "models", "plugin", "ps", "read", "render"),
        *("say", "search", "setup", "share", "shell", "ssh", "stats", "tiny-models"),
        *("token", "ttsr", "update", "usage", "worktree"),
    }
)
"""oh-my-pi 18.2's subcommands (``omp --help``): none is the interactive TUI, and
``acp`` speaks a protocol on its standard output, so none gets the extension."""


REPORTS_STARTUP: dict[str, bool] = {
    "claude-code": True,  # SessionStart when the TUI comes up
    "codex": False,  # 0.171 starts its thread (and SessionStart) with the first prompt
    "opencode": False,  # the plugin loads seconds before the TUI reads keys
    "kilo": False,  # OpenCode's plugins
    "pi": True,  # session_start
    "oh-my-pi": True,  # session_start, before its first-run wizard: held for the prompt
    "gemini-cli": True,  # SessionStart, held until READY_SCREEN shows
    "qwen-code": True,  # SessionStart, a little early: held until READY_SCREEN shows
    "copilot": False,  # sessionStart comes with the first prompt
    "droid": True,  # SessionStart as the TUI comes up (after its folder-trust dialog)
    "cline": False,  # TaskStart comes with the first prompt
}
"""Whether the agent's extension reports Ready by itself. For one that does not,
ptyvisor calls the session Ready when the screen shows its input prompt
(`READY_SCREEN`), or else once its start-up has drawn something and gone quiet. For
one that does and has a `READY_SCREEN`, its report waits for that prompt."""

READY_SCREEN: dict[str, str] = {
    # The composer (its mark, its placeholder) and the footer under it.
    "codex": r"(?m)^\u203a .*\n(?s:.*)\? for shortcuts",
    # The prompt box's left border and the key hints below it (home and session views).
    "opencode": r"(?s)\u2503.*ctrl\+p",
    "kilo": r"(?s)\u2503.*ctrl\+p",
    # The input box's placeholder (Qwen Code is a fork of Gemini CLI: the same words).
    "qwen-code": r"Type your message",
    "gemini-cli": r"Type your message",
    # The input line's mark between two rules, over the footer's key hints (drawn only
    # once the TUI takes commands: before, the footer shows "@ files · # issues").
    "copilot": r"(?m)^\u276f.*\n.*\n.*/ commands \u00b7 \? help",
    # The status line that tops the editor: Pi's mark, then the model's segment.
    "oh-my-pi": r"(?m)^ \u03c0 > ",
    # The input box's first row and bottom border, over the footer's help hint (a
    # resumed Droid puts the session's age before it: "[⏱ 7s] ? for help").
    "droid": r"(?m)^\u2502 > .*\n\u2570.*\n.*\? for help",
    # The input line between two rules, over the status line's mode switch.
    "cline": r"(?m)^ *\u276f .*\n *\u2500{8,}\n(?s:.*)(?:Plan|Act) \(Tab\)",
}
"""An agent's input prompt, drawn: a regex searched in the headless terminal's visible
rows joined by newlines, while the session is ``starting``. For an agent that cannot
report Ready, the prompt is its Ready; for one that can, its report is held until the
prompt shows (or, failing that, until its output goes quiet): Qwen Code 0.24 fires
SessionStart while it sets up the chat, 0.2-0.7 s before it draws its prompt, and
keys typed in between are lost; Gemini CLI 0.61 fires it as its configuration is
ready, with its input box not always live yet on a busy machine. Checked against
Codex 0.171, OpenCode 1.18.33, Qwen Code 0.24.4, Gemini CLI 0.61.0 and Copilot CLI
1.0.102 (each reads keys from the first frame that shows it)."""


STARTUP_DIALOG: dict[str, str] = {
    # Copilot 1.0 asks at every start whether to trust the folder (even one trusted
    # in its settings), before its prompt shows.
    "copilot": r"Confirm folder trust",
    # oh-my-pi 18.2's first-run wizard: a splash, then its steps, after session_start.
    "oh-my-pi": r"press enter to skip|Setup step \d+ of \d+",
    # Droid 0.225 asks before its first start in a folder (trust is kept in the user's
    # own settings; SessionStart comes once it is answered).
    "droid": r"Trust this folder\?",
}
"""A dialog an agent draws before its input prompt, waiting for the user: searched
like `READY_SCREEN`. While it shows, the session needs input, with the matched text as
its reason; neither start-up quiet nor a keystroke makes it Ready (keys typed then
would answer the dialog, not type a prompt): its prompt does, drawn after it."""


RESUMING_SCREEN: dict[str, tuple[str, tuple[str, ...]]] = {
    "gemini-cli": (r"Resuming session\.\.\.", ("--resume", "-r")),
}
"""What an agent started to continue a conversation draws while it loads it, dropping
every key, and the options that start it so: searched like `READY_SCREEN`. Gemini CLI
0.61, resumed, fires SessionStart with its prompt drawn, then clears the screen, draws
the conversation and swaps the prompt for "Resuming session..." until the chat is
loaded (measured here: the report 0.58 s after start, that line 0.12 s later, a key
typed at the report lost). So a resumed session's Ready is the prompt drawn after that
line (or, if no screen caught it, start-up quiet)."""


def resuming_screen(agent: str | None, args: Sequence[str], *, resumed: bool) -> str | None:
    """`RESUMING_SCREEN`'s pattern for a session ``resumed`` by ptyvisor (`resume_args`),
    or whose user's own ``args`` resume a conversation."""
    pattern, options = RESUMING_SCREEN.get(agent or "", ("", ()))
    resumes = resumed or any(arg.split("=", 1)[0] in options for arg in args)
    return pattern if resumes else None


BUSY_SCREEN: dict[str, str] = {
    # The status line over the composer: "• Working (0s • esc to interrupt)"; its
    # header changes ("Working", a reasoning summary), the hint does not.
    "codex": r"\u2022 esc to interrupt\)",
    # The spinner line: "⠋ Initiating thoughtful gaze... (0s · esc to cancel)". Its
    # dialogs say ", esc to cancel" without the middle dot.
    "qwen-code": r"\u00b7 esc to cancel\)",
}
"""An agent's busy line, drawn as a turn begins: a regex searched like
`READY_SCREEN`, while the session is ``waiting``, for agents whose extension reports
the turn late (see activity.BusyLine). Checked against Codex 0.171 (its first hook comes
0.4-0.7 s after Enter, the line within 0.1 s) and Qwen Code 0.24.4 (0.3 s and 0.07 s).
A translated TUI does not match, and its turn shows when the extension reports it."""


DIALOG_SCREEN: dict[str, str] = {
    # Cline 3.0.65's approval: "Cline needs permission / Approve tool call? / [y]
    # Approve   [n] Deny", drawn after its PreToolUse hook returns.
    "cline": r"Cline needs permission",
}
"""An agent's approval dialog, drawn: searched like `READY_SCREEN` while the agent's
extension has reported a call whose dialog may or may not come (an interaction frame
``on_screen``: the agent decides whether to ask after its hook). The interaction is
pending from the screen that shows it (activity.ActivityRules._holds_dialog)."""


TAKES_QUEUED_MESSAGE: frozenset[str] = frozenset(
    {"claude-code", "codex", "qwen-code", "gemini-cli", "copilot", "droid"}
)
"""Agents whose extension hands a queued message (``send``) to the agent at a turn's end:
an awaited Stop-like hook (Claude's Stop, Gemini's AfterAgent, Copilot's agentStop).
OpenCode's, Kilo's, Pi's and oh-my-pi's extensions take none, and Cline has no awaited
hook at a turn's end: a message for them is refused (`takes_queued_message`)."""


def takes_queued_message(agent: str | None) -> bool:
    """Whether a message queued for a session of ``agent`` can reach it: every agent in
    `TAKES_QUEUED_MESSAGE`, and a program ptyvisor launched with no agent (its own
    hooks may take one through the control socket, as ours do)."""
    return agent not in AGENTS or agent in TAKES_QUEUED_MESSAGE


CTRL_C_KEEPS_THE_TURN: frozenset[str] = frozenset({"droid"})
"""Agents for which Ctrl-C during a turn does not end it (only Esc does): Droid 0.225
takes it as the first of two presses to exit and works on (checked against the real
TUI, tests/agents/clis/test_droid_e2e.py)."""


ESC_DENIES_AND_GOES_ON: frozenset[str] = frozenset({"cline"})
"""Agents for which Esc at an approval dialog denies the call and the turn goes on
(the model is told): Cline 3.0.65 (checked against the real TUI,
tests/agents/clis/test_cline_e2e.py). Elsewhere Esc at a dialog ends the turn."""


PASTE_MARKER_LINES: dict[str, int] = {"cline": 5}
"""Agents that fold a bracketed paste of this many lines or more into a marker in their
input box, and report the marker as the prompt they took (`pasted_as`)."""
_JS_SPACES = re.compile(r"[\s\ufeff]+")
r"""JavaScript's ``\s``: Unicode whitespace and the byte-order mark (Python's ``\s``
also takes four ASCII separators JavaScript's does not: a prompt holding one is not
confirmed)."""


def pasted_as(agent: str | None, text: str) -> str | None:
    """What ``agent`` reports as the prompt when ``text`` was pasted into its input
    box, where that is not the text; None where it is. Cline 3.0.65 folds a paste of 5
    lines or more into ``[<its first 48 characters, spaces collapsed>... Pasted +N
    lines]`` (its ``EX``), and records that in its input history, which its hook
    reads (hooks/cline.py). Past the Basic Multilingual Plane its 48 characters are
    UTF-16 units, not these: such a prompt is typed, but cannot be confirmed."""
    least = PASTE_MARKER_LINES.get(agent or "")
    if least is None:
        return None
    lines = re.split(r"\r\n|\r|\n", text)
    count = len(lines) - 1 if lines[-1] == "" else len(lines)
    if count < least:
        return None
    head = _JS_SPACES.sub(" ", text).strip(" ")  # trimmed, then collapsed
    head = head[:48].rstrip() if len(head) > 48 else head
    noun = "line" if count == 1 else "lines"
    return f"[{head}... Pasted +{count} {noun}]" if head else f"[Pasted +{count} {noun}]"


SUBMIT_GAP: dict[str, float] = {"gemini-cli": 0.1}
"""Seconds an Enter must follow the keys before it, for an agent that loses one typed
sooner (server/session/typed_input.py holds it back). Gemini CLI 0.61.0, in its bundle:
``bufferFastReturn`` takes an Enter within 30 ms of the previous key for Shift+Enter (a
newline; ``FAST_RETURN_TIMEOUT``, active without the kitty keyboard protocol), and an
Enter in the few milliseconds between drawing newly typed text and re-registering its
key handler (``useKeypress``'s effect) runs the old handler, which finds the box empty.
Measured here, typing a prompt at Ready: Enter at once lost 7 of 20 idle, text and
``\r`` in one write 10 of 10, Enter 100 ms after the text 0 of 150 idle — but on a
loaded machine 100 ms after the text could still be before Gemini had read it, so the
gap now counts from when it has drawn the text (typed_input.py)."""


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def extensions_dir() -> Path:
    """Where the JavaScript extensions are: inside an installed wheel, or the checkout
    (``agents/extensions`` links the top-level ``agent-extensions/``)."""
    packaged = Path(__file__).parent / "extensions"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "agent-extensions"


HOOK_BOOT = (
    "import sys;sys.path[:0]=[{root}];"
    "from ptyvisor.agents.hooks.__main__ import main;sys.exit(main(sys.argv[1:]))"
)
"""What the hook command runs: `ptyvisor.agents.hooks` from the folder this ptyvisor is
installed in, without ``site`` (see `hook_argv`)."""


def hook_argv(agent: str, *event: str) -> list[str]:
    """The hook's argv: the absolute interpreter (the agent's PATH does not matter),
    isolated (``-I``: the agent's ``PYTHON*`` variables and working directory cannot
    change what runs) and without ``site`` (``-S``), the package's folder put on the
    path by hand. An agent runs it around every tool call, and ``site`` (the
    ``.pth`` files of every installed package) was a third of its cost; the hooks
    are stdlib only (tests/test_stdlib_only.py), so they need nothing it adds.
    ``-I`` also lets Python keep the bytecode it compiles, which
    ``PYTHONDONTWRITEBYTECODE`` would make it compile again on every call.
    ``python -m ptyvisor.agents.hooks`` (what older sessions have) works as well."""
    root = str(Path(__file__).resolve().parents[2])
    boot = HOOK_BOOT.format(root=json.dumps(root))  # a JSON string is a Python literal
    return [sys.executable, "-I", "-S", "-c", boot, agent, *event]


def hook_command(agent: str, *event: str) -> str:
    """`hook_argv` as one shell command line, as the agents' settings take it."""
    return shlex.join(hook_argv(agent, *event))


QWEN_MATCHERS = {
    "PostToolUse": "^ask_user_question$",
    "PostToolUseFailure": "^ask_user_question$",
}
"""Qwen Code's approval comes before ``PreToolUse``, which clears it; the tool's end
matters only for its question tool, whose dialog shows while it runs (hooks/qwen_code.py).
Qwen compiles a matcher that starts with ``^`` as written."""


def claude_settings(
    agent: str = "claude-code",
    decision_timeout: int = DECISION_TIMEOUT_SECONDS,
    matchers: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """Claude-style command hooks on every event, running ``ptyvisor.agents.hooks
    <agent>``; ``matchers``: the events whose hook runs for some tools only."""

    def entry(event: str) -> dict[str, object]:
        timeout = decision_timeout if event == "PermissionRequest" else None
        return {
            "type": "command",
            "command": hook_command(agent),
            "timeout": timeout or HOOK_TIMEOUT_SECONDS,
        }

    only = matchers or {}
    return {
        "hooks": {
            event: [{"matcher": only.get(event, "*"), "hooks": [entry(event)]}]
            for event in CLAUDE_EVENTS
        }
    }


QWEN_SYSTEM_DEFAULTS = Path("/etc/qwen-code/system-defaults.json")
"""Where Qwen Code 0.24 reads the system defaults on Linux (unless the variable is set)."""
QWEN_LEGACY_MS = 1000
"""Qwen Code reads a command hook ``timeout`` of 1000 or more as milliseconds."""


def qwen_system_defaults(machine: Path | None = None) -> dict[str, object]:
    """The machine's Qwen Code system defaults with our hooks appended to each event:
    the same Claude-style hooks (its payloads and answers are Claude's), the
    PermissionRequest timeout written in milliseconds (Qwen reads ≥1000 so)."""
    if machine is None:
        configured = os.environ.get("QWEN_CODE_SYSTEM_DEFAULTS_PATH")
        machine = Path(configured) if configured else QWEN_SYSTEM_DEFAULTS
    try:
        loaded = json.loads(machine.read_text())
    except (OSError, ValueError):
        loaded = {}
    defaults: dict[str, object] = loaded if isinstance(loaded, dict) else {}
    ours = claude_settings("qwen-code", DECISION_TIMEOUT_SECONDS * QWEN_LEGACY_MS, QWEN_MATCHERS)[
        "hooks"
    ]
    assert isinstance(ours, dict)
    return with_our_hooks(defaults, ours)


def with_our_hooks(
    settings: Mapping[str, object], ours: Mapping[str, list[object]]
) -> dict[str, object]:
    """``settings`` with our hook entries appended to each event's: theirs run first,
    and whatever else the file holds is kept as it is."""
    theirs = settings.get("hooks")
    hooks: dict[str, object] = dict(theirs) if isinstance(theirs, Mapping) else {}
    for event, entries in ours.items():
        before = hooks.get(event)
        hooks[event] = [*(before if isinstance(before, list) else []), *entries]
    return {**settings, "hooks": hooks}


def codex_overrides() -> list[str]:
    """``-c`` overrides adding our hook to every event, as TOML inline values."""
    command = json.dumps(hook_command("codex"))  # a JSON string is a valid TOML basic string
    args: list[str] = []
    for event in CODEX_EVENTS:
        timeout = (
            CODEX_DECISION_TIMEOUT_SECONDS if event == "PermissionRequest" else HOOK_TIMEOUT_SECONDS
        )
        entry = f'{{ type = "command", command = {command}, timeout = {timeout} }}'
        args += ["-c", f"hooks.{event}=[{{ hooks = [{entry}] }}]"]
    return args


def gemini_settings(user: Mapping[str, object]) -> dict[str, object]:
    """The user's Gemini settings with our hook appended to each event we report."""
    hook = {
        "name": GEMINI_HOOK_NAME,
        "type": "command",
        "command": hook_command("gemini-cli"),
        "timeout": HOOK_TIMEOUT_SECONDS * 1000,  # milliseconds
    }
    return with_our_hooks(
        user,
        {
            event: [{"matcher": GEMINI_MATCHERS.get(event, "*"), "hooks": [hook]}]
            for event in GEMINI_EVENTS
        },
    )


_JSONC_NOISE = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)


MAX_SETTINGS_BYTES = 4 * 1024 * 1024
"""A user's settings file larger than this is not read (nor merged)."""


def read_jsonc(path: Path) -> dict[str, object] | None:
    """A settings file as Gemini and Droid read it (JSON with comments): {} when there
    is none, None when it cannot be read as an object. The path comes with a spawn
    request (an option, a home in its environment) and this runs in the server's event
    loop: only a regular file is read, up to `MAX_SETTINGS_BYTES`, and a FIFO there is
    not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SETTINGS_BYTES:
            return None
        raw = os.read(fd, MAX_SETTINGS_BYTES + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
    try:
        value = json.loads(_JSONC_NOISE.sub(lambda m: m.group(1) or "", raw))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


GEMINI_STATE_DIRS = ("tmp",)
"""Where Gemini keeps conversations (``tmp/<project>/chats``): made in the user's
``.gemini`` first, as Gemini itself would, so that a first run's history is theirs
(and resumable) rather than the session folder's."""


@dataclass(frozen=True)
class CiRule:
    """Which variables make an agent give up its TUI when set in a server's
    environment, and how they are passed on instead: under ptyvisor an agent always
    has a terminal, whatever the server was started from (a CI job, a GitHub Actions
    runner). ``counts``: the values the agent takes for "in CI" (None: any but ``0``
    and ``false``); ``instead``: the value such a variable reaches the agent with."""

    variables: tuple[str, ...]
    counts: frozenset[str] | None
    instead: str


TERMINAL_IN_CI: dict[str, CiRule] = {
    # Gemini CLI 0.61 runs headless ("No input provided via stdin", exit 42) when either
    # is exactly "true": "1" is still set for other CI detectors, but not "true" for it.
    "gemini-cli": CiRule(("CI", "GITHUB_ACTIONS"), frozenset({"true"}), "1"),
    # Droid 0.225's renderer (Ink's is-in-ci) draws only its static output in CI: the
    # logo, never the input box. It takes any value but "0" and "false" for CI.
    "droid": CiRule(("CI", "CONTINUOUS_INTEGRATION"), None, "0"),
}


def terminal_despite_ci(agent: str, env: Mapping[str, str]) -> dict[str, str]:
    """The overrides that keep ``agent`` in its TUI although ``env`` says CI
    (`TERMINAL_IN_CI`); none for an agent that does not look."""
    rule = TERMINAL_IN_CI.get(agent)
    if rule is None:
        return {}

    def counts(value: str) -> bool:
        return value in rule.counts if rule.counts is not None else value not in ("0", "false")

    return {name: rule.instead for name in rule.variables if counts(env.get(name, "0"))}


def gemini_home(session_dir: Path, env: Mapping[str, str]) -> Path:
    """The session's ``GEMINI_CLI_HOME`` (see the module notes): its ``.gemini`` links
    the user's entries, its ``.agents`` (user skills, also under Gemini's home) is the
    user's. A user settings file Gemini could not read either is linked as it is:
    Gemini reports it, and the session goes unreported."""
    user_home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or str(Path.home()))
    theirs = user_home / ".gemini"
    home = session_dir / "gemini"
    ours = home / ".gemini"
    ours.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(home / ".agents"):
        (home / ".agents").symlink_to(user_home / ".agents")
    for name in GEMINI_STATE_DIRS:
        with contextlib.suppress(OSError):
            (theirs / name).mkdir(parents=True, exist_ok=True)
    _link_entries(theirs, ours, but="settings.json")
    settings = ours / "settings.json"
    user = read_jsonc(theirs / "settings.json")
    if user is None:
        if not os.path.lexists(settings):
            settings.symlink_to(theirs / "settings.json")
    else:
        settings.write_text(json.dumps(gemini_settings(user), indent=2) + "\n")
    return home


def _take_option(args: Sequence[str], option: str) -> tuple[str | None, list[str]]:
    """The value of the user's own ``option`` (``--option VALUE`` or ``--option=VALUE``;
    the last one given), and ``args`` without it."""
    rest: list[str] = []
    value: str | None = None
    words = iter(args)
    for word in words:
        if word == option:
            value = next(words, None)
        elif word.startswith(option + "="):
            value = word.split("=", 1)[1]
        else:
            rest.append(word)
    return value, rest


def droid_settings(folder: Path, args: Sequence[str]) -> tuple[Path, list[str]]:
    """The session's ``--settings`` file for Droid, and ``args`` without the user's own
    ``--settings`` option: their file's content (read, never written), with our
    hooks added to each event's. An unreadable file of theirs is passed on as it is,
    and the session goes unreported (as Droid would report it)."""
    theirs, rest = _take_option(args, "--settings")
    user = read_jsonc(Path(theirs)) if theirs else {}
    if user is None:
        return Path(str(theirs)), rest
    entry = {"type": "command", "command": hook_command("droid"), "timeout": HOOK_TIMEOUT_SECONDS}
    ours: dict[str, list[object]] = {
        event: [{"matcher": "*", "hooks": [entry]}] for event in DROID_EVENTS
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "settings.json"
    path.write_text(json.dumps(with_our_hooks(user, ours), indent=2) + "\n")
    return path, rest


CLINE_HOOK_EXTENSIONS = frozenset(
    {"", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".py", ".ps1"}
)
"""The file names Cline 3.0.65 takes for a hook: an event's name (any case) with one of
these endings."""


def cline_hook_event(name: str) -> str | None:
    """The event a file in a Cline hooks folder is for (its name without the ending,
    compared without case), or None."""
    stem, dot, ending = name.rpartition(".")
    stem, ending = (stem, dot + ending) if dot else (name, "")
    known = {event.lower(): event for event in (*CLINE_EVENTS, "TaskCancel", "UserPromptSubmit")}
    known["precompact"] = "PreCompact"
    return known.get(stem.lower()) if ending.lower() in CLINE_HOOK_EXTENSIONS else None


def cline_runner(path: Path) -> list[str]:
    """How Cline 3.0.65 runs a hook file: its ``#!`` line's words (``env``, a shell
    or ``python``/``python3`` found on PATH by name), or by its ending; and the path."""
    first = _first_line(path)
    words = first[2:].split() if first.startswith("#!") else []
    while words and words[0].replace("\\", "/").rsplit("/", 1)[-1].lower() == "env":
        words = words[1:]
    if words:
        name = words[0].replace("\\", "/").rsplit("/", 1)[-1].lower()
        if name in ("bash", "sh", "zsh", "python", "python3"):
            words[0] = name
        return [*words, str(path)]
    ending = path.suffix.lower()
    by_ending = {".js": ["node"], ".mjs": ["node"], ".cjs": ["node"], ".py": ["python3"]}
    by_ending.update({".ts": ["bun", "run"], ".mts": ["bun", "run"], ".cts": ["bun", "run"]})
    by_ending[".ps1"] = ["pwsh", "-File"]
    return [*by_ending.get(ending, ["bash"]), str(path)]


def _first_line(path: Path) -> str:
    """A file's first line (up to 4 KiB), read as `read_jsonc` reads: this runs in the
    server's event loop, so a FIFO or device there is not read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        head = os.read(fd, 4096)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return head.decode("utf-8", "replace").splitlines()[0].strip() if head else ""


def cline_hook_file(event: str, theirs: Path | None) -> str:
    """Our hook file for ``event`` (Cline runs it with ``sh``): our hook, then the
    user's own file for that event, if any, with the same payload and its output and
    status as the hook's. Every word in it is quoted (`shlex.join`): the user's path
    comes with a spawn request (their home, their ``--config``)."""
    ours = hook_command("cline", event)
    if theirs is None:
        return f"#!/bin/sh\nexec {ours}\n"
    return (
        "#!/bin/sh\n"
        "# ptyvisor's hook, then the user's own (the payload has no NUL: it is JSON)\n"
        "payload=$(cat; printf .)\n"
        "payload=${payload%.}\n"
        f'printf %s "$payload" | {ours}\n'
        f'printf %s "$payload" | exec {shlex.join(cline_runner(theirs))}\n'
    )


def cline_dir(folder: Path, args: Sequence[str], env: Mapping[str, str]) -> tuple[Path, list[str]]:
    """The session's ``CLINE_DIR`` (see the module notes) and the arguments to start
    Cline with: the user's own ``--config`` folder is where their entries are read
    from (and is left out, as it would replace ours), and ``--data-dir`` names their
    data folder unless they passed one themselves or run Cline in its sandbox mode
    (``CLINE_SANDBOX=1``), which has no hub either."""
    config, rest = _take_option(args, "--config")
    own_data = any(word.split("=", 1)[0] == "--data-dir" for word in rest)
    home = Path(env.get("HOME") or str(Path.home()))
    # As Cline takes them: a "~" in an option's value is the shell's to expand, not its.
    theirs = Path(config or env.get("CLINE_DIR") or home / ".cline")
    data = Path(env.get("CLINE_DATA_DIR") or theirs / "data")
    # Cline's data stays the user's. A relative folder is the agent's working
    # directory's, which is not this process's: Cline makes that one itself.
    with contextlib.suppress(OSError, ValueError):  # ValueError: a NUL in a path
        if data.is_absolute():
            data.mkdir(parents=True, exist_ok=True)
    hooks = folder / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    _link_entries(theirs, folder, but="hooks")
    chained: dict[str, Path] = {}
    for entry in _entries(theirs / "hooks"):
        event = cline_hook_event(entry.name)
        if event in CLINE_EVENTS and event not in chained:
            chained[event] = entry
        elif not os.path.lexists(hooks / entry.name):
            (hooks / entry.name).symlink_to(entry)
    for event in CLINE_EVENTS:
        (hooks / event).write_text(cline_hook_file(event, chained.get(event)))
    # Already in sandbox mode (its variable): their data folder is that mode's own.
    own_data = own_data or env.get("CLINE_SANDBOX", "").strip() == "1"
    # One word: a folder whose name starts with "-" is not read as an option.
    data_args = [] if own_data else [f"--data-dir={data}"]
    return folder, [*data_args, *rest]


def _link_entries(theirs: Path, ours: Path, *, but: str) -> None:
    """Link every entry of the user's folder ``theirs`` into the session's ``ours`` but
    the one named ``but`` (the session's own), keeping links made before."""
    for entry in _entries(theirs):
        link = ours / entry.name
        if entry.name != but and not os.path.lexists(link):
            link.symlink_to(entry)


def _entries(folder: Path) -> list[Path]:
    """A folder's entries; none if it cannot be listed (or its path holds a NUL)."""
    try:
        return sorted(folder.iterdir())
    except (OSError, ValueError):
        return []


def copilot_plugin(folder: Path) -> Path:
    """A plugin folder for ``copilot --plugin-dir``: a manifest and a ``hooks.json``
    running our hook on every event we report, the event's name as its argument."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "name": "ptyvisor",
        "description": "Reports this session's activity to ptyvisor",
        "version": "1.0.0",
        "hooks": "hooks.json",
    }
    hooks = {
        event: [
            {
                "type": "command",
                "bash": hook_command("copilot", event),
                "timeoutSec": HOOK_TIMEOUT_SECONDS,
            }
        ]
        for event in COPILOT_EVENTS
    }
    (folder / "plugin.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (folder / "hooks.json").write_text(json.dumps({"version": 1, "hooks": hooks}, indent=2) + "\n")
    return folder


OPENCODE_LIKE: dict[str, tuple[str, str]] = {
    "opencode": ("opencode", "OPENCODE_CONFIG_DIR"),
    "kilo": ("kilo", "KILO_CONFIG_DIR"),
}
"""OpenCode and its fork Kilo Code CLI: the program, and the variable naming an extra
config folder, whose plugins and ``tui.json`` are added to the user's own."""


def opencode_config_dir(folder: Path) -> Path:
    """A config folder holding our server plugin (``plugin/``) and naming our TUI
    plugin by path in ``tui.json``; OpenCode (and Kilo) add both to the user's own
    plugins (``~/.config/opencode/``), which stay untouched."""
    plugin_dir = folder / "plugin"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    target = plugin_dir / "ptyvisor.js"
    if not target.exists():
        target.symlink_to(extensions_dir() / "opencode" / "ptyvisor.js")
    tui_config = {"plugin": [str(extensions_dir() / "opencode" / "ptyvisor-tui.js")]}
    (folder / "tui.json").write_text(json.dumps(tui_config))
    return folder


def launch(
    agent: AgentName,
    args: Sequence[str],
    *,
    session_dir: Path,
    resume: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Launch:
    """The argv and environment additions that start ``agent`` with our extension;
    ``resume``: the agent's own id of a conversation to continue (`resume_args`);
    ``env``: the environment the agent will get (where the user's config is)."""
    extra = resume_args(agent, resume) if resume is not None else []
    match agent:
        case "claude-code":
            settings = json.dumps(claude_settings(), separators=(",", ":"))
            return Launch(["claude", "--settings", settings, *args, *extra])
        case "codex":
            # Codex refuses a flag given twice, so one the user passed is not repeated.
            # Resuming is a subcommand (``resume <id>``), which the flags follow.
            flags = [f for f in CODEX_FLAGS if f not in args]
            head, tail = (extra[:1], extra[1:]) if extra else ([], [])
            return Launch(["codex", *head, *flags, *codex_overrides(), *args, *tail])
        case "opencode" | "kilo":
            config_dir = opencode_config_dir(session_dir / agent)
            program, variable = OPENCODE_LIKE[agent]
            return Launch([program, *args, *extra], {variable: str(config_dir)})
        case "qwen-code":
            defaults = session_dir / "qwen-code" / "system-defaults.json"
            defaults.parent.mkdir(parents=True, exist_ok=True)
            defaults.write_text(json.dumps(qwen_system_defaults(), indent=2))
            return Launch(
                ["qwen", *args, *extra], {"QWEN_CODE_SYSTEM_DEFAULTS_PATH": str(defaults)}
            )
        case "pi":
            return _pi_like("pi", "--extension", machine_read=False, args=args, extra=extra)
        case "oh-my-pi":
            command = bool(args) and args[0] in OMP_COMMANDS
            return _pi_like("omp", "-e", machine_read=command, args=args, extra=extra)
        case "copilot":
            plugin = copilot_plugin(session_dir / "copilot")
            return Launch(["copilot", "--plugin-dir", str(plugin), *args, *extra])
        case "droid":
            file, rest = droid_settings(session_dir / "droid", args)
            environment = os.environ if env is None else env
            return Launch(
                ["droid", "--settings", str(file), *rest, *extra],
                terminal_despite_ci(agent, environment),
            )
        case "cline":
            environment = os.environ if env is None else env
            folder, rest = cline_dir(session_dir / "cline", args, environment)
            return Launch(["cline", *rest, *extra], {"CLINE_DIR": str(folder)})
        case "gemini-cli":
            environment = os.environ if env is None else env
            home = gemini_home(session_dir, environment)
            return Launch(
                ["gemini", *args, *extra],
                {"GEMINI_CLI_HOME": str(home), **terminal_despite_ci(agent, environment)},
            )


def _pi_like(
    program: str, option: str, *, machine_read: bool, args: Sequence[str], extra: list[str]
) -> Launch:
    """Pi, or its fork oh-my-pi, with Pi's extension given by ``option``; none where
    its standard output is read by a machine (a mode or subcommand that prints JSON or
    speaks a protocol there): frames would land in it."""
    if machine_read or any(arg.split("=", 1)[0] in PI_MACHINE_MODES for arg in args):
        return Launch([program, *args, *extra])
    extension = extensions_dir() / "pi" / "ptyvisor.js"
    return Launch([program, option, str(extension), *args, *extra])


RESUME_OPTION: dict[AgentName, str] = {
    "claude-code": "--resume",
    "gemini-cli": "--resume",
    "qwen-code": "--resume",
    "opencode": "--session",
    "kilo": "--session",
    "pi": "--session",
    "oh-my-pi": "--resume",
    "copilot": "--resume",
    "droid": "--resume",
    "cline": "--id",
}
"""Each agent's option to continue a conversation (Codex's is the subcommand
``resume <id>``), checked against the pinned versions: Claude Code 2.1.332, OpenCode
1.18 and Kilo 7.7 (``--session``), Pi 1.6 (a session UUID or a prefix of it), Gemini CLI 0.61
(``--resume <uuid>``), Qwen Code 0.24, Copilot CLI 1.0 (``--resume=<uuid>``, as it
prints on exit), oh-my-pi 18.2 (``--resume=<id or prefix>``), Droid 0.225
(``--resume=<session id>``), Cline 3.0 (``--id <session id>``, the
``rootSessionId`` its hooks report)."""
SEPARATE_VALUE: frozenset[AgentName] = frozenset({"pi", "cline"})
"""Agents whose parser takes no ``--option=value``: Pi (0.73 and 1.6) reads ``--session=x``
as an unknown flag for its extensions; Cline's is checked as a separate word only.
Their id goes as the next word, which
`native_id_problem` has made sure cannot be read as an option."""


def resume_args(agent: AgentName, native_session_id: str) -> list[str]:
    """The agent's own way to continue conversation ``native_session_id``, as one
    ``--option=value`` word where the agent's parser takes that (see
    `RESUME_OPTION`); raises `BadNativeId` for an id not shaped like the agent's (a
    frame is untrusted, and so is a record written by an older version)."""
    problem = native_id_problem(agent, native_session_id)
    if problem is not None:
        raise BadNativeId(problem)
    if agent == "codex":
        return ["resume", native_session_id]
    option = RESUME_OPTION[agent]
    if agent in SEPARATE_VALUE:
        return [option, native_session_id]
    return [f"{option}={native_session_id}"]
