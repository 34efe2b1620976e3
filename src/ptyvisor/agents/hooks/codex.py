"""Codex hook events → activity and interaction frames.

Codex reports shell approvals as ``tool_name: "Bash"`` with ``{command,
description}``, and questions through the ``request_user_input`` tool. It has no
failure hook: a failed turn fires neither ``Stop`` nor ``notify``, it only writes a
``task_complete`` event with an ``error`` to its rollout file (``transcript_path``).
So ``UserPromptSubmit`` starts a small detached watcher (`watch_rollout`) that
follows that file until the turn completes and reports ``failed`` if it failed.

A ``PermissionRequest`` then asks the control socket for a client's decision
(`decide`); ptyvisor refuses at once unless ``codex_remote_answers`` is on, and
holds it at most ``codex_answer_wait_seconds``. With no decision the hook prints
nothing and Codex shows its own prompt. ``Stop`` takes the session's queued message,
as Claude's does (``decide.continue_with_queued_message``; the payload has
``stop_hook_active``, and ``SubagentStop`` is a separate event we do not hook).
"""

from __future__ import annotations

import os
import sys
import time
from _collections_abc import Mapping  # collections.abc, without collections (2 ms)

from ptyvisor.agents.hooks import normalise
from ptyvisor.agents.hooks.decide import continue_with_queued_message, request_decision
from ptyvisor.agents.hooks.normalise import (
    Payload,
    cleared,
    request_digest,
    row,
    rows,
    submitted,
    text,
)
from ptyvisor.keeper.proctable import process_start
from ptyvisor.wire import cjson
from ptyvisor.wire.control import Decision

TYPE_CHECKING = False  # not typing's: importing typing costs a hook run 2-7 ms
if TYPE_CHECKING:
    from pathlib import Path  # 4 ms of import: only the rollout watcher opens paths
    from typing import Any

AGENT = "codex"
QUESTION_TOOL = "request_user_input"
DEFAULT_DENY_MESSAGE = "Denied from ptyvisor"
WATCH_SECONDS = 6 * 3600
POLL_SECONDS = 0.25


def activity(phase: str, at: int, event: Mapping[str, Any], reason: str | None = None) -> Payload:
    return normalise.activity(AGENT, phase, at, event, reason)


def request_id(event: Mapping[str, Any]) -> str:
    """The same id for a PermissionRequest and its PostToolUse. In 0.171 the request has
    no ``tool_use_id`` and its input has a ``description`` the PostToolUse input lacks,
    so the id is a digest of the turn, the tool and its command (or whole input)."""
    tool_input = event.get("tool_input")
    if isinstance(tool_input, Mapping) and "command" in tool_input:
        tool_input = tool_input["command"]
    return request_digest(str(event.get("tool_name", "")), [event.get("turn_id"), tool_input])


def map_event(event: Mapping[str, Any], at: int) -> list[Payload]:
    name = event.get("hook_event_name")
    match name:
        case "UserPromptSubmit":
            start_watcher(event)
            return [cleared(at, None, "prompt"), submitted(AGENT, at, event)]
        case "PreToolUse" if event.get("tool_name") == QUESTION_TOOL:
            return [interaction_frame(event, at)]  # 0.171 fires no PermissionRequest for it
        case "PreToolUse":
            return [activity("working", at, event)]
        case "PermissionRequest":
            return [interaction_frame(event, at)]
        case "PostToolUse":
            return [cleared(at, request_id(event), "answered"), activity("working", at, event)]
        case "Stop":
            return [activity("waiting", at, event)]
        case "Interrupt":
            return [activity("waiting", at, event, reason="interrupted")]
        case "SessionEnd":
            return [activity("stopped", at, event, reason=str(event.get("reason") or ""))]
        case _:
            # SessionStart (not hooked, see agents.CODEX_EVENTS), SubagentStart/Stop,
            # compaction: not the main turn's boundaries.
            return []


def interaction_frame(event: Mapping[str, Any], at: int) -> Payload:
    tool = str(event.get("tool_name", ""))
    tool_input = event.get("tool_input")
    fields: Mapping[str, Any] = tool_input if isinstance(tool_input, Mapping) else {}
    interaction = normalise.interaction(request_id(event), AGENT, tool, at)
    if tool == QUESTION_TOOL:
        interaction.update(normalise.question("Codex has a question", fields.get("questions")))
    else:
        command = fields.get("command")
        if isinstance(command, list):
            command = " ".join(str(part) for part in command)
        interaction.update(
            kind="approval",
            title=text("Run a shell command" if tool in ("Bash", "shell") else f"Use {tool}"),
            rows=rows(
                row("Command", command, monospace=True),
                row("Directory", fields.get("workdir") or fields.get("cwd"), monospace=True),
                row("Description", fields.get("description") or fields.get("justification")),
                row("Input", tool_input, monospace=True) if command is None else None,
            ),
        )
    return {"type": "interaction", "at": at, "interaction": interaction}


def decide(event: Mapping[str, Any], frames: list[Payload]) -> Payload | None:
    """For a PermissionRequest: Codex's native answer to a client's decision, or None.
    For Stop: hand Codex the session's queued message, if any."""
    if event.get("hook_event_name") == "Stop":
        continue_with_queued_message(event, AGENT)
        return None
    if event.get("hook_event_name") != "PermissionRequest":
        return None
    framed = [f["interaction"] for f in frames if f.get("type") == "interaction"]
    if not framed or framed[0].get("kind") != "approval":
        return None
    decision = request_decision(framed[0])
    return native_answer(decision) if decision is not None else None


def native_answer(decision: Decision) -> Payload:
    """Codex's PermissionRequest hook output: the same shape as Claude's
    (``{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision":
    {"behavior": "allow"} | {"behavior": "deny", "message": ...}}}``)."""
    verdict: Payload = {"behavior": decision.behavior}
    if decision.behavior == "deny":
        verdict["message"] = decision.message or DEFAULT_DENY_MESSAGE
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": verdict}}


def start_watcher(event: Mapping[str, Any]) -> None:
    """Detach a rollout watcher for this turn. It outlives the hook process.

    Codex starts each hook in a process session of its own, so the watcher is not
    in the program's session, and stopping the session does not stop it. It watches
    Codex itself instead (the hook's parent, by pid and start time) and ends with
    it: it is never left behind, and never writes to a terminal that, its program
    gone, the kernel has handed to the next session."""
    path = event.get("transcript_path")
    program = os.getppid()
    started = process_start(program)
    if not isinstance(path, str) or not path or started is None:
        return
    offset = _size(path)
    argv = [path, str(offset), str(program), str(started)]
    import subprocess  # 6 ms of import, for the Stop hook alone

    subprocess.Popen(
        [sys.executable, "-m", "ptyvisor.agents.hooks.codex", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        process_group=0,
    )


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def turn_outcome(line: str) -> tuple[bool, str | None] | None:
    """For one rollout line: None if it does not end the turn, else (failed, reason)."""
    try:
        record = cjson.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    payload = record.get("payload")
    if record.get("type") != "event_msg" or not isinstance(payload, dict):
        return None
    kind = payload.get("type")
    if kind == "task_complete":
        error = payload.get("error")
        if error:
            # Its message when it is an object; any other value as it is (text masks it).
            return True, text(error.get("message", error) if isinstance(error, dict) else error)
        return False, None
    if kind in ("turn_aborted", "shutdown_complete"):
        return False, None
    return None


def watch_rollout(
    path: Path, offset: int, deadline: float, program: tuple[int, int] | None = None
) -> tuple[bool, str | None] | None:
    """Follow the rollout file from ``offset`` until the turn ends, time runs out or
    the ``program`` (pid, start) has ended."""
    buffered = b""
    while time.monotonic() < deadline:
        try:
            with path.open("rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
        except OSError:
            chunk = b""
        offset += len(chunk)
        buffered += chunk
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            outcome = turn_outcome(line.decode("utf-8", "replace"))
            if outcome is not None:
                return outcome
        if program is not None and process_start(program[0]) != program[1]:
            return None  # Codex has ended, and its session with it
        time.sleep(POLL_SECONDS)
    return None


def _watch_main(argv: list[str]) -> int:
    from pathlib import Path

    try:
        program = (int(argv[2]), int(argv[3]))
        deadline = time.monotonic() + WATCH_SECONDS
        outcome = watch_rollout(Path(argv[0]), int(argv[1]), deadline, program)
        if outcome is not None and outcome[0]:
            from ptyvisor.agents.emit import write_frame

            at = time.time_ns() // 1_000_000
            frame = activity("failed", at, {}, reason=outcome[1] or "turn failed")
            write_frame(frame, only_if=lambda: process_start(program[0]) == program[1])
    except Exception:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(_watch_main(sys.argv[1:]))
