"""Publishing a session's activity (publish.py): a client hears of a change once, with
the fields that changed, and nothing when what it sees did not change; whether a
client can answer the pending interaction is news of its own. Real sessions whose
program writes its extension's frames (`test_session.running`)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ptyvisor.server.session.session import Session, now_ms
from ptyvisor.wire.frames import encode_frame

from .test_session import SID, Listener, running, until

pytestmark = pytest.mark.anyio

# Writes each frame file the client names on a line: the agent's hooks, as it were.
WRITER = 'while read name; do cat "$name"; echo "wrote $name"; done'


async def written(
    session: Session, listener: Listener, path: Path, *frames: dict[str, object]
) -> None:
    """The program writes ``frames`` (authentic) and the client has seen it do so."""
    nonce = session.identity.nonce
    await anyio.Path(path).write_bytes(b"".join(encode_frame(SID, nonce, f) for f in frames))
    session.write_input(f"{path}\n".encode())
    await until(lambda: f"wrote {path}".encode() in listener.seen())


def activity_events(listener: Listener) -> list[dict[str, object]]:
    listener.take()
    return [message for message in listener.messages if message["type"] == "activity"]


def report(phase: str, **fields: object) -> dict[str, object]:
    return {"type": "activity", "phase": phase, "at": now_ms(), "agent": "claude-code", **fields}


async def test_a_change_is_told_once_and_no_change_is_not_told(tmp_path: Path) -> None:
    async with running(["sh", "-c", WRITER], tmp_path, agent="claude-code") as (session, listener):
        # Later than the start, even in the millisecond it began: ``since`` changes too.
        began = session.summary().activity.since
        await written(session, listener, tmp_path / "a", report("working", at=began + 1))
        [first] = activity_events(listener)
        assert first["activity"]["phase"] == "working"  # type: ignore[index]
        changed = first["changed"]
        assert isinstance(changed, list) and {"phase", "since", "source"} <= set(changed)
        # The same phase again, later: the tracker moves nothing a client sees.
        await written(session, listener, tmp_path / "b", report("working"))
        assert len(activity_events(listener)) == 1
        session.publisher.changed()  # told of a change that shows nothing new
        assert len(activity_events(listener)) == 1
        await written(session, listener, tmp_path / "c", report("waiting"))
        events = activity_events(listener)
        assert [e["activity"]["phase"] for e in events] == ["working", "waiting"]  # type: ignore[index]
        assert session.stats().frames_applied == 3


async def test_whether_an_interaction_is_answerable_is_news_of_its_own(tmp_path: Path) -> None:
    """A hook holds the request (``holds``) and a client may answer; when it stops
    holding (it timed out, say), clients hear that alone."""
    held = {"req-1"}
    async with running(
        ["sh", "-c", WRITER],
        tmp_path,
        agent="claude-code",
        holds=lambda session, interaction: session == SID and interaction in held,
    ) as (session, listener):
        approval = {
            "id": "req-1",
            "kind": "approval",
            "agent": "claude-code",
            "created_at": now_ms(),
        }
        question = {"type": "interaction", "at": now_ms(), "interaction": approval}
        await written(session, listener, tmp_path / "q", question)
        [asked] = activity_events(listener)
        assert asked["answerable"] is True
        assert asked["pending_interaction"]["id"] == "req-1"  # type: ignore[index]
        session.publisher.requests_changed()  # nothing changed: nothing told
        assert len(activity_events(listener)) == 1
        held.clear()
        session.publisher.requests_changed()
        [_, withdrawn] = activity_events(listener)
        assert withdrawn["answerable"] is False and withdrawn["changed"] == ["answerable"]
        assert not session.publisher.answerable
