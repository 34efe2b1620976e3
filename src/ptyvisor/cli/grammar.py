"""The command line's grammar: every subcommand and option, with its help text.

Kept apart from running the commands (`commands`) because shell completion
(`ptyvisor.cli.completion`) reads the same parser."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TypeAlias

from ptyvisor import __version__
from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.agents.launch import AGENTS
from ptyvisor.config import DEFAULT_HOST, DEFAULT_PORT
from ptyvisor.keeper import options as serve_options

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""Where each command adds its parser (argparse names the type privately)."""


def client_options(p: argparse.ArgumentParser, *, autostart: bool = True) -> None:
    """The options of every command that talks to a server; ``autostart``: the
    command may start one (and may reach one on another machine)."""
    if autostart:
        p.add_argument(
            "-H",
            "--host",
            dest="url",
            default=None,
            metavar="ssh://[USER@]HOST[:PORT]",
            help="the server on another machine, through your own ssh (its config, keys "
            "and agent apply); ptyvisor must be installed there (docs: Other machines)",
        )
        p.add_argument(
            "--context",
            default=None,
            metavar="NAME",
            help="the server named NAME (ptyvisor context; default: $PTYVISOR_CONTEXT, "
            "else the one in use)",
        )
        p.add_argument(
            "--no-autostart",
            action="store_true",
            help="do not start a server when none answers on this machine "
            "(also: PTYVISOR_NO_AUTOSTART=1)",
        )
    p.add_argument(
        "--url",
        default=None,
        help="server URL, ws:// or the http:// one serve prints (default: $PTYVISOR_URL, "
        f"else ws://{DEFAULT_HOST}:{DEFAULT_PORT}/)",
    )
    p.add_argument(
        "--token",
        default=None,
        help="token (default: $PTYVISOR_TOKEN, else the one in the state directory)",
    )
    if not any(action.dest == "state_dir" for action in p._actions):
        p.add_argument(
            "--state-dir",
            type=Path,
            default=None,
            help="where the token is stored (default: $PTYVISOR_STATE_DIR, else "
            "~/.local/share/ptyvisor)",
        )


def terminal_options(p: argparse.ArgumentParser) -> None:
    """Options of the commands that attach this terminal."""
    p.add_argument("--detach-key", default="^]", help="key that detaches (default ^])")
    p.add_argument(
        "--no-alt-screen",
        dest="alt_screen",
        action="store_false",
        help="draw in place rather than on the alternate screen, so the output also "
        "goes into this terminal's scrollback (default: the alternate screen, and "
        "the shell's screen back on detach)",
    )


def session_command(
    sub: Commands, name: str, summary: str, description: str, *examples: str
) -> argparse.ArgumentParser:
    """A client subcommand on one session: its ID argument, the client options,
    and examples under its help."""
    command = sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog="examples:\n" + "".join(f"  {line}\n" for line in examples) if examples else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    client_options(command)
    command.add_argument("session", metavar="ID", help="session id, name or id prefix")
    return command


def keeper_command(
    sub: Commands, name: str, summary: str, description: str, wait: str, *, connects: bool
) -> argparse.ArgumentParser:
    """A command for the ``serve`` running on a state directory (found by its lock)."""
    command = sub.add_parser(name, help=summary, description=description)
    command.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help=f"the serve to {name} (default: $PTYVISOR_STATE_DIR, else ~/.local/share/ptyvisor)",
    )
    if connects:
        client_options(command, autostart=False)
    command.add_argument(
        "--timeout", type=float, default=30, help=f"seconds to wait for {wait} (default 30)"
    )
    return command


def _serve(sub: Commands) -> None:
    serve = sub.add_parser(
        "serve",
        help="run the server (see ptyvisor serve --help)",
        description="Run the server on loopback with a token: its keeper owns every "
        "program, so restarts and crashes of the server process cost no session.",
    )
    serve_options.add_arguments(serve)


def _run(sub: Commands) -> None:
    run = sub.add_parser(
        "run",
        help="start a program on the server and attach to it",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start CMD in a new session and attach this terminal (detach with "
        "the detach key); with -d, only start it and print its id.",
        epilog="examples:\n  ptyvisor run -- bash\n  ptyvisor run --agent claude-code\n"
        "  id=$(ptyvisor run -d --name tests -- make test)\n",
    )
    client_options(run)
    run.add_argument("--name", default=None, help="the session's name (default: the command)")
    run.add_argument("--cwd", default=None, help="working directory (default: this one)")
    run.add_argument(
        "--agent",
        choices=AGENTS,
        default=None,
        help="start this agent with ptyvisor's extension; arguments after -- go to the agent",
    )
    run.add_argument(
        "--via",
        metavar="WRAPPER",
        default=None,
        help="with --agent: start it through WRAPPER ('ssh -t host', 'docker exec -it "
        "box', 'kubectl exec -it pod --'), whose far side has ptyvisor; it reports from "
        "there as if local",
    )
    run.add_argument(
        "--worktree",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="start it in a new git worktree of this directory's repository, on a new "
        "branch ptyvisor/NAME (default NAME: the session's id); close --remove-worktree "
        "removes it",
    )
    terminal_options(run)
    run.add_argument(
        "--record",
        action="store_true",
        help="record it as asciicast v2 into <state-dir>/recordings/<id>.cast (default: "
        "only when the server records every session, serve --record)",
    )
    run.add_argument(
        "-d",
        "--detach",
        action="store_true",
        help="start it and print only its id; no terminal needed (size: this terminal's, "
        "else 80x24)",
    )
    run.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the program and its arguments"
    )


def _attach(sub: Commands) -> None:
    attach = session_command(
        sub,
        "attach",
        "attach this terminal to a session",
        "Show a session in this terminal and type into it; the detach key leaves it "
        "running (pressed twice, the program gets it). Rides out server restarts.",
        "ptyvisor attach build",
    )
    terminal_options(attach)
    attach.add_argument(
        "--view-only",
        action="store_true",
        help="watch only: keys are not sent and the program keeps its size",
    )


def _ls(sub: Commands) -> None:
    ls = sub.add_parser(
        "ls",
        help="list sessions",
        description="A table of the sessions: process, activity (`Ready?`: inferred from "
        "the terminal, not reported by an extension), agent, reason, pending "
        "interaction, queued message, clients, command.",
    )
    client_options(ls)
    ls.add_argument("--json", action="store_true", help="print the summaries as JSON")
    ls.add_argument(
        "--all",
        action="store_true",
        help="also past sessions (exited, or from before a restart or reboot)",
    )
    ls.add_argument(
        "--all-contexts",
        action="store_true",
        help="every context's sessions, with a HOST column (one that cannot be reached "
        "is a line saying so)",
    )


def _resume(sub: Commands) -> None:
    resume = sub.add_parser(
        "resume",
        help="start a past agent session again on its own conversation",
        description="Start session ID again: an agent on its own conversation (its CLI's "
        "resume flag), in the same directory, with the same name. A plain command is "
        "started again with the same arguments only with --rerun. Attaches this terminal "
        "when it is one, else prints the new session's id.",
    )
    client_options(resume)
    resume.add_argument("session", metavar="ID", help="session id (see ls --all), or a prefix")
    resume.add_argument(
        "--rerun", action="store_true", help="start a plain command again (no conversation)"
    )
    terminal_options(resume)


def _restart_and_stop(sub: Commands) -> None:
    restart = keeper_command(
        sub,
        "restart",
        "restart the server process; programs keep running and clients reconnect",
        "Restart the server process of the `ptyvisor serve` running on the "
        "state directory (to pick up an upgrade, say): its programs keep running, their "
        "screens, activity and queued messages are handed over, and clients reconnect. "
        "Returns once the new server answers.",
        "the new server",
        connects=True,
    )
    restart.add_argument(
        "--upgrade",
        action="store_true",
        help="also replace the keeper in place with the installed code (after pip install "
        "-U): same pid and descriptors, no program notices (default: the server process "
        "only)",
    )
    keeper_command(
        sub,
        "stop",
        "stop the server and every program it runs",
        "Stop the `ptyvisor serve` running on the state directory, as SIGTERM or Ctrl-C "
        "to it does: every program gets SIGHUP, then SIGKILL after 2 s, and everything "
        "they started is reaped. Returns once serve has exited. (Closing the terminal "
        "serve runs in, or logging out of it, stops nothing.)",
        "serve to exit",
        connects=False,
    )


def _context(sub: Commands) -> None:
    context = sub.add_parser(
        "context",
        help="name servers on other machines, and choose the one commands reach",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Name a server (as docker and kubectl name their targets): every "
        "client command then reaches the one in use, or the one --context names. "
        "'default' is this machine's.",
        epilog="examples:\n  ptyvisor context add build ssh://me@build-box\n"
        "  ptyvisor context use build\n  ptyvisor --context default ls\n",
    )
    actions = context.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="add, rm, use or ls"
    )
    add = actions.add_parser("add", help="name a server: NAME URL")
    add.add_argument("name", metavar="NAME")
    add.add_argument("url", metavar="URL", help="ssh://[USER@]HOST[:PORT], ws://, wss://")
    actions.add_parser("rm", help="forget a name").add_argument("name", metavar="NAME")
    actions.add_parser("use", help="reach this one from now on").add_argument(
        "name", metavar="NAME"
    )
    actions.add_parser("ls", help="the names, their URLs, and which is in use")


def _notify(sub: Commands) -> None:
    notify = sub.add_parser(
        "notify",
        help="notifications (serve --notify): send a test message",
        description="Ask the server to send a test notification to every target it has "
        "(serve --notify, <state-dir>/notify) and say which got it; exit 1 if one did not.",
    )
    notify_actions = notify.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="test: send a test message"
    )
    client_options(notify_actions.add_parser("test", help="send a test notification"))


def _mcp(sub: Commands) -> None:
    mcp = sub.add_parser(
        "mcp",
        help="serve the Model Context Protocol on stdin/stdout: agents driving agents",
        description="Serve MCP on standard input and output (needs ptyvisor[mcp]), so "
        "an orchestrating agent can list sessions, start an agent, send it a prompt "
        "(confirmed delivered), read its screen, wait for it, answer what it asks, "
        "interrupt and close it — through this machine's server, or the one -H or "
        "--context names.",
        epilog="example (Claude Code): claude mcp add ptyvisor -- ptyvisor mcp",
    )
    client_options(mcp)


def _service(sub: Commands) -> None:
    service = sub.add_parser(
        "service",
        help="run serve as a systemd user service",
        description="Install or remove a systemd user unit that runs serve: "
        "`systemctl --user stop ptyvisor` is then the documented stop, `reload` is "
        "`ptyvisor restart`, and logging out does not end it (docs: Running the "
        "server, for `loginctl enable-linger`).",
    )
    actions = service.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="install or uninstall the unit"
    )
    install = actions.add_parser(
        "install", help="write ~/.config/systemd/user/ptyvisor.service (and start it)"
    )
    install.add_argument("--port", type=int, default=DEFAULT_PORT, help="(default 7733)")
    install.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="(default: $PTYVISOR_STATE_DIR, else ~/.local/share/ptyvisor)",
    )
    install.add_argument(
        "--enable", action="store_true", help="also daemon-reload and enable --now it"
    )
    actions.add_parser("uninstall", help="stop and disable it (its programs end), remove it")


def _kill_close_send_unsend(sub: Commands) -> None:
    session_command(
        sub,
        "kill",
        "terminate a session's programs (HUP, then KILL)",
        "Send SIGHUP to every process of the session, SIGKILL after 2 s; the session "
        "stays listed, with its output, until closed.",
    )
    close = session_command(
        sub,
        "close",
        "terminate a session and forget it",
        "Kill the session's programs if they run, and remove the session.",
    )
    close.add_argument(
        "--remove-worktree",
        action="store_true",
        help="also remove the git worktree it was started in (run --worktree); one with "
        "uncommitted changes is kept, and said so (exit 1). Its branch stays",
    )
    send = session_command(
        sub,
        "send",
        "queue a message for a working agent: its next instruction after this turn",
        "Queue MESSAGE for an agent working on a turn: its next Stop hook takes it and the "
        "agent carries on with it. A newer message replaces the queued one.",
        "ptyvisor send agent 'Also run the linter, then stop.'",
    )
    send.add_argument("message", help="what the agent should do next (at most 4000 characters)")

    session_command(
        sub,
        "unsend",
        "delete a session's queued message",
        "Delete the message queued with send, if it was not delivered yet.",
    )


def _answer(sub: Commands) -> None:
    answer = sub.add_parser(
        "answer",
        help="answer the approval or question an agent is waiting on (see ls)",
        description="Answer a pending interaction by its id (the PENDING column of ls): "
        "allow or deny an approval, or choose options and give text for questions.",
        epilog="examples:\n  ptyvisor answer req-1a2b --allow\n"
        "  ptyvisor answer req-3c4d --choose q0=Yes\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    client_options(answer)
    answer.add_argument("interaction", metavar="ID", help="interaction id, or a unique prefix")
    answer.add_argument("--session", default=None, help="only look in this session")
    verdict = answer.add_mutually_exclusive_group()
    verdict.add_argument(
        "--allow", action="store_const", const="allow", dest="behavior", help="allow it"
    )
    verdict.add_argument(
        "--deny", action="store_const", const="deny", dest="behavior", help="deny it"
    )
    answer.add_argument("--message", default=None, help="reason given with --deny")
    answer.add_argument("--suggestion", type=int, default=None, help="suggestion index (--allow)")
    answer.add_argument(
        "--choose",
        action="append",
        default=[],
        metavar="Q=LABEL",
        help="choose an option of question Q (repeatable; several for multi-select)",
    )
    answer.add_argument(
        "--text", action="append", default=[], metavar="Q=TEXT", help="free text for question Q"
    )


def _send_keys(sub: Commands) -> None:
    send_keys = session_command(
        sub,
        "send-keys",
        "type keys and text into a session, as tmux's send-keys",
        "Send each KEY to the session's program: a key name (Enter, Esc, Tab, BTab, "
        "BSpace, Space, Up, Down, Left, Right, Home, End, PgUp, PgDn, DC, IC, F1-F12; C-x "
        "for Control, M-x for Meta) or text. Keys follow the program's modes (application "
        "cursor keys); text with a line break goes as a bracketed paste when the program "
        "asked for that.",
        "ptyvisor send-keys build 'make test' Enter",
        "ptyvisor send-keys s1a2b C-c",
        "ptyvisor send-keys -l s1a2b 'Enter is a word here'",
    )
    send_keys.add_argument("keys", nargs="+", metavar="KEY", help="key name or text")
    send_keys.add_argument(
        "-l", "--literal", action="store_true", help="send every KEY as text (default: off)"
    )
    send_keys.add_argument(
        "-p",
        "--paste",
        action="store_true",
        help="send text as a paste (bracketed when the program asked; default: off)",
    )


def _prompt(sub: Commands) -> None:
    prompt = session_command(
        sub,
        "prompt",
        "type a prompt into an agent and confirm it took it",
        "Wait until the agent is ready for input, type TEXT and Enter, and return once "
        "the agent itself reports taking that prompt (matched by digest); exit 1 saying "
        "why when it did not. The text is never in the input box twice.",
        "ptyvisor prompt agent 'Run the tests and fix what fails'",
    )
    prompt.add_argument("text", help="the prompt (a line break goes as part of it)")
    prompt.add_argument(
        "--wait",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="how long to wait for the agent to be ready (default: 120)",
    )


def _capture(sub: Commands) -> None:
    capture = session_command(
        sub,
        "capture",
        "print a session's screen",
        "Print the session's screen as plain text (trailing blanks trimmed), as the "
        "server's terminal shows it now.",
        "ptyvisor capture build",
        "ptyvisor capture build --scrollback 100 --ansi | less -R",
        "ptyvisor capture build --json | jq .cursor",
    )
    capture.add_argument("--ansi", action="store_true", help="with colours (default: plain)")
    lines = capture.add_mutually_exclusive_group()
    lines.add_argument(
        "--scrollback", type=int, default=0, metavar="N", help="also the last N lines above (0)"
    )
    lines.add_argument(
        "--all", action="store_true", help="also all of the scrollback (default: off)"
    )
    capture.add_argument(
        "--json",
        action="store_true",
        help="rows, scrollback, cursor, title, modes and size as JSON (default: off)",
    )


def _wait(sub: Commands) -> None:
    waiter = session_command(
        sub,
        "wait",
        "block until a session reaches a state (exit 0), or time out (exit 124)",
        "Wait until every condition given holds at once: exit 0. Exit 124 when --timeout "
        "passes, or sooner once the condition can no longer hold (the program exited and "
        "its final screen or activity does not match), like timeout(1). Without a "
        "condition: until the program exits.",
        "ptyvisor wait agent --phase waiting --timeout 120",
        "ptyvisor wait build --text '^(PASS|FAIL)' --timeout 600",
        "ptyvisor wait build --exit; ptyvisor wait tail --quiet 2",
    )
    waiter.add_argument(
        "--phase",
        nargs="+",
        default=[],
        choices=[phase.value for phase in ActivityPhase],
        metavar="P",
        help="the activity is one of these (waiting is Ready; default: any)",
    )
    waiter.add_argument(
        "--text",
        default=None,
        metavar="REGEX",
        help="a line of the screen matches (Python re, each line on its own; default: any)",
    )
    waiter.add_argument("--exit", action="store_true", help="the program has exited (default: off)")
    waiter.add_argument(
        "--quiet",
        type=float,
        default=None,
        metavar="SECONDS",
        help="no output for this long (default: off)",
    )
    waiter.add_argument(
        "--timeout",
        type=float,
        default=math.inf,
        metavar="S",
        help="give up after S seconds, exit 124 (default: never)",
    )


def _events(sub: Commands) -> None:
    events = session_command(
        sub,
        "events",
        "print a session's activity timeline and process changes",
        "Print the session's recorded activity transitions (time, phase, reason) and how "
        "its program ended; with --follow, then every change as it happens until the "
        "program exits.",
        "ptyvisor events agent",
        "ptyvisor events agent --follow --json | jq -c 'select(.type == \"activity\")'",
    )
    events.add_argument(
        "--follow", "-f", action="store_true", help="keep printing changes (default: off)"
    )
    events.add_argument(
        "--json", action="store_true", help="one JSON object per line, NDJSON (default: text)"
    )


def _rename(sub: Commands) -> None:
    rename = session_command(
        sub,
        "rename",
        "give a session another name",
        "Rename a session (kept across server restarts and in the records); a name is a "
        "session reference for every other command.",
        "ptyvisor rename s1a2b3c4d review-bot",
    )
    rename.add_argument("name", metavar="NAME", help="the new name (1 to 128 characters)")


def _export(sub: Commands) -> None:
    export = session_command(
        sub,
        "export",
        "write what the replay log holds as an asciicast file",
        "Write the output the server still holds for a session (the last --replay-bytes, "
        "2 MiB by default) as an asciicast v2 file, with its timing and a marker for each "
        "activity change; `asciinema play FILE` plays it.",
        "ptyvisor export build --asciicast build.cast",
        "ptyvisor export build --asciicast - | asciinema cat -",
    )
    export.add_argument(
        "--asciicast",
        required=True,
        metavar="FILE",
        help="the file to write (- for standard output; required)",
    )


def _completion_emit_schema(sub: Commands) -> None:
    completer = sub.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print a completion script for bash or zsh, generated from this CLI.",
        epilog='examples: eval "$(ptyvisor completion bash)"   (in ~/.bashrc; zsh alike)',
    )
    completer.add_argument("shell", choices=["bash", "zsh"], help="the shell")

    sub.add_parser(
        "dial-stdio",
        help="bridge standard input and output to this machine's server (the far end of -H ssh://)",
        description="Write one line with this machine's server token, then copy "
        "standard input to the server and its answers to standard output; with "
        "--no-autostart, do not start a server when none answers. What `ssh HOST "
        "ptyvisor dial-stdio` runs for a client given -H ssh://HOST.",
    )
    sub.add_parser(
        "via-exec",
        help="start an agent on the far side of run --via (run by ptyvisor itself)",
        description="Take the session's setup through the terminal, then start the "
        "agent with its extension: what `run --agent A --via WRAPPER` runs through the "
        "wrapper. Arguments: SESSION TOKEN.",
    )
    sub.add_parser(
        "emit",
        help="write an activity frame (used by agent extensions)",
        description="Write an authenticated activity frame to this session's terminal "
        "(see ptyvisor emit --help for its own options).",
    )
    schema = sub.add_parser(
        "schema",
        help="print the JSON Schema (or TypeScript types) of every wire message",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print the JSON Schema of every message of the WebSocket protocol.\n"
        "With --typescript, a TypeScript declaration file (.d.ts) generated from it instead:\n"
        "an interface per message, and the ClientMessage and ServerMessage unions.\n\n"
        "examples:\n"
        "  ptyvisor schema > ptyvisor.schema.json\n"
        "  ptyvisor schema --typescript -o web/src/ptyvisor.d.ts",
    )
    schema.add_argument(
        "--typescript",
        action="store_true",
        help="print TypeScript declarations (.d.ts) generated from the JSON Schema "
        "(default: the JSON Schema)",
    )
    schema.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write to FILE instead (default: standard output)",
    )


COMMANDS = (
    _serve,
    _run,
    _attach,
    _ls,
    _resume,
    _restart_and_stop,
    _context,
    _notify,
    _mcp,
    _service,
    _kill_close_send_unsend,
    _answer,
    _send_keys,
    _prompt,
    _capture,
    _wait,
    _events,
    _rename,
    _export,
    _completion_emit_schema,
)
"""Each adds its commands, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptyvisor", description="Supervisor for coding-agent terminals."
    )
    parser.add_argument("-V", "--version", action="version", version=f"ptyvisor {__version__}")
    parser.add_argument(
        "-H",
        "--host",
        dest="global_url",
        default=None,
        metavar="ssh://[USER@]HOST[:PORT]",
        help="the server on another machine for the command that follows (as docker -H)",
    )
    parser.add_argument(
        "--context",
        dest="global_context",
        default=None,
        metavar="NAME",
        help="the server named NAME for the command that follows (see ptyvisor context)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser
