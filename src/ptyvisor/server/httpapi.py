"""Read-only JSON over plain HTTP, and Prometheus metrics, for tools that speak no
WebSocket: ``curl``, shell scripts, monitoring.

    GET /api/sessions                  the summaries `list` gives
    GET /api/sessions/{ref}            one session (an id, a name, a unique id prefix)
    GET /api/sessions/{ref}/screen     its screen as text; ``?format=json``: `captured`
    GET /api/contexts                  the contexts this server relays (``/contexts/NAME``)
    GET /metrics                       Prometheus text format

The same port, the same token (``Authorization: Bearer`` or ``?token=``), the same
Host and Origin rules as everything else, and no CORS: a page of another origin
cannot read any of it. Nothing here changes state; that stays on the WebSocket and
the CLI. ``/metrics`` may be served without the token (``serve --metrics-public``).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from http import HTTPStatus
from urllib.parse import parse_qs, unquote, urlsplit

from websockets.http11 import Request, Response

from ptyvisor.client import contexts
from ptyvisor.client.ssh import is_ssh
from ptyvisor.config import ServerConfig
from ptyvisor.errors import BadContext, BadReference
from ptyvisor.server import access
from ptyvisor.server.notifications import Counts
from ptyvisor.server.supervisor import Supervisor
from ptyvisor.server.webpage import http_response
from ptyvisor.wire.protocol import Error
from ptyvisor.wire.refs import resolve
from ptyvisor.wire.untrusted import printable

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
METRICS = "text/plain; version=0.0.4; charset=utf-8"


def handles(path: str) -> bool:
    return path in {"/metrics", "/api/sessions", "/api/contexts"} or path.startswith(
        "/api/sessions/"
    )


async def respond(
    config: ServerConfig,
    supervisor: Supervisor,
    request: Request,
    local_address: str | None,
    clients: Callable[[], int],
) -> Response:
    """The answer to a GET of one of `handles`'s paths."""
    refused = access.browser_refusal(config, request, local_address)
    if refused is not None:
        return _response(refused[0], refused[1], TEXT)
    if request.method not in ("GET", "HEAD"):
        return _response(HTTPStatus.METHOD_NOT_ALLOWED, "read-only: GET\n", TEXT)
    url = urlsplit(request.path)
    public = url.path == "/metrics" and config.metrics_public
    offered = access.offered_token(request)
    if not public and (offered is None or not access.token_matches(config, offered)):
        return _response(HTTPStatus.UNAUTHORIZED, "missing or wrong token\n", TEXT)
    if url.path == "/metrics":
        return _response(HTTPStatus.OK, metrics(supervisor, clients()), METRICS)
    if url.path == "/api/contexts":
        return _contexts()
    # Each part percent-decoded on its own: a name may hold a space (%20) or a "/" (%2F).
    parts = [unquote(part) for part in url.path.removeprefix("/api/sessions").strip("/").split("/")]
    summaries = supervisor.summaries()
    if parts == [""]:
        listed = [summary.model_dump(mode="json") for summary in summaries]
        return _response(HTTPStatus.OK, json.dumps(listed), JSON)
    try:
        session_id = resolve(summaries, parts[0])
    except BadReference as bad:
        status = HTTPStatus.NOT_FOUND if bad.code == "unknown_session" else HTTPStatus.CONFLICT
        error = Error.model_validate({"code": bad.code, "message": bad.message})
        return _response(status, error.model_dump_json(), JSON)
    if parts[1:] == []:
        summary = next(s for s in summaries if s.id == session_id)
        return _response(HTTPStatus.OK, summary.model_dump_json(), JSON)
    if parts[1:] == ["screen"]:
        captured = await supervisor.get(session_id).capture(scrollback=0, ansi=False)
        if parse_qs(url.query).get("format") == ["json"]:
            return _response(HTTPStatus.OK, captured.model_dump_json(), JSON)
        rows = list(captured.rows)
        while rows and rows[-1] == "":
            rows.pop()
        return _response(HTTPStatus.OK, "".join(row + "\n" for row in rows), TEXT)
    return _response(HTTPStatus.NOT_FOUND, "no such resource\n", TEXT)


def metrics(supervisor: Supervisor, clients: int) -> str:
    """The server's state as Prometheus metrics (totals over the sessions it has now)."""
    sessions = supervisor.sessions()
    by_state: Counter[str] = Counter()
    by_phase: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    output = applied = resyncs = resync_snapshots = pending = 0
    oldest_wait = 0.0
    now = time.time()
    for session in sessions:
        summary = session.summary()
        by_state[summary.process.state] += 1
        by_phase[summary.activity.phase.value] += 1
        output += session.log.end_seq
        applied += session.core.frames.applied
        resyncs += session.clients.resyncs
        resync_snapshots += session.renderer.shared_made
        rejected.update(session.core.frames.rejected)
        if summary.pending_interaction is not None:
            pending += 1
        if summary.activity.phase.value == "needs_input":
            oldest_wait = max(oldest_wait, now - summary.activity.since / 1000)
    lines: list[str] = []

    def metric(
        name: str,
        kind: str,
        help_text: str,
        values: dict[str, float] | float,
        label: str | None = None,
    ) -> None:
        """``label``: what the keys of ``values`` are (default: what the name is by)."""
        lines.append(f"# HELP ptyvisor_{name} {help_text}")
        lines.append(f"# TYPE ptyvisor_{name} {kind}")
        if isinstance(values, dict):
            label = label or name.rsplit("_by_", maxsplit=1)[-1]
            for key, value in sorted(values.items()):
                lines.append(f'ptyvisor_{name}{{{label}="{key}"}} {value:g}')
        else:
            lines.append(f"ptyvisor_{name} {values:g}")

    states = {state: float(by_state[state]) for state in ("starting", "running", "exited")}
    phases = {phase: float(count) for phase, count in by_phase.items()}
    metric("sessions_by_state", "gauge", "Sessions by process state.", states)
    metric("sessions_by_phase", "gauge", "Sessions by activity phase.", phases)
    metric("clients", "gauge", "WebSocket clients connected.", clients)
    metric("output_bytes_total", "counter", "Output bytes of the current sessions.", output)
    metric("frames_applied_total", "counter", "Authentic activity frames applied.", applied)
    metric(
        "frames_rejected_total", "counter", "Activity frames rejected, by reason.",
        {reason: float(count) for reason, count in rejected.items()}, label="reason",
    )  # fmt: skip
    metric("resyncs_total", "counter", "Lagging clients redrawn from a snapshot.", resyncs)
    metric(
        "resync_snapshots_total", "counter",
        "Snapshots rendered for lagging clients (fewer than resyncs: they share them).",
        resync_snapshots,
    )  # fmt: skip
    metric("pending_interactions", "gauge", "Sessions waiting on an approval or a question.",
           pending)  # fmt: skip
    unreadable = len(supervisor.records.unreadable) if supervisor.records is not None else 0
    metric("records_unreadable", "gauge", "Session records skipped: they cannot be read.",
           unreadable)  # fmt: skip
    metric(
        "oldest_input_wait_seconds", "gauge",
        "How long the longest-waiting session has needed input (0: none does).", oldest_wait,
    )  # fmt: skip
    notifier = supervisor.notifier
    counts = asdict(notifier.counts if notifier is not None else Counts())
    metric(
        "notifications_total", "counter",
        "Notifications: sent, failed (after retries), dropped (queue full), quieted "
        "(the same again within --notify-quiet).",
        {outcome: float(count) for outcome, count in counts.items()}, label="outcome",
    )  # fmt: skip
    return "\n".join(lines) + "\n"


def _contexts() -> Response:
    """The ``ssh://`` contexts (`relay` reaches those), by name; the page lists their
    sessions beside this machine's."""
    try:
        listed = [
            {"name": context.name, "url": context.url}
            for context in contexts.listing()
            if is_ssh(context.url)
        ]
    except BadContext as unreadable:
        error = Error(code="internal", message=printable(str(unreadable)))
        return _response(HTTPStatus.SERVICE_UNAVAILABLE, error.model_dump_json(), JSON)
    return _response(HTTPStatus.OK, json.dumps(listed), JSON)


def _response(status: HTTPStatus, body: str, content_type: str) -> Response:
    return http_response(status, body.encode(), content_type)
