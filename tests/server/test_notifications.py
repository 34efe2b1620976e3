"""Notifications through Apprise: what is worth telling (an I/O-free comparison of
summaries, fuzzed targets), the queue's bounds with a sender that hangs, and the
whole path with real Apprise to a local HTTP receiver in its ``json://`` and
``ntfy://`` forms, from real sessions of a real server."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.agents.activity import Activity, ActivityPhase
from ptyvisor.agents.interaction import Interaction
from ptyvisor.client.client import Client
from ptyvisor.config import BadNotifyTarget, NotifyTarget, ServerConfig
from ptyvisor.server.notifications import QUEUE_LIMIT, Notifier, Seen, notices
from ptyvisor.server.serving import run_server
from ptyvisor.wire.protocol import ProcessState, SessionSummary

from ..cli.test_commands import clean_env, run_cli
from ..conftest import PTYVISOR_BIN, TOKEN, poll, serve_refused, start_serve

pytestmark = pytest.mark.anyio


def summary(
    session: str,
    phase: ActivityPhase,
    *,
    pending: str | None = None,
    exited: int | None = None,
    reason: str | None = None,
    name: str = "job",
) -> SessionSummary:
    interaction = None
    if pending is not None:
        interaction = Interaction.model_construct(id="i1", kind="approval", title=pending)
    process = ProcessState(state="exited", exit_code=exited) if exited is not None else None
    return SessionSummary.model_construct(
        id=session,
        name=name,
        past=False,
        activity=Activity(phase=phase, since=0, reason=reason),
        pending_interaction=interaction,
        process=process or ProcessState(state="running"),
    )


def told(*steps: list[SessionSummary]) -> list[tuple[str, str, str]]:
    """(event, title, body) of every notice as the list goes through ``steps``."""
    seen: dict[str, Seen] = {}
    said = []
    for step in steps:
        found, seen = notices(seen, step)
        said += [(n.event, n.title, n.body) for n in found]
    return said


async def test_what_is_worth_telling() -> None:
    work, wait = ActivityPhase.WORKING, ActivityPhase.WAITING
    assert told([summary("s1", work)]) == []  # first seen: noted, not told
    assert told([summary("s1", work)], [summary("s1", wait)]) == [
        ("done", "job: finished a turn", "ready for input")
    ]
    assert told([summary("s1", wait)], [summary("s1", wait)]) == []
    asked = summary("s1", ActivityPhase.NEEDS_INPUT, pending="Run \x1b]52;c;x\x07rm?")
    [(event, title, body)] = told([summary("s1", work)], [asked])
    assert (event, title) == ("input", "job: needs input") and "\x1b" not in body
    failed = summary("s1", ActivityPhase.FAILED, reason="x" * 5000, exited=3)
    assert [e for e, _, _ in told([summary("s1", work)], [failed])] == ["failed", "exited"]
    assert len(told([summary("s1", work)], [failed])[0][2]) <= 300
    past = summary("s2", work).model_copy(update={"past": True})
    assert told([past], [past.model_copy(update={"activity": Activity(phase=wait, since=1)})]) == []


@given(st.text(max_size=200))
def test_any_target_line_is_a_target_or_a_typed_refusal(line: str) -> None:
    try:
        target = NotifyTarget.parse(line)
    except BadNotifyTarget:
        return
    assert "://" in target.url and target.events


@given(
    st.sampled_from(["json", "ntfy", "slack", "x y", ""]),
    st.text("0123456789abcdef", min_size=12, max_size=40),
    st.lists(st.text(max_size=20).filter(lambda w: w.strip() == w and w), max_size=3),
)
def test_a_refusal_never_holds_the_url(scheme: str, secret: str, filters: list[str]) -> None:
    line = " ".join([f"{scheme}://{secret}", *filters])
    try:
        NotifyTarget.parse(line)
    except BadNotifyTarget as refused:
        assert secret not in str(refused)


def test_target_filters() -> None:
    target = NotifyTarget.parse("json://h/secret-token on=done,exited sessions=build-*")
    assert target.shown == "json://…"
    assert target.wants("done", "build-1", "s1") and not target.wants("input", "build-1", "s1")
    assert not target.wants("done", "docs", "s1")
    for bad in ("no-scheme", "json://h/secret-token on=boom", "json://h/secret-token x=1"):
        with pytest.raises(BadNotifyTarget) as refused:
            NotifyTarget.parse(bad)
        assert "secret-token" not in str(refused.value)


async def test_a_sender_that_hangs_costs_bounded_memory_and_counts_what_it_drops() -> None:
    release = threading.Event()
    sent: list[str] = []

    def hanging(url: str, title: str, body: str) -> bool:
        release.wait(30)
        sent.append(title)
        return True

    notifier = Notifier([NotifyTarget("json://h/p")], quiet=60, send=hanging)
    sessions = [f"s{n}" for n in range(QUEUE_LIMIT + 50)]
    phase = dict.fromkeys(sessions, ActivityPhase.WORKING)
    looked = 0

    def summaries() -> list[SessionSummary]:
        nonlocal looked
        looked += 1
        return [summary(s, phase[s], name=s) for s in sessions]

    async def looked_past(count: int) -> None:
        async def more() -> bool:
            return looked > count

        await poll(more)

    async with anyio.create_task_group() as tg:
        await tg.start(notifier.run, summaries)  # every session seen working
        for s in sessions:
            phase[s] = ActivityPhase.WAITING
        notifier.changed()

        async def counted() -> bool:
            return notifier.counts.dropped > 0

        await poll(counted)
        assert notifier.counts.dropped == len(sessions) - QUEUE_LIMIT  # found in one pass
        for s in sessions[:5]:  # a flapping agent: the same again within the quiet time
            phase[s] = ActivityPhase.WORKING
        before = looked
        notifier.changed()
        await looked_past(before)  # the notifier saw them working
        for s in sessions[:5]:
            phase[s] = ActivityPhase.WAITING
        notifier.changed()

        async def quieted() -> bool:
            return notifier.counts.quieted == 5

        await poll(quieted)
        release.set()

        async def drained() -> bool:
            return notifier.counts.sent == QUEUE_LIMIT

        await poll(drained, wait=30)
        tg.cancel_scope.cancel()


class Receiver:
    """A local HTTP endpoint that Apprise's json:// and ntfy:// posts reach."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, str]]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.posts.append((self.path, json.loads(body)))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def titles(self, path: str) -> list[str]:
        return [post.get("title", "") for where, post in self.posts if where == path]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.server.shutdown()
    running.server.server_close()


async def test_each_event_reaches_its_targets_once_through_apprise(
    tmp_path: Path, receiver: Receiver
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    # The file: a target with a filter; the option: one for everything.
    (state / "notify").write_text(
        f"# exits only\nntfy://127.0.0.1:{receiver.port}/topic on=exited\n"
    )
    config = ServerConfig(
        token=TOKEN, port=0, state_dir=state, notify=[f"json://127.0.0.1:{receiver.port}/hook"]
    )
    script = (
        f"{PTYVISOR_BIN} emit activity working; {PTYVISOR_BIN} emit activity waiting; "
        "read line; exit 3"
    )
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, config)
        async with Client.connect(config.url, TOKEN) as client:
            session = await client.spawn(["sh", "-c", script], name="build")

            def has(path: str, text: str) -> bool:
                return any(text in title for title in receiver.titles(path))

            async def turn_done() -> bool:
                return has("/hook", "build: finished a turn")

            await poll(turn_done, wait=30)
            await client.attach(session.id)
            await client.send_input(b"go\r")

            async def exits_told() -> bool:
                return has("/hook", "build: exited") and has("/", "build: exited")

            await poll(exits_told, wait=30)
            results = await client.notify_test()
            assert [(r.target, r.delivered) for r in results] == [
                ("json://…", True),
                ("ntfy://…", True),
            ]
        tg.cancel_scope.cancel()
    assert receiver.titles("/hook").count("build: finished a turn") == 1
    assert receiver.titles("/hook").count("build: exited") == 1
    assert receiver.titles("/") == ["build: exited", "ptyvisor: test"]  # on=exited only


def test_serve_refuses_a_bad_target_and_notify_test_says_who_got_it(
    tmp_path: Path, receiver: Receiver
) -> None:
    """Real ``serve`` and CLI processes: a target that cannot be used is one line at
    start (never the URL); ``ptyvisor notify test`` exits 1 unless every target got
    the test message."""
    env = clean_env(tmp_path / "home", tmp_path / "state")
    refused = serve_refused(["--port", "0", "--notify", "hook-secret-1234"], env)
    assert refused.returncode == 2 and "notification target cannot be used" in refused.stderr
    assert "hook-secret-1234" not in refused.stderr
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        nobody = closed.getsockname()[1]
    good, bad = f"json://127.0.0.1:{receiver.port}/ok", f"json://127.0.0.1:{nobody}/gone"
    args = ["-v", "--port", "0", "--notify", good, "--notify", bad]  # -v: debug lines too
    proc, _page = start_serve(args, env=env, stdout=tmp_path / "out")
    try:
        url = (tmp_path / "out").read_text().split("serving on ", 1)[1].split()[0]
        tested = run_cli("notify", "test", "--url", url, env=env, timeout=90)
        assert tested.returncode == 1, tested.stderr
        assert tested.stdout.splitlines() == ["json://… delivered", "json://… NOT delivered"]
        assert receiver.titles("/ok") == ["ptyvisor: test"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    logged = (tmp_path / "out").read_text()  # Apprise names what it failed to reach
    assert "/gone" not in logged and f":{nobody}" not in logged
