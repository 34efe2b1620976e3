"""Every ``ptyvisor`` subcommand except ``emit`` (see `cli`)."""

from __future__ import annotations

import argparse
import json
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

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.cli import autostart, completion, service
from ptyvisor.cli.contexts import context_command
from ptyvisor.cli.formatting import (
    complain,
    ended_text,
    event_text,
    format_capture,
    format_table,
    process_event,
    say,
)
from ptyvisor.cli.grammar import build_parser
from ptyvisor.cli.tty_attach import TerminalAttachment, parse_key
from ptyvisor.client import contexts, scripting
from ptyvisor.client.client import Client, ConnectionLost
from ptyvisor.client.waiting import Condition, wait
from ptyvisor.config import default_state_dir, read_token
from ptyvisor.errors import (
    BadContext,
    BadReference,
    Disconnected,
    ServerError,
    SessionGone,
    SessionVanished,
)
from ptyvisor.keeper.keeper import UPGRADE_SIGNAL, lock_holder
from ptyvisor.wire.protocol import (
    ActivityChanged,
    ProcessChanged,
    SessionClosed,
    SessionSummary,
    wire_schema,
)
from ptyvisor.wire.refs import resolve


def run_command(args: list[str]) -> int:
    options = build_parser().parse_args(args)
    if options.global_url is not None and getattr(options, "url", None) is None:
        options.url = options.global_url  # ptyvisor -H URL COMMAND, as docker -H
    if options.global_context is not None and getattr(options, "context", None) is None:
        options.context = options.global_context
    command: str = options.command
    if command == "serve":  # normally dispatched before this is imported (`ptyvisor.cli`)
        from ptyvisor.keeper.keeper import main as serve_main

        return serve_main(args[1:])
    if command == "completion":
        parser = build_parser()
        sys.stdout.write(
            completion.bash(parser) if options.shell == "bash" else completion.zsh(parser)
        )
        return 0
    if command == "schema":
        if options.typescript:
            from ptyvisor.wire.typescript import wire_typescript

            text = wire_typescript()
        else:
            text = json.dumps(wire_schema(), indent=2) + "\n"
        return write_output("schema", "-" if options.output is None else options.output, text)
    if command == "restart":
        return restart(options)
    if command == "stop":
        return stop(options)
    if command == "service":
        return service.run(options)
    if command == "context":
        return context_command(options)
    if command == "mcp":
        return _mcp(options)
    if getattr(options, "detach_key", None) is not None:
        # Checked before anything is spawned: a bad key must not leave a session behind.
        try:
            parse_key(options.detach_key)
        except ValueError as bad_key:
            complain(f"ptyvisor {command}: {bad_key}")
            return 2
    detached = command == "run" and options.detach
    if command in ("run", "attach") and not detached and not sys.stdin.isatty():
        # Checked first: `run` would otherwise start a session it cannot attach to.
        complain(f"ptyvisor {command}: standard input is not a terminal")
        return 2
    try:
        if command == "ls" and options.all_contexts:
            return anyio.run(_ls_all_contexts, options)
        if autostart.wanted(options):
            autostart.ensure_server(options)
        return anyio.run(_client_command, options)
    except BaseException as raised:
        # Client.connect runs a task group, so errors arrive wrapped in exception groups.
        error = _unwrap(raised)
        if isinstance(error, ServerError):
            complain(f"ptyvisor: {error.message}")
            return 1
        if isinstance(error, BadContext):
            complain(f"ptyvisor: {error}")
            return 1
        if isinstance(error, InvalidStatus):
            status = error.response.status_code
            hint = " (wrong or missing token?)" if status == 401 else ""
            complain(f"ptyvisor: the server refused the connection: HTTP {status}{hint}")
            return 1
        if isinstance(error, OSError | WebSocketException):
            complain(f"ptyvisor: cannot reach the server: {error}")
            return 1
        if isinstance(error, Disconnected):
            complain(f"ptyvisor: lost the connection to the server: {error}")
            return 1
        if isinstance(error, SessionGone):
            complain(f"ptyvisor: session {error.args[0]} is gone")
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
        complain(f"ptyvisor {command}: cannot write {path}: {unwritable}")
        return 1
    return 0


def _unwrap(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def running_keeper(command: str, options: argparse.Namespace) -> tuple[Path, int] | None:
    """The state directory and the pid of the ``serve`` running on it, or None (said)."""
    state_dir = options.state_dir or default_state_dir()
    keeper = lock_holder(state_dir)
    if keeper is None:
        complain(f"ptyvisor {command}: no ptyvisor serve is running on {state_dir}")
        return None
    return state_dir, keeper


def stop(options: argparse.Namespace) -> int:
    """Signal the keeper (SIGTERM: the documented stop), then wait until it has
    stopped every program and let go of the state directory."""
    running = running_keeper("stop", options)
    if running is None:
        return 1
    state_dir, keeper = running
    os.kill(keeper, signal.SIGTERM)
    deadline = time.monotonic() + options.timeout
    while lock_holder(state_dir) is not None:
        if time.monotonic() >= deadline:
            complain(f"ptyvisor stop: serve (pid {keeper}) still runs after {options.timeout:g} s")
            return 1
        time.sleep(0.05)
    say("stopped")
    return 0


def restart(options: argparse.Namespace) -> int:
    """Signal the keeper (SIGUSR2; SIGUSR1 to upgrade it in place too), then wait for
    a server that started after that."""
    running = running_keeper("restart", options)
    if running is None:
        return 1
    state_dir, keeper = running
    if options.upgrade and not handles(keeper, UPGRADE_SIGNAL):
        complain(
            "ptyvisor restart: the running keeper is from an earlier version and cannot "
            "upgrade in place; `ptyvisor restart` restarts the server process with the new "
            "code, and a stop and start replaces the keeper too (its programs end)"
        )
        return 1
    token = options.token or read_token(state_dir)
    asked = time.time_ns() // 1_000_000
    os.kill(keeper, UPGRADE_SIGNAL if options.upgrade else signal.SIGUSR2)

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
        complain(f"ptyvisor restart: no new server within {options.timeout:g} s")
        return 1
    say("restarted")
    return 0


async def _notify_test(client: Client) -> int:
    """``ptyvisor notify test``: 0 if every target got the test message."""
    results = await client.notify_test()
    if not results:
        complain("ptyvisor notify: the server notifies nobody (serve --notify URL, or URLs")
        complain("in <state-dir>/notify, one per line, then ptyvisor restart)")
        return 1
    for result in results:
        say(f"{result.target} {'delivered' if result.delivered else 'NOT delivered'}")
    return 0 if all(result.delivered for result in results) else 1


def handles(pid: int, signum: int) -> bool:
    """Whether process ``pid`` catches ``signum`` (``SigCgt`` in /proc): signalling a
    process that does not would run the signal's default action, an exit."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def server_url(options: argparse.Namespace) -> str:
    return scripting.server_url(options.url, getattr(options, "context", None))


CONTEXT_SECONDS = 20.0
"""How long ``ls --all-contexts`` waits for one context before saying it is down."""


async def _ls_all_contexts(options: argparse.Namespace) -> int:
    """Every context's sessions, with a HOST column; one that cannot be reached is a
    line saying so, not a failure (exit 0 unless none could be)."""
    listed = contexts.listing()
    found: dict[str, list[SessionSummary]] = {}
    down: dict[str, str] = {}

    async def list_one(context: contexts.Context) -> None:
        token = scripting.client_token(context.url, None, options.state_dir)
        try:
            with anyio.fail_after(CONTEXT_SECONDS):
                async with Client.connect(context.url, token, autostart=False) as client:
                    found[context.name] = await client.list(all=options.all)
        except TimeoutError:
            down[context.name] = f"no answer within {CONTEXT_SECONDS:g} s"
        except Exception as error:  # one line, whatever it is: the others still count
            reason = _unwrap(error)
            down[context.name] = str(reason).splitlines()[0] if str(reason) else repr(reason)

    async with anyio.create_task_group() as tg:
        for context in listed:
            tg.start_soon(list_one, context)
    order = [c.name for c in listed]
    if options.json:
        rows = [
            {"host": name, **s.model_dump(mode="json")}
            for name in order
            for s in found.get(name, [])
        ]
        say(json.dumps(rows, indent=2))
    else:
        sessions = [(name, s) for name in order for s in found.get(name, [])]
        width = _terminal_size()[0] if sys.stdout.isatty() else None
        say(
            format_table(
                [s for _, s in sessions],
                width=width,
                hosts=[name for name, _ in sessions],
                unreachable=[(name, down[name]) for name in order if name in down],
            )
        )
    return 0 if found else 1


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


def _mcp(options: argparse.Namespace) -> int:
    """``ptyvisor mcp``: its output is the protocol, so nothing else goes to stdout."""
    try:
        from ptyvisor.client import mcp_tools
    except ImportError as missing:
        complain(f"ptyvisor mcp: {missing.name} is not installed: pip install 'ptyvisor[mcp]'")
        return 1
    url = server_url(options)
    token = scripting.client_token(url, options.token, options.state_dir)
    return mcp_tools.main(url, token)


async def _client_command(options: argparse.Namespace) -> int:
    url = server_url(options)
    token = scripting.client_token(url, options.token, options.state_dir)
    async with Client.connect(url, token, autostart=autostart.wanted(options)) as client:
        if client.started_remote is not None:
            complain(f"ptyvisor: {url}: {client.started_remote}")
        if options.command in SESSION_ARGUMENT or getattr(options, "session", None):
            listed = await client.list(all=options.command == "resume")
            try:
                options.session = resolve(listed, options.session)
            except BadReference as bad:
                raise ServerError(bad.code, bad.message) from None
        match options.command:
            case "ls":
                sessions = await client.list(all=options.all)
                if options.json:
                    say(json.dumps([s.model_dump(mode="json") for s in sessions], indent=2))
                else:
                    # On a terminal each row fits its width; piped, rows are whole.
                    width = _terminal_size()[0] if sys.stdout.isatty() else None
                    say(format_table(sessions, width=width))
                return 0
            case "resume":
                session = await client.resume(options.session, rerun=options.rerun)
                if not sys.stdin.isatty():
                    say(session.id)
                    return 0
                return await _attach_terminal(client, session.id, options, ran=True)
            case "notify":
                return await _notify_test(client)
            case "kill":
                await client.kill(options.session)
                return 0
            case "close":
                await client.close(options.session, remove_worktree=options.remove_worktree)
                return 0
            case "answer":
                return await _answer(client, options)
            case "send":
                await client.send_message(options.session, options.message)
                say("queued")
                return 0
            case "unsend":
                await client.unsend(options.session)
                return 0
            case "send-keys":
                await client.send_keys(
                    options.session, *options.keys, literal=options.literal, paste=options.paste
                )
                return 0
            case "prompt":
                await client.prompt(options.session, options.text, ready_wait=options.wait)
                return 0  # taken: nothing to print, as send-keys
            case "capture":
                if options.scrollback < 0:
                    complain("ptyvisor capture: --scrollback takes N >= 0")
                    return 2
                captured = await client.capture(
                    options.session,
                    scrollback=-1 if options.all else options.scrollback,
                    ansi=options.ansi,
                )
                # The program's own screen, as it is (see formatting).
                sys.stdout.write(format_capture(captured, json_output=options.json))
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
                await client.rename(options.session, options.name)
                return 0
            case "attach":
                return await _attach_terminal(client, options.session, options)
            case "run":
                argv = options.argv[1:] if options.argv[:1] == ["--"] else options.argv
                if not argv and options.agent is None:
                    complain("ptyvisor run: give a command after -- (or --agent)")
                    return 2
                if options.via and options.agent is None:
                    complain(
                        "ptyvisor run: --via starts an agent (--agent); a command "
                        "takes its wrapper after --"
                    )
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
                    via=shlex.split(options.via) if options.via else None,
                    worktree=options.worktree,
                )
                if options.detach:
                    say(session.id)
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
            complain(f"ptyvisor answer: --choose takes Q=LABEL, not {item!r}")
            return 2
        chosen = answers.setdefault(question, [])
        if isinstance(chosen, str):
            complain(f"ptyvisor answer: question {question!r} has --text too")
            return 2
        chosen.append(label)
    for item in options.text:
        question, sep, value = item.partition("=")
        if not sep or not question:
            complain(f"ptyvisor answer: --text takes Q=TEXT, not {item!r}")
            return 2
        if question in answers:
            complain(f"ptyvisor answer: question {question!r} is answered twice")
            return 2
        answers[question] = value
    found = find_pending(await client.list(), options.interaction, options.session)
    if isinstance(found, str):
        complain(f"ptyvisor: {found}")
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
    say("answered")
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
            say(f"[detached from {session_id}; `ptyvisor attach {session_id}` to return]")
        else:
            say(f"[detached from {session_id} while the server was away]")
        return 0
    ended = attachment.ended
    if ended is not None:
        how = ended_text(ended)
        earlier = attachment.already_exited and not ran
        say(f"[{session_id} had already ended: {how}]" if earlier else f"[{how}]")
    return exit_code


async def _events(client: Client, session_id: str, *, follow: bool, as_json: bool) -> None:
    """The recorded timeline, then (``follow``) each change until the program exits."""

    def show(event: dict[str, Any]) -> None:
        say(json.dumps(event) if as_json else event_text(event))

    def activity_event(at: int, phase: str, reason: str | None) -> dict[str, Any]:
        return {"type": "activity", "at": at, "phase": phase, "reason": reason}

    timeline = await client.timeline(session_id)
    last: tuple[str, int] | None = None
    for transition in timeline.transitions:
        show(activity_event(transition.at, transition.phase.value, transition.reason))
        last = (transition.phase.value, transition.at)
    if timeline.ended_at is not None or not follow:
        if timeline.ended_at is not None:
            summary = next((s for s in await client.list(all=True) if s.id == session_id), None)
            if summary is not None:
                show(process_event(summary.process))
        return
    attached = await client.attach(session_id, view_only=True, scrollback=False)
    activity = attached.session.activity
    if (activity.phase.value, activity.since) != last and activity.phase.value != "unavailable":
        show(activity_event(activity.since, activity.phase.value, activity.reason))
    async for event in client.events():
        match event:
            case ActivityChanged() if event.session == session_id:
                activity = event.activity
                show(activity_event(activity.since, activity.phase.value, activity.reason))
            case ProcessChanged() if event.session == session_id:
                show(process_event(event.process))
                if event.process.state == "exited":
                    return
            case SessionClosed() if event.session == session_id:
                show({"type": "closed", "at": int(time.time() * 1000)})
                return
            case ConnectionLost():
                raise Disconnected("the server went away")
            case _:
                pass


TIMED_OUT = 124
"""``wait``'s status when the condition did not hold in time, as timeout(1)'s."""


async def _wait(client: Client, options: argparse.Namespace) -> int:
    try:
        text = re.compile(options.text) if options.text is not None else None
    except re.error as error:
        complain(f"ptyvisor wait: --text is not a regular expression: {error}")
        return 2
    if options.quiet is not None and not options.quiet >= 0:
        complain("ptyvisor wait: --quiet takes SECONDS >= 0")
        return 2
    if not options.timeout >= 0:
        complain("ptyvisor wait: --timeout takes S >= 0")
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
        complain(f"ptyvisor wait: session {options.session} is gone")
        return TIMED_OUT
    if outcome == "holds":
        return 0
    if outcome == "cannot":
        complain("ptyvisor wait: the program has exited; it can no longer hold")
    else:
        complain(f"ptyvisor wait: timed out after {options.timeout:g} s")
    return TIMED_OUT


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
