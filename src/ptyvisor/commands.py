"""Every ``ptyvisor`` subcommand except ``emit`` (see `cli`)."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from websockets.exceptions import InvalidStatus, WebSocketException

from ptyvisor import __version__, completion, scripting, serve_options
from ptyvisor.activity import ActivityPhase
from ptyvisor.agents import AGENTS
from ptyvisor.client import Client, ConnectionLost, Disconnected, ServerError
from ptyvisor.config import DEFAULT_HOST, DEFAULT_PORT, default_state_dir, read_token
from ptyvisor.protocol import (
    ActivityChanged,
    Captured,
    ProcessChanged,
    ProcessState,
    SessionClosed,
    SessionSummary,
    wire_schema,
)
from ptyvisor.refs import BadReference, resolve
from ptyvisor.tty_attach import SessionGone, TerminalAttachment, parse_key
from ptyvisor.waiting import Condition, SessionVanished, wait

PHASE_LABELS = {
    "unavailable": "Live",
    "starting": "Starting",
    "working": "Working",
    "needs_input": "Needs input",
    "waiting": "Ready",
    "failed": "Failed",
    "stopped": "Stopped",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptyvisor", description="Supervisor for coding-agent terminals."
    )
    parser.add_argument("-V", "--version", action="version", version=f"ptyvisor {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the server (see ptyvisor serve --help)",
        description="Run the server on loopback with a token: its keeper owns every "
        "program, so restarts and crashes of the server process cost no session.",
    )
    serve_options.add_arguments(serve)

    def client_options(p: argparse.ArgumentParser) -> None:
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
        name: str, summary: str, description: str, *examples: str
    ) -> argparse.ArgumentParser:
        """A client subcommand on one session: its ID argument, the client options,
        and examples under its help."""
        command = sub.add_parser(
            name,
            help=summary,
            description=description,
            epilog="examples:\n" + "".join(f"  {line}\n" for line in examples)
            if examples
            else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        client_options(command)
        command.add_argument("session", metavar="ID", help="session id, name or id prefix")
        return command

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

    attach = session_command(
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

    restart = sub.add_parser(
        "restart",
        help="restart the server process; programs keep running and clients reconnect",
        description="Restart the server process of the `ptyvisor serve` running on the "
        "state directory (to pick up an upgrade, say): its programs keep running, their "
        "screens, activity and queued messages are handed over, and clients reconnect. "
        "Returns once the new server answers.",
    )
    restart.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="the serve to restart (default: $PTYVISOR_STATE_DIR, else ~/.local/share/ptyvisor)",
    )
    client_options(restart)
    restart.add_argument(
        "--timeout", type=float, default=30, help="seconds to wait for the new server (default 30)"
    )

    session_command(
        "kill",
        "terminate a session's programs (HUP, then KILL)",
        "Send SIGHUP to every process of the session, SIGKILL after 2 s; the session "
        "stays listed, with its output, until closed.",
    )
    session_command(
        "close",
        "terminate a session and forget it",
        "Kill the session's programs if they run, and remove the session.",
    )
    send = session_command(
        "send",
        "queue a message for a working agent: its next instruction after this turn",
        "Queue MESSAGE for an agent working on a turn: its next Stop hook takes it and the "
        "agent carries on with it. A newer message replaces the queued one.",
        "ptyvisor send agent 'Also run the linter, then stop.'",
    )
    send.add_argument("message", help="what the agent should do next (at most 4000 characters)")

    session_command(
        "unsend",
        "delete a session's queued message",
        "Delete the message queued with send, if it was not delivered yet.",
    )

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

    send_keys = session_command(
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

    capture = session_command(
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

    waiter = session_command(
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

    events = session_command(
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

    rename = session_command(
        "rename",
        "give a session another name",
        "Rename a session (kept across server restarts and in the records); a name is a "
        "session reference for every other command.",
        "ptyvisor rename s1a2b3c4d review-bot",
    )
    rename.add_argument("name", metavar="NAME", help="the new name (1 to 128 characters)")

    export = session_command(
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

    completer = sub.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print a completion script for bash or zsh, generated from this CLI.",
        epilog='examples: eval "$(ptyvisor completion bash)"   (in ~/.bashrc; zsh alike)',
    )
    completer.add_argument("shell", choices=["bash", "zsh"], help="the shell")

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
    return parser


def run_command(args: list[str]) -> int:
    options = build_parser().parse_args(args)
    command: str = options.command
    if command == "serve":  # normally dispatched before this module is imported (cli.py)
        from ptyvisor.keeper import main as serve_main

        return serve_main(args[1:])
    if command == "completion":
        parser = build_parser()
        print(
            completion.bash(parser) if options.shell == "bash" else completion.zsh(parser), end=""
        )
        return 0
    if command == "schema":
        if options.typescript:
            from ptyvisor.typescript import wire_typescript

            text = wire_typescript()
        else:
            text = json.dumps(wire_schema(), indent=2) + "\n"
        return write_output("schema", "-" if options.output is None else options.output, text)
    if command == "restart":
        return restart(options)
    if getattr(options, "detach_key", None) is not None:
        # Checked before anything is spawned: a bad key must not leave a session behind.
        try:
            parse_key(options.detach_key)
        except ValueError as bad_key:
            print(f"ptyvisor {command}: {bad_key}", file=sys.stderr)
            return 2
    detached = command == "run" and options.detach
    if command in ("run", "attach") and not detached and not sys.stdin.isatty():
        # Checked first: `run` would otherwise start a session it cannot attach to.
        print(f"ptyvisor {command}: standard input is not a terminal", file=sys.stderr)
        return 2
    try:
        return anyio.run(_client_command, options)
    except BaseException as raised:
        # Client.connect runs a task group, so errors arrive wrapped in exception groups.
        error = _unwrap(raised)
        if isinstance(error, ServerError):
            print(f"ptyvisor: {error.message}", file=sys.stderr)
            return 1
        if isinstance(error, InvalidStatus):
            status = error.response.status_code
            hint = " (wrong or missing token?)" if status == 401 else ""
            print(
                f"ptyvisor: the server refused the connection: HTTP {status}{hint}", file=sys.stderr
            )
            return 1
        if isinstance(error, OSError | WebSocketException):
            print(f"ptyvisor: cannot reach the server: {error}", file=sys.stderr)
            return 1
        if isinstance(error, Disconnected):
            print(f"ptyvisor: lost the connection to the server: {error}", file=sys.stderr)
            return 1
        if isinstance(error, SessionGone):
            print(f"ptyvisor: session {error.args[0]} is gone", file=sys.stderr)
            return 1
        if isinstance(error, KeyboardInterrupt):
            return 130
        raise


def write_output(command: str, path: str | Path, text: str) -> int:
    """Write a command's output to ``path`` (``-``: standard output); an exit status,
    with a one-line error when the file cannot be written."""
    if str(path) == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as unwritable:
        print(f"ptyvisor {command}: cannot write {path}: {unwritable}", file=sys.stderr)
        return 1
    return 0


def _unwrap(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def restart(options: argparse.Namespace) -> int:
    """Signal the keeper (SIGUSR2), then wait for a server that started after that."""
    from ptyvisor.keeper import lock_holder

    state_dir = options.state_dir or default_state_dir()
    keeper = lock_holder(state_dir)
    if keeper is None:
        print(f"ptyvisor restart: no ptyvisor serve is running on {state_dir}", file=sys.stderr)
        return 1
    token = options.token or read_token(state_dir)
    asked = time.time_ns() // 1_000_000
    os.kill(keeper, signal.SIGUSR2)

    async def restarted() -> bool:
        deadline = time.monotonic() + options.timeout
        while time.monotonic() < deadline:
            try:
                async with Client.connect(server_url(options), token) as client:
                    if client.hello is not None and client.hello.started_at >= asked:
                        return True
            except Exception:  # away, or refusing (503) while it hands over: try again
                pass
            await anyio.sleep(0.1)
        return False

    if not anyio.run(restarted):
        print(f"ptyvisor restart: no new server within {options.timeout:g} s", file=sys.stderr)
        return 1
    print("restarted")
    return 0


def server_url(options: argparse.Namespace) -> str:
    return scripting.server_url(options.url)


SESSION_ARGUMENT = frozenset(
    {
        "attach",
        "kill",
        "close",
        "send",
        "unsend",
        "resume",
        "send-keys",
        "capture",
        "wait",
        "rename",
        "events",
        "export",
    }
)
"""Commands whose ``session`` argument is a reference (see `refs`)."""


async def _client_command(options: argparse.Namespace) -> int:
    token = options.token or read_token(options.state_dir)
    async with Client.connect(server_url(options), token) as client:
        if options.command in SESSION_ARGUMENT or getattr(options, "session", None):
            listed = await client.list(all=options.command == "resume")
            try:
                options.session = resolve(listed, options.session)
            except BadReference as bad:
                raise ServerError(bad.error) from None
        match options.command:
            case "ls":
                sessions = await client.list(all=options.all)
                if options.json:
                    print(json.dumps([s.model_dump(mode="json") for s in sessions], indent=2))
                else:
                    # On a terminal each row fits its width; piped, rows are whole.
                    width = _terminal_size()[0] if sys.stdout.isatty() else None
                    print(format_table(sessions, width=width))
                return 0
            case "resume":
                session = await client.resume(options.session, rerun=options.rerun)
                if not sys.stdin.isatty():
                    print(session.id)
                    return 0
                return await _attach_terminal(client, session.id, options, ran=True)
            case "kill":
                await client.kill(options.session)
                return 0
            case "close":
                await client.close(options.session)
                return 0
            case "answer":
                return await _answer(client, options)
            case "send":
                await client.send_message(options.session, options.message)
                print("queued")
                return 0
            case "unsend":
                await client.unsend(options.session)
                return 0
            case "send-keys":
                await client.send_keys(
                    options.session, *options.keys, literal=options.literal, paste=options.paste
                )
                return 0
            case "capture":
                if options.scrollback < 0:
                    print("ptyvisor capture: --scrollback takes N >= 0", file=sys.stderr)
                    return 2
                captured = await client.capture(
                    options.session,
                    scrollback=-1 if options.all else options.scrollback,
                    ansi=options.ansi,
                )
                print(format_capture(captured, json_output=options.json), end="")
                return 0
            case "wait":
                return await _wait(client, options)
            case "events":
                await _events(client, options.session, follow=options.follow, as_json=options.json)
                return 0
            case "export":
                cast = await client.export(options.session)
                return await anyio.to_thread.run_sync(
                    write_output, "export", options.asciicast, cast
                )
            case "rename":
                await client.request(
                    {"type": "rename", "session": options.session, "name": options.name}
                )
                return 0
            case "attach":
                return await _attach_terminal(client, options.session, options)
            case "run":
                argv = options.argv[1:] if options.argv[:1] == ["--"] else options.argv
                if not argv and options.agent is None:
                    print("ptyvisor run: give a command after -- (or --agent)", file=sys.stderr)
                    return 2
                cols, rows = _terminal_size()
                cwd = options.cwd or os.getcwd()
                session = await client.spawn(
                    argv,
                    cwd=cwd,
                    name=options.name,
                    cols=cols,
                    rows=rows,
                    agent=options.agent,
                    record=options.record,
                )
                if options.detach:
                    print(session.id)
                    return 0
                return await _attach_terminal(client, session.id, options, ran=True)
    return 2


async def _attach_terminal(
    client: Client, session_id: str, options: argparse.Namespace, *, ran: bool = False
) -> int:
    """``ran``: we started it (`run`, `resume`), so its output is replayed from the start
    when drawn in place, and an early exit is no news of an old one."""
    attachment = TerminalAttachment(
        client,
        session_id,
        parse_key(options.detach_key),
        view_only=getattr(options, "view_only", False),
        alt_screen=options.alt_screen,
        from_start=ran,
    )
    code = await attachment.run()
    return _finish(code, session_id, attachment, ran=ran)


async def _answer(client: Client, options: argparse.Namespace) -> int:
    answers: dict[str, list[str] | str] = {}
    for item in options.choose:
        question, sep, label = item.partition("=")
        if not sep or not question:
            print(f"ptyvisor answer: --choose takes Q=LABEL, not {item!r}", file=sys.stderr)
            return 2
        chosen = answers.setdefault(question, [])
        if isinstance(chosen, str):
            print(f"ptyvisor answer: question {question!r} has --text too", file=sys.stderr)
            return 2
        chosen.append(label)
    for item in options.text:
        question, sep, value = item.partition("=")
        if not sep or not question:
            print(f"ptyvisor answer: --text takes Q=TEXT, not {item!r}", file=sys.stderr)
            return 2
        if question in answers:
            print(f"ptyvisor answer: question {question!r} is answered twice", file=sys.stderr)
            return 2
        answers[question] = value
    found = find_pending(await client.list(), options.interaction, options.session)
    if isinstance(found, str):
        print(f"ptyvisor: {found}", file=sys.stderr)
        return 1
    session_id, interaction_id = found
    await client.answer(
        session_id,
        interaction_id,
        behavior=options.behavior,
        message=options.message,
        suggestion=options.suggestion,
        answers=answers or None,
    )
    print("answered")
    return 0


def find_pending(
    sessions: list[SessionSummary], wanted: str, session: str | None = None
) -> tuple[str, str] | str:
    """(session id, interaction id) of the one pending interaction whose id is
    ``wanted`` or starts with it; else a message saying why not."""
    matches = [
        (s.id, s.pending_interaction.id)
        for s in sessions
        if s.pending_interaction is not None
        and s.pending_interaction.id.startswith(wanted)
        and session in (None, s.id)
    ]
    exact = [match for match in matches if match[1] == wanted]
    if len(exact) == 1 or len(matches) == 1:
        return (exact or matches)[0]
    if not matches:
        return f"interaction {wanted!r} is not waiting: already answered, or never asked"
    return f"{wanted!r} matches several interactions: give more of the id, or --session"


def _finish(
    exit_code: int | None, session_id: str, attachment: TerminalAttachment, *, ran: bool = False
) -> int:
    """Say how the attachment ended: detached, or the program's end (exit status).
    ``ran``: we started it (`run`), so an early exit is no news of an old one."""
    if exit_code is None:
        if attachment.connected:
            print(f"[detached from {session_id}; `ptyvisor attach {session_id}` to return]")
        else:
            print(f"[detached from {session_id} while the server was away]")
        return 0
    ended = attachment.ended
    if ended is not None:
        how = ended_text(ended)
        earlier = attachment.already_exited and not ran
        print(f"[{session_id} had already ended: {how}]" if earlier else f"[{how}]")
    return exit_code


async def _events(client: Client, session_id: str, *, follow: bool, as_json: bool) -> None:
    """The recorded timeline, then (``follow``) each change until the program exits."""

    def say(event: dict[str, Any]) -> None:
        print(json.dumps(event) if as_json else _event_text(event), flush=True)

    def activity_event(at: int, phase: str, reason: str | None) -> dict[str, Any]:
        return {"type": "activity", "at": at, "phase": phase, "reason": reason}

    timeline = await client.timeline(session_id)
    last: tuple[str, int] | None = None
    for transition in timeline.transitions:
        say(activity_event(transition.at, transition.phase.value, transition.reason))
        last = (transition.phase.value, transition.at)
    if timeline.ended_at is not None or not follow:
        if timeline.ended_at is not None:
            summary = next((s for s in await client.list(all=True) if s.id == session_id), None)
            if summary is not None:
                say(_process_event(summary.process))
        return
    attached = await client.attach(session_id, view_only=True, scrollback=False)
    activity = attached.session.activity
    if (activity.phase.value, activity.since) != last and activity.phase.value != "unavailable":
        say(activity_event(activity.since, activity.phase.value, activity.reason))
    async for event in client.events():
        match event:
            case ActivityChanged() if event.session == session_id:
                activity = event.activity
                say(activity_event(activity.since, activity.phase.value, activity.reason))
            case ProcessChanged() if event.session == session_id:
                say(_process_event(event.process))
                if event.process.state == "exited":
                    return
            case SessionClosed() if event.session == session_id:
                say({"type": "closed", "at": int(time.time() * 1000)})
                return
            case ConnectionLost():
                raise Disconnected("the server went away")
            case _:
                pass


def _process_event(process: ProcessState) -> dict[str, Any]:
    return {
        "type": "process",
        "at": process.exited_at or int(time.time() * 1000),
        "state": process.state,
        "exit_code": process.exit_code,
        "signal": process.signal,
        "ended": process.ended,
    }


def _event_text(event: dict[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event["at"] / 1000))
    if event["type"] == "activity":
        label = PHASE_LABELS.get(event["phase"], event["phase"])
        reason = f"  {event['reason']}" if event.get("reason") else ""
        return f"{when}  {label:<11}{reason}".rstrip()
    if event["type"] == "process":
        if event["state"] != "exited":
            return f"{when}  process {event['state']}"
        fields = {k: event[k] for k in ("state", "exit_code", "signal", "ended")}
        return f"{when}  process {ended_text(ProcessState.model_validate(fields))}"
    return f"{when}  session closed"


TIMED_OUT = 124
"""``wait``'s status when the condition did not hold in time, as timeout(1)'s."""


async def _wait(client: Client, options: argparse.Namespace) -> int:
    try:
        text = re.compile(options.text) if options.text is not None else None
    except re.error as error:
        print(f"ptyvisor wait: --text is not a regular expression: {error}", file=sys.stderr)
        return 2
    if options.quiet is not None and not options.quiet >= 0:
        print("ptyvisor wait: --quiet takes SECONDS >= 0", file=sys.stderr)
        return 2
    if not options.timeout >= 0:
        print("ptyvisor wait: --timeout takes S >= 0", file=sys.stderr)
        return 2
    condition = Condition(
        phases=frozenset(ActivityPhase(p) for p in options.phase),
        text=text,
        exited=options.exit,
        quiet=options.quiet,
    )
    if condition.empty:
        condition = Condition(exited=True)
    try:
        outcome = await wait(client, options.session, condition, seconds=options.timeout)
    except SessionVanished:
        print(f"ptyvisor wait: session {options.session} is gone", file=sys.stderr)
        return TIMED_OUT
    if outcome == "holds":
        return 0
    if outcome == "cannot":
        print("ptyvisor wait: the program has exited; it can no longer hold", file=sys.stderr)
    else:
        print(f"ptyvisor wait: timed out after {options.timeout:g} s", file=sys.stderr)
    return TIMED_OUT


def format_capture(captured: Captured, *, json_output: bool) -> str:
    """``capture``'s output: the lines (blank lines at the end dropped), or JSON."""
    if json_output:
        document = {
            "session": captured.session,
            "size": captured.size.model_dump(),
            "rows": captured.rows,
            "scrollback": captured.scrollback,
            "cursor": {"row": captured.cursor_row, "col": captured.cursor_col},
            "title": captured.title,
            "modes": captured.modes.model_dump(),
        }
        return json.dumps(document, indent=2) + "\n"
    lines = [*captured.scrollback, *captured.rows]
    while lines and lines[-1] == "":
        lines.pop()
    return "".join(line + "\n" for line in lines)


def ended_text(process: ProcessState) -> str:
    """ "exited 3", "killed by SIGTERM": how a program ended, as the CLI says it."""
    if process.signal is not None:
        try:
            name = signal.Signals(process.signal).name
        except ValueError:
            name = f"signal {process.signal}"
        return f"killed by {name}"
    return f"exited {process.exit_code if process.exit_code is not None else '?'}"


def _terminal_size() -> tuple[int, int]:
    """This terminal's size; 80x24 without one, or for one that says 0x0 (a PTY
    nobody sized, as under `script`)."""
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except OSError:
        return 80, 24
    if size.columns <= 0 or size.lines <= 0:
        return 80, 24
    return size.columns, size.lines


LS_HEADER = (
    "ID", "NAME", "PROCESS", "ACTIVITY", "FOR", "AGENT", "REASON", "PENDING", "QUEUED",
    "CLIENTS", "COMMAND",
)  # fmt: skip
REASON_CHARS = 40


def format_table(sessions: list[SessionSummary], *, width: int | None = None) -> str:
    """``ls``'s table; ``width``: cut each row to it (a terminal's width)."""
    rows = [LS_HEADER]
    now = time.time() * 1000
    for s in sessions:
        process: str = s.process.state
        if s.process.ended == "lost":
            process = "lost"
        elif s.process.state == "exited":
            process = ended_text(s.process)
        if s.past:
            process = f"past, {process}"
        reason = " ".join((s.activity.reason or "").split()) or "-"
        if len(reason) > REASON_CHARS:
            reason = reason[: REASON_CHARS - 1] + "…"
        rows.append(
            (
                s.id,
                s.name,
                process,
                _activity_label(s),
                _ago(now - s.activity.since),
                s.agent or "-",
                reason,
                _pending(s),
                "yes" if s.queued_message is not None else "-",
                str(s.clients),
                shlex.join(s.command or s.argv),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(LS_HEADER) - 1)]
    lines = [
        "".join(cell.ljust(width) + "  " for cell, width in zip(row, widths, strict=False))
        + row[-1]
        for row in rows
    ]
    if width is not None:
        lines = [line if len(line) <= width else line[: max(width - 1, 0)] + "…" for line in lines]
    return "\n".join(lines)


def _activity_label(s: SessionSummary) -> str:
    """The phase; ``?`` after it when inferred from the terminal, not reported."""
    label = PHASE_LABELS[s.activity.phase.value]
    return f"{label}?" if s.activity.source == "terminal" else label


PENDING_ID_CHARS = 12
"""How much of an interaction id ``ls`` shows: enough for ``answer`` as a prefix."""
PENDING_WHAT_CHARS = 30


def _pending(s: SessionSummary) -> str:
    """The pending interaction, short: its id (prefix), kind and tool or first question."""
    interaction = s.pending_interaction
    if interaction is None:
        return "-"
    if interaction.kind == "question" and interaction.questions:
        what = interaction.questions[0].question
    else:
        what = interaction.tool or interaction.title
    what = " ".join(what.split())
    if len(what) > PENDING_WHAT_CHARS:
        what = what[: PENDING_WHAT_CHARS - 1] + "…"
    return f"{interaction.id[:PENDING_ID_CHARS]} {interaction.kind}: {what}"


def _ago(ms: float) -> str:
    seconds = max(int(ms // 1000), 0)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"
