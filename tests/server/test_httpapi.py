"""Read-only JSON over plain HTTP and Prometheus metrics, on the server's port,
behind the token, Host and Origin rules, with no CORS."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ptyvisor.client import contexts
from ptyvisor.client.client import Client
from ptyvisor.config import ServerConfig
from ptyvisor.server.serving import run_server

from ..conftest import PTYVISOR_BIN, TOKEN, RunningServer, child_env, poll
from .test_webpage import get

pytestmark = pytest.mark.anyio
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_sessions_and_screens_as_json_and_text(server: RunningServer) -> None:
    async with Client.connect(server.url, TOKEN) as client:
        session = await client.spawn(["sh", "-c", "echo 'hello over http'; exec sleep 600"],
                                     name="plain")  # fmt: skip

        async def shown() -> bool:
            screen = await get(server, f"/api/sessions/{session.id}/screen", **AUTH)
            return b"hello over http" in screen.body

        await poll(shown)
        listed = await get(server, "/api/sessions", **AUTH)
        assert listed.status == 200 and listed.headers["content-type"] == "application/json"
        assert [s["id"] for s in json.loads(listed.body)] == [session.id]
        one = await get(server, "/api/sessions/plain", **AUTH)  # a name is a reference
        assert json.loads(one.body)["id"] == session.id
        text = await get(server, f"/api/sessions/{session.id[:-1]}/screen", **AUTH)
        assert text.body == b"hello over http\n"
        assert text.headers["content-type"] == "text/plain; charset=utf-8"
        as_json = await get(server, f"/api/sessions/{session.id}/screen?format=json", **AUTH)
        captured = json.loads(as_json.body)
        assert captured["rows"][0] == "hello over http" and captured["size"]["cols"] == 80
        # With ?token= as a browser-less tool might.
        assert (await get(server, f"/api/sessions?token={TOKEN}")).status == 200
        # Errors.
        assert (await get(server, "/api/sessions/nope", **AUTH)).status == 404
        assert (await get(server, f"/api/sessions/{session.id}/other", **AUTH)).status == 404
        assert (await get(server, "/api/sessions", "POST", **AUTH)).status == 405
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            refused = await get(server, "/api/sessions", **headers)
            assert refused.status == 401 and b"hello" not in refused.body
        # No CORS, and another origin's browser is refused outright.
        foreign = await get(server, "/api/sessions", Origin="https://evil.example", **AUTH)
        assert foreign.status == 403
        assert "access-control-allow-origin" not in listed.headers
        assert (await get(server, "/api/sessions", Host="evil.example", **AUTH)).status != 200


async def test_references_in_paths_are_percent_decoded(server: RunningServer) -> None:
    """A name with a space or a slash, as curl and browsers send it."""
    async with Client.connect(server.url, TOKEN) as client:
        spaced = await client.spawn(["sleep", "600"], name="web name")
        slashed = await client.spawn(["sleep", "600"], name="a/b ü")
        for path, ident in (
            ("/api/sessions/web%20name", spaced.id),
            ("/api/sessions/a%2Fb%20%C3%BC", slashed.id),
        ):
            found = await get(server, path, **AUTH)
            assert found.status == 200, (path, found.body)
            assert json.loads(found.body)["id"] == ident
        screen = await get(server, "/api/sessions/web%20name/screen", **AUTH)
        assert screen.status == 200


async def test_metrics_in_prometheus_format(server: RunningServer) -> None:
    async with Client.connect(server.url, TOKEN) as client:
        script = f"{PTYVISOR_BIN} emit activity needs_input --agent tester; exec sleep 600"
        await client.spawn(["sh", "-c", script], env=child_env())
        await client.spawn(["sh", "-c", "exit 3"])

        async def settled() -> bool:
            phases = {s.activity.phase.value for s in await client.list()}
            return phases == {"needs_input", "failed"}

        await poll(settled)
        assert (await get(server, "/metrics")).status == 401  # the token, by default
        reply = await get(server, "/metrics", **AUTH)
        assert reply.status == 200
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(reply.body.decode())
            for sample in family.samples
        }
        assert samples[("ptyvisor_sessions_by_state", (("state", "running"),))] == 1
        assert samples[("ptyvisor_sessions_by_state", (("state", "exited"),))] == 1
        assert samples[("ptyvisor_sessions_by_phase", (("phase", "needs_input"),))] == 1
        assert samples[("ptyvisor_clients", ())] == 1
        assert samples[("ptyvisor_frames_applied_total", ())] >= 1
        assert samples[("ptyvisor_oldest_input_wait_seconds", ())] >= 0
        assert ("ptyvisor_resyncs_total", ()) in samples
        assert ("ptyvisor_output_bytes_total", ()) in samples
        assert re.search(rb"^# TYPE ptyvisor_pending_interactions gauge$", reply.body, re.M)


async def test_metrics_public_needs_no_token(server_config: ServerConfig) -> None:
    server_config.metrics_public = True
    async with anyio.create_task_group() as tg:
        await tg.start(run_server, server_config)
        server = RunningServer(server_config)
        assert (await get(server, "/metrics")).status == 200
        assert (await get(server, "/api/sessions")).status == 401  # only the metrics
        tg.cancel_scope.cancel()


async def test_the_contexts_this_server_relays(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the page lists beside this machine's sessions: the ssh:// contexts only (a
    relay reaches those), behind the token; an unreadable contexts file is a 503."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert json.loads((await get(server, "/api/contexts", **AUTH)).body) == []
    contexts.add("build", "ssh://me@build-box")
    contexts.add("direct", "ws://127.0.0.1:1/")
    listed = await get(server, "/api/contexts", **AUTH)
    assert listed.status == 200 and listed.headers["content-type"] == "application/json"
    assert json.loads(listed.body) == [{"name": "build", "url": "ssh://me@build-box"}]
    assert (await get(server, "/api/contexts")).status == 401
    contexts.store().write_text("not json")
    broken = await get(server, "/api/contexts", **AUTH)
    assert broken.status == 503 and "cannot read" in json.loads(broken.body)["message"]
