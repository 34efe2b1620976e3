"""Messages queued for a running session: a real Claude Code or Codex Stop hook run
inside a real session takes one over the real control socket of a real server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ptyvisor.client.client import Client
from ptyvisor.errors import ServerError
from ptyvisor.wire.protocol import SessionSummary

from .conftest import RunningServer, poll

LOOP = 'while read name; do sh "$name"; done'
"""The session's program: run each script whose name arrives as a line of input."""
PROMPT = {"hook_event_name": "UserPromptSubmit", "session_id": "native-1", "prompt": "go"}
STOP = {"hook_event_name": "Stop", "session_id": "native-1", "stop_hook_active": False}
# Takes the queued message like a Stop hook, records the reply, and exits without
# acknowledging it once ``release`` exists (as a hook that died before printing).
TAKE_AND_DIE = """
import json, os, pathlib, socket, time
sock = socket.socket(socket.AF_UNIX)
sock.connect(os.environ["PTYVISOR_CONTROL"])
request = {"op": "take_message", "session": os.environ["PTYVISOR_SESSION"],
           "nonce": os.environ["PTYVISOR_NONCE"]}
sock.sendall(json.dumps(request).encode() + b"\\n")
pathlib.Path("taken.tmp").write_bytes(sock.recv(65536))
os.replace("taken.tmp", "taken.json")
while not os.path.exists("release"):
    time.sleep(0.02)
"""


class Shell:
    """A session running scripts on request, from its own directory."""

    def __init__(
        self, client: Client, directory: Path, session_id: str, agent: str = "claude-code"
    ) -> None:
        self.client = client
        self.dir = directory
        self.session = session_id
        self.agent = agent
        self.steps = 0

    @classmethod
    async def start(cls, client: Client, directory: Path, agent: str = "claude-code") -> Shell:
        session = await client.spawn(["sh", "-c", LOOP], cwd=str(directory))
        return cls(client, directory, session.id, agent)

    async def run(self, script: str) -> None:
        self.steps += 1
        name = f"step{self.steps}.sh"
        (self.dir / name).write_text(script)
        await self.client.input(self.session, name + "\n")

    async def hook(self, event: dict[str, Any], out: str = "out.json") -> None:
        """Run the real hook of ``agent`` for ``event``; its stdout goes to ``out``,
        complete once ``out.done`` exists."""
        (self.dir / "event.json").write_text(json.dumps(event))
        (self.dir / f"{out}.done").unlink(missing_ok=True)
        hook = f"{sys.executable} -m ptyvisor.agents.hooks {self.agent}"
        await self.run(f"{hook} < event.json > {out}; touch {out}.done\n")
        await poll(self._exists(f"{out}.done"), wait=15)

    def _exists(self, name: str) -> Any:
        async def check() -> bool:
            return (self.dir / name).exists()

        return check

    async def summary(self) -> SessionSummary:
        for item in await self.client.list():
            if item.id == self.session:
                return item
        raise AssertionError("session gone")

    async def phase(self, phase: str) -> None:
        async def reached() -> bool:
            return (await self.summary()).activity.phase.value == phase

        await poll(reached, wait=15)

    async def working(self) -> None:
        await self.hook(PROMPT)
        await self.phase("working")

    async def send(self, message: str) -> None:
        await self.client.send_message(self.session, message)

    async def error_of(self, message: str) -> ServerError:
        with pytest.raises(ServerError) as caught:
            await self.send(message)
        return caught.value

    async def queued(self) -> str | None:
        return (await self.summary()).queued_message


@pytest.mark.anyio
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
async def test_the_stop_hook_blocks_with_the_newest_queued_message(
    server: RunningServer, client: Client, tmp_path: Path, agent: str
) -> None:
    shell = await Shell.start(client, tmp_path, agent)
    await shell.working()
    await shell.send("first")
    assert await shell.queued() == "first"
    await shell.send("then run the tests")  # a newer message replaces it
    assert await shell.queued() == "then run the tests"
    await shell.hook(STOP)
    output = json.loads((tmp_path / "out.json").read_text())
    assert output == {"decision": "block", "reason": "then run the tests"}
    assert await shell.queued() is None
    await shell.phase("working")  # the agent goes on with it
    # The next Stop, continuing because of the hook: nothing taken, no loop.
    await shell.send("later")
    await shell.hook({**STOP, "stop_hook_active": True}, out="again.json")
    assert (tmp_path / "again.json").read_text() == ""
    assert await shell.queued() == "later"
    # An empty queue: the Stop hook prints nothing.
    await client.unsend(shell.session)
    await shell.hook(STOP, out="empty.json")
    assert (tmp_path / "empty.json").read_text() == ""


@pytest.mark.anyio
async def test_refused_unless_working_and_fitting(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    shell = await Shell.start(client, tmp_path)
    error = await shell.error_of("hello")
    assert error.code == "not_running"
    assert "not running" in error.message
    await shell.working()
    assert (await shell.error_of("  \n")).code == "bad_request"
    too_long = await shell.error_of("x" * 4001)
    assert (too_long.code, "longer than 4000" in too_long.message) == ("bad_request", True)
    await shell.send("x" * 4000)
    await client.unsend(shell.session)
    await shell.hook(STOP)  # the turn ends: waiting, and no longer accepting
    await shell.phase("waiting")
    assert (await shell.error_of("hello")).code == "not_running"


@pytest.mark.anyio
async def test_unsend_new_prompt_and_session_end_drop_it(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    shell = await Shell.start(client, tmp_path)
    await shell.working()
    await shell.send("one")
    await client.unsend(shell.session)
    assert await shell.queued() is None
    await shell.send("two")
    await shell.hook(PROMPT)  # a new prompt from the terminal
    assert await shell.queued() is None
    await shell.send("three")
    await client.kill(shell.session)

    async def dropped() -> bool:
        summary = await shell.summary()
        return summary.process.state == "exited" and summary.queued_message is None

    await poll(dropped)


@pytest.mark.anyio
async def test_taken_but_not_delivered_is_put_back_unless_superseded(
    server: RunningServer, client: Client, tmp_path: Path
) -> None:
    (tmp_path / "take.py").write_text(TAKE_AND_DIE)
    shell = await Shell.start(client, tmp_path)
    await shell.working()

    async def take() -> dict[str, Any]:
        for name in ("taken.json", "release"):
            (tmp_path / name).unlink(missing_ok=True)
        await shell.run(f"{sys.executable} take.py &\n")
        await poll(shell._exists("taken.json"))
        taken: dict[str, Any] = json.loads((tmp_path / "taken.json").read_text())
        return taken

    await shell.send("keep me")
    assert await take() == {"op": "message", "text": "keep me"}
    assert await shell.queued() is None
    (tmp_path / "release").touch()  # the hook dies without delivering

    async def back() -> bool:
        return await shell.queued() == "keep me"

    await poll(back)
    # Superseded while taken: the newer message stays, the taken one is not put back.
    assert (await take())["text"] == "keep me"
    await shell.send("newer")
    (tmp_path / "release").touch()
    await anyio.sleep(0.5)
    assert await shell.queued() == "newer"
    # Deleted while taken: stays deleted.
    assert (await take())["text"] == "newer"
    await client.unsend(shell.session)
    (tmp_path / "release").touch()
    await anyio.sleep(0.5)
    assert await shell.queued() is None
