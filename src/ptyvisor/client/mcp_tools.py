"""``ptyvisor mcp``: the Model Context Protocol on standard input and output, so that
one agent can drive others (the official SDK, PyPI ``mcp``, ``ptyvisor[mcp]``).

Each tool is a thin use of the Python API (client/scripting.py) over a connection of
its own: the same token and rules as any client, an answer one client's answer (the
first wins). What a session produced — names, reasons, interaction text, the screen —
reaches the orchestrating agent's own terminal when it shows a tool's result, so every
string is made inert first (untrusted.printable); a failure is the tool's error, in
one line, never this process's end.

Tools: ``list_sessions``, ``start_agent``, ``send_prompt`` (confirmed delivered: the
``prompt`` request), ``read_screen``, ``wait_for`` (ready, working, needs input,
exited), ``get_interaction``, ``answer``, ``interrupt``, ``close_session``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from ptyvisor.client.scripting import Remote, Session, connect
from ptyvisor.errors import ClientError
from ptyvisor.wire.protocol import SessionSummary
from ptyvisor.wire.untrusted import printable

Until = Literal["ready", "working", "needs_input", "exited"]
PHASES: dict[str, list[str]] = {
    "ready": ["waiting"],
    "working": ["working"],
    "needs_input": ["needs_input"],
}
INSTRUCTIONS = (
    "Drive coding agents that run under ptyvisor: start one in a directory, send it a "
    "prompt (confirmed when the agent takes it), wait until it is ready, needs input or "
    "exits, read its screen, answer what it asks, interrupt it, close it. Sessions are "
    "named by id, exact name or a unique id prefix."
)


class ToolFailed(Exception):
    """A tool that could not do what it was asked; its message, made inert, is the
    tool's error."""


def inert_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with every string in them made inert (see `inert`)."""
    return {printable(key): inert(item) for key, item in fields.items()}


def inert(value: Any) -> Any:
    """``value`` with every string made inert (a session's strings may hold escapes)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(key)): inert(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [inert(item) for item in value]
    return value


def view(summary: SessionSummary) -> dict[str, Any]:
    """A session as an orchestrating agent needs it."""
    pending = summary.pending_interaction
    return inert_fields(
        {
            "id": summary.id,
            "name": summary.name,
            "agent": summary.agent,
            "cwd": summary.cwd,
            "phase": summary.activity.phase.value,
            "reason": summary.activity.reason,
            "running": summary.process.state == "running",
            "exit_code": summary.process.exit_code,
            "worktree": summary.worktree,
            "pending_interaction": None if pending is None else pending.model_dump(mode="json"),
            "answerable": summary.answerable,
        }
    )


def build(
    url: str | None = None, token: str | None = None, state_dir: Path | None = None
) -> MCPServer:
    """The MCP server, reaching ptyvisor's server as the CLI would (``url``: a URL or
    a context's name; ``token``: else the stored one)."""
    server: MCPServer = MCPServer("ptyvisor", instructions=INSTRUCTIONS)

    @asynccontextmanager
    async def remote() -> AsyncIterator[Remote]:
        try:
            async with connect(url, token, state_dir=state_dir) as connected:
                yield connected
        except ClientError as error:
            raise ToolFailed(printable(str(error))) from None

    async def session(connected: Remote, ref: str) -> Session:
        try:
            return await connected.session(ref)
        except LookupError as missing:
            raise ToolFailed(printable(str(missing))) from None

    @server.tool()
    async def list_sessions() -> dict[str, Any]:
        """Every session: id, name, agent, phase (waiting = ready for input), the
        interaction it waits on, whether it runs."""
        async with remote() as connected:
            return {"sessions": [view(s) for s in await connected.sessions()]}

    @server.tool()
    async def start_agent(
        agent: str,
        cwd: str,
        args: list[str] | None = None,
        name: str | None = None,
        worktree: str | None = None,
    ) -> dict[str, Any]:
        """Start ``agent`` (claude-code, codex, opencode, kilo, pi, oh-my-pi, gemini-cli,
        qwen-code, copilot, droid, cline) in directory ``cwd`` with its own ``args``;
        ``worktree``: in a new git worktree of that name ("" names it after the session)."""
        async with remote() as connected:
            started = await connected.spawn(
                args or [], agent=agent, cwd=cwd, name=name, worktree=worktree, cols=120, rows=40
            )
            return view(await started.summary())

    @server.tool()
    async def send_prompt(session_ref: str, text: str, ready_wait: float = 120) -> dict[str, Any]:
        """Type ``text`` as the agent's next prompt once it is ready; returns once the
        agent itself reported taking it (``accepted_at``, Unix ms)."""
        async with remote() as connected:
            target = await session(connected, session_ref)
            at = await target.prompt(text, ready_wait=ready_wait)
            return {"session": target.id, "accepted_at": at}

    @server.tool()
    async def read_screen(session_ref: str, scrollback: int = 0) -> dict[str, Any]:
        """The session's screen as text, with ``scrollback`` lines above it."""
        async with remote() as connected:
            captured = await (await session(connected, session_ref)).screen(scrollback=scrollback)
            rows = [*captured.scrollback, *captured.rows]
            return inert_fields({"rows": rows, "title": captured.title})

    @server.tool()
    async def wait_for(session_ref: str, until: Until, timeout: float = 300) -> dict[str, Any]:  # noqa: ASYNC109
        """Wait until the agent is ``ready`` (for input), ``working``, ``needs_input``
        (an approval or a question: see get_interaction) or ``exited``; then the
        session as list_sessions shows it."""
        async with remote() as connected:
            target = await session(connected, session_ref)
            if until == "exited":
                await target.wait_for(exit=True, timeout=timeout)
            else:
                await target.wait_for(phase=PHASES[until], timeout=timeout)
            return view(await target.summary())

    @server.tool()
    async def get_interaction(session_ref: str) -> dict[str, Any]:
        """The approval or question the agent waits on (null: none), and whether a
        client can answer it (else only the terminal can)."""
        async with remote() as connected:
            summary = await (await session(connected, session_ref)).summary()
            shown = view(summary)
            return {"interaction": shown["pending_interaction"], "answerable": summary.answerable}

    @server.tool()
    async def answer(
        session_ref: str,
        behavior: Literal["allow", "deny"] | None = None,
        answers: dict[str, list[str] | str] | None = None,
        message: str | None = None,
    ) -> dict[str, Any]:
        """Answer the pending interaction: an approval with ``behavior`` (and a
        ``message`` to the agent on deny), a question with ``answers`` ({question id:
        [option labels] or free text}). The first answer from any client wins."""
        async with remote() as connected:
            target = await session(connected, session_ref)
            await target.answer(behavior=behavior, answers=answers, message=message)
            return view(await target.summary())

    @server.tool()
    async def interrupt(session_ref: str) -> dict[str, Any]:
        """Interrupt the agent's turn, as Esc in its terminal does."""
        async with remote() as connected:
            target = await session(connected, session_ref)
            await target.send_keys("Esc")
            return view(await target.summary())

    @server.tool()
    async def close_session(session_ref: str) -> dict[str, Any]:
        """End the session: its program is stopped and the session forgotten."""
        async with remote() as connected:
            target = await session(connected, session_ref)
            await target.close()
            return {"closed": target.id}

    return server


def main(url: str | None, token: str | None) -> int:
    """Serve MCP on standard input and output until the client leaves."""
    build(url, token).run("stdio")
    return 0
