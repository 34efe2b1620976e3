"""``ptyvisor mcp`` (client/mcp_tools.py) driven by the official SDK's own client over
standard input and output, against a real ``ptyvisor serve``: a real Pi started,
prompted (confirmed delivered), waited for and read; a held approval seen and answered
through MCP (the real hook, on the real control socket); strings from a session made
inert; a failure the tool's error, the MCP server still serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import ptyvisor
from ptyvisor.client.client import Client as PtyvisorClient
from tests.agents.clis.fake_model import FakeModelServer, Reply, Request
from tests.agents.clis.installed import agent_bin_dir
from tests.agents.clis.offline import offline_env
from tests.timeouts import scaled

from ..conftest import PTYVISOR_BIN, TOKEN, poll, start_serve

pytestmark = pytest.mark.anyio

TOOLS = {
    "list_sessions",
    "start_agent",
    "send_prompt",
    "read_screen",
    "wait_for",
    "get_interaction",
    "answer",
    "interrupt",
    "close_session",
}
PERMISSION = {
    "session_id": "native-1",
    "hook_event_name": "PermissionRequest",
    "tool_name": "Bash",
    "tool_input": {"command": "make deploy", "description": "Deploy"},
}


def serve_for_pi(
    tmp_path: Path, home: Path, project: Path, model: FakeModelServer
) -> tuple[dict[str, str], subprocess.Popen[bytes], str]:
    """A real ``ptyvisor serve`` whose environment runs Pi offline against ``model``
    (what an agent the MCP tools start gets): its environment, process and URL."""
    env, _ = offline_env("pi", home, project, model.base_url)
    env["PATH"] = os.pathsep.join(
        [str(Path(sys.executable).parent), str(agent_bin_dir()), env["PATH"]]
    )
    env.update(PTYVISOR_STATE_DIR=str(tmp_path / "state"), PTYVISOR_TOKEN=TOKEN)
    serve, _ = start_serve(["--port", "0"], env=env, stdout=tmp_path / "serve.out")
    url = (tmp_path / "serve.out").read_text().split("serving on ", 1)[1].split()[0]
    return env, serve, url


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    structured = result.structured_content
    assert isinstance(structured, dict), result
    return structured


@pytest.mark.timeout(120, func_only=True)
async def test_an_agent_driven_through_mcp(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with FakeModelServer() as model:
        env, serve, url = serve_for_pi(tmp_path, tmp_path / "home", project, model)
        try:
            params = StdioServerParameters(
                command=PTYVISOR_BIN, args=["mcp", "--url", url], env=env
            )
            async with Client(params) as client:
                listed = await client.list_tools()
                assert {tool.name for tool in listed.tools} == TOOLS

                started = await call(
                    client, "start_agent", agent="pi", cwd=str(project), name="worker"
                )
                assert started["agent"] == "pi" and started["name"] == "worker"
                model.script(Reply.text("Hello from the worker MCP-DONE"))
                sent = await call(client, "send_prompt", session_ref="worker", text="Say hello")
                assert sent["session"] == started["id"] and sent["accepted_at"] > 0
                await call(client, "wait_for", session_ref="worker", until="working")
                ready = await call(client, "wait_for", session_ref="worker", until="ready")
                assert ready["phase"] == "waiting"
                with anyio.fail_after(scaled(20)):
                    while True:
                        screen = await call(client, "read_screen", session_ref="worker")
                        if any("MCP-DONE" in row for row in screen["rows"]):
                            break
                        await anyio.sleep(0.2)

                # A failure is the tool's error; the MCP server goes on serving.
                missing = await client.call_tool(
                    "send_prompt", {"session_ref": "nope", "text": "x"}
                )
                assert missing.is_error
                assert (await call(client, "list_sessions"))["sessions"]

                closed = await call(client, "close_session", session_ref="worker")
                assert closed == {"closed": started["id"]}
        finally:
            serve.terminate()
            serve.wait(timeout=30)
    model.assert_no_unexpected()


@pytest.mark.timeout(120, func_only=True)
async def test_a_held_approval_answered_through_mcp_and_strings_made_inert(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PTYVISOR_STATE_DIR": str(tmp_path / "state"), "PTYVISOR_TOKEN": TOKEN}
    env = {k: v for k, v in env.items() if k not in ("PTYVISOR_SESSION", "PTYVISOR_NONCE")}
    (tmp_path / "payload.json").write_text(json.dumps(PERMISSION))
    serve, _ = start_serve(["--port", "0"], env=env, stdout=tmp_path / "serve.out")
    try:
        url = (tmp_path / "serve.out").read_text().split("serving on ", 1)[1].split()[0]
        script = (
            f"{sys.executable} -m ptyvisor.agents.hooks claude-code < payload.json "
            "> decision.json; sleep 60"
        )
        async with PtyvisorClient.connect(url, TOKEN) as ptyvisor:
            held = await ptyvisor.spawn(
                ["sh", "-c", script], cwd=str(tmp_path), name="evil\x1b]52;c;x\x07name"
            )
        params = StdioServerParameters(command=PTYVISOR_BIN, args=["mcp", "--url", url], env=env)
        async with Client(params) as client:
            waiting = await call(
                client, "wait_for", session_ref=held.id, until="needs_input", timeout=30
            )
            assert "\x1b" not in json.dumps(waiting) and waiting["name"].startswith("evil")
            asked = await call(client, "get_interaction", session_ref=held.id)
            assert asked["answerable"] is True
            assert asked["interaction"]["kind"] == "approval"
            await call(client, "answer", session_ref=held.id, behavior="deny", message="not now")
            decision = anyio.Path(tmp_path / "decision.json")

            async def decided() -> str | None:
                return await decision.read_text() if await decision.exists() else None

            out = json.loads(await poll(decided, wait=20))
            assert out["hookSpecificOutput"]["decision"]["behavior"] == "deny"
            await call(client, "close_session", session_ref=held.id)
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def orchestrator_reply(tool: str, **arguments: Any) -> Reply:
    """The orchestrating Claude's model calls one of ptyvisor's MCP tools (Claude names
    an MCP server's tools ``mcp__<server>__<tool>``); only Claude's requests take it."""
    return replace(Reply.tool(f"mcp__ptyvisor__{tool}", arguments), when=from_claude)


def from_claude(request: Request) -> bool:
    return request.api == "anthropic"


def from_pi(request: Request) -> bool:
    return request.api == "chat"


@pytest.mark.timeout(180, func_only=True)
async def test_an_agent_drives_another_through_mcp(tmp_path: Path) -> None:
    """Claude Code, given ``ptyvisor mcp`` with ``--mcp-config``, starts Pi, prompts it,
    waits for it and reads its screen, all because its (fake) model called the tools:
    the whole path an orchestrating agent takes, offline, with real agents on both
    ends and the same token and rules as any client."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    async with FakeModelServer() as model:
        env, serve, url = serve_for_pi(tmp_path, home, project, model)
        try:
            claude_env, claude_args = offline_env("claude-code", home, project, model.base_url)
            claude_env["PATH"] = env["PATH"]
            mcp_config = tmp_path / "mcp.json"
            server = {
                "command": PTYVISOR_BIN,
                "args": ["mcp", "--url", url],
                "env": {"PTYVISOR_TOKEN": TOKEN},  # the token never in a command line
            }
            mcp_config.write_text(json.dumps({"mcpServers": {"ptyvisor": server}}))
            model.script(
                orchestrator_reply("start_agent", agent="pi", cwd=str(project), name="worker"),
                orchestrator_reply("send_prompt", session_ref="worker", text="Say PI-HELLO"),
                replace(Reply.text("Hello from Pi PI-DONE"), when=from_pi),
                orchestrator_reply("wait_for", session_ref="worker", until="ready"),
                orchestrator_reply("read_screen", session_ref="worker"),
                replace(Reply.text("The worker said it ORCHESTRATED"), when=from_claude),
            )
            async with ptyvisor.connect(url, TOKEN) as remote:
                args = ["--mcp-config", str(mcp_config), "--allowedTools", "mcp__ptyvisor"]
                orchestrator = await remote.spawn(
                    [*claude_args, *args],
                    agent="claude-code",
                    cwd=str(project),
                    env=claude_env,
                    name="orchestrator",
                    cols=120,
                    rows=40,
                )
                await orchestrator.prompt("Have a worker say hello", ready_wait=60)
                await orchestrator.wait_for(text="ORCHESTRATED", timeout=120)

                claude_turns = [r for r in model.scripted if from_claude(r)]
                started = json.loads(claude_turns[1].tool_results()[-1].output)
                assert started["agent"] == "pi" and started["name"] == "worker"
                screen = claude_turns[-1].tool_results()[-1].output
                assert "PI-DONE" in screen, screen
                (pi_turn,) = [r for r in model.scripted if from_pi(r)]
                assert any("Say PI-HELLO" in text for text in pi_turn.user_texts())
                worker = await remote.session("worker")
                assert worker.id == started["id"]
                assert (await worker.summary()).activity.phase.value == "waiting"
                await worker.close()
                await orchestrator.close()
        finally:
            serve.terminate()
            serve.wait(timeout=30)
    model.assert_no_unexpected()
