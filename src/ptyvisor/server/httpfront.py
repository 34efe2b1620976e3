"""The port's HTTP side: every request before it is a WebSocket, and the connections
counted (`MAX_CLIENTS`).

A plain GET is the web page (webpage.py) or the read-only API (httpapi.py); an upgrade
is refused here when its token, Origin or Host is wrong (access.py) or too many
clients are connected; else it becomes a `Connection`.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from urllib.parse import urlsplit

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from ptyvisor.config import ServerConfig
from ptyvisor.server import access, httpapi, relay
from ptyvisor.server.connection import Connection
from ptyvisor.server.supervisor import Supervisor
from ptyvisor.server.webpage import WebPage

log = logging.getLogger(__name__)

MAX_CLIENTS = 256
"""WebSocket connections served at once; more are refused (503) until some close."""


class HttpFront:
    """Answers what is not a WebSocket, refuses what may not become one, and serves
    the connections that may."""

    def __init__(self, config: ServerConfig, supervisor: Supervisor) -> None:
        self._config = config
        self._supervisor = supervisor
        self._page = WebPage()
        self.clients = 0
        """WebSocket clients connected now."""

    async def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """websockets' hook: a response ends the request there; None upgrades it."""
        config = self._config
        local = _local_address(connection)
        if not _is_upgrade(request) or request.method != "GET":
            if httpapi.handles(urlsplit(request.path).path):
                return await httpapi.respond(
                    config, self._supervisor, request, local, lambda: self.clients
                )
            return self._page_request(request, local)
        refused = access.refusal(config, request, local)
        if refused is None and self.clients >= MAX_CLIENTS:
            refused = HTTPStatus.SERVICE_UNAVAILABLE, "too many clients; try again later\n"
        if refused is None:
            return None
        status, body = refused
        log.info("refused connection: %s", body.strip())
        return connection.respond(status, body)

    async def serve(self, websocket: ServerConnection) -> None:
        """websockets' handler: one client, counted while it is connected."""
        self.clients += 1
        try:
            request = websocket.request
            context = None if request is None else relay.context_of(urlsplit(request.path).path)
            if context is None:
                await Connection(websocket, self._supervisor).run()
            else:
                await relay.relay(websocket, context)
        finally:
            self.clients -= 1

    def _page_request(self, request: Request, local_address: str | None) -> Response:
        refused = access.browser_refusal(self._config, request, local_address)
        if refused is not None:
            return self._page.refuse(*refused)
        offered = access.offered_token(request)
        token_ok = None if offered is None else access.token_matches(self._config, offered)
        path = urlsplit(request.path).path
        return self._page.respond(request.method, path, request.headers, token_ok=token_ok)


def _is_upgrade(request: Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


def _local_address(connection: ServerConnection) -> str | None:
    """The address the client connected to (what an address-literal Host must say)."""
    try:
        address = connection.local_address
    except Exception:  # the transport is gone
        return None
    return str(address[0]) if isinstance(address, tuple) else None
