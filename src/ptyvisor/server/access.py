"""Who may talk to the server: the token, the browser's Origin, and the Host.

Every request must carry the token: ``Authorization: Bearer …``, or, for browsers,
which cannot set headers on a WebSocket, the subprotocol ``ptyvisor.token.<token>``
offered beside ``ptyvisor`` (kept out of URLs), or ``?token=``.

A browser's ``Origin`` must be the server's own host unless ``--allow-origin`` says
otherwise: another site's page cannot drive the server with a token it stole.

The ``Host`` header defends against DNS rebinding: a page on ``evil.example`` whose
name is made to resolve to 127.0.0.1 reaches the server *same-origin*, so neither
Origin nor CORS stops it; its requests still say ``Host: evil.example``. Accepted
are loopback names and addresses, the address the client actually connected to (an
address literal cannot be rebound), the bound host, and ``--allow-host`` names.
"""

from __future__ import annotations

import hmac
import ipaddress
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from websockets.http11 import Request

from ptyvisor.config import ServerConfig

TOKEN_SUBPROTOCOL_PREFIX = "ptyvisor.token."
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def refusal(
    config: ServerConfig, request: Request, local_address: str | None
) -> tuple[HTTPStatus, str] | None:
    """Why a WebSocket handshake is refused, or None to accept it."""
    refused = browser_refusal(config, request, local_address)
    if refused is not None:
        return refused
    if not token_matches(config, offered_token(request)):
        return HTTPStatus.UNAUTHORIZED, "missing or wrong token\n"
    return None


def browser_refusal(
    config: ServerConfig, request: Request, local_address: str | None
) -> tuple[HTTPStatus, str] | None:
    """Why any request (page or WebSocket) is refused for its Host or Origin."""
    host = request.headers.get("Host")
    if host is not None and not host_allowed(config, host, local_address):
        return (
            HTTPStatus.FORBIDDEN,
            "host not allowed: open the server by its address, or start it with "
            "--allow-host NAME\n",
        )
    origin = request.headers.get("Origin")
    if origin is not None and not origin_allowed(config, origin, host):
        return HTTPStatus.FORBIDDEN, "origin not allowed\n"
    return None


def token_matches(config: ServerConfig, offered: str | None) -> bool:
    if offered is None:
        return False
    return hmac.compare_digest(offered.encode("utf-8", "surrogatepass"), config.token.encode())


def offered_token(request: Request) -> str | None:
    authorization = request.headers.get("Authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    for header in request.headers.get_all("Sec-WebSocket-Protocol"):
        for offered in header.split(","):
            if offered.strip().startswith(TOKEN_SUBPROTOCOL_PREFIX):
                return offered.strip().removeprefix(TOKEN_SUBPROTOCOL_PREFIX)
    values = parse_qs(urlsplit(request.path).query).get("token")
    return values[0] if values else None


def origin_allowed(config: ServerConfig, origin: str, host: str | None) -> bool:
    if "*" in config.allowed_origins or origin in config.allowed_origins:
        return True
    return host is not None and urlsplit(origin).netloc.lower() == host.lower()


def host_allowed(config: ServerConfig, host: str, local_address: str | None = None) -> bool:
    """Whether a request's ``Host`` header names this server (see the module doc)."""
    name = host_name(host)
    if name is None:
        return False
    if name in LOOPBACK_NAMES or name == config.host.lower().strip("[]"):
        return True
    if name in (allowed.lower() for allowed in config.allowed_hosts):
        return True
    if "*" in config.allowed_hosts:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if address.is_loopback:
        return True
    if local_address is None:
        return False
    try:
        return address == ipaddress.ip_address(local_address.split("%", 1)[0])
    except ValueError:
        return False


def host_name(host: str) -> str | None:
    """The name in a ``Host`` header (``name``, ``name:port``, ``[v6]:port``),
    lower-case without a trailing dot; None if it is malformed."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        if end < 0 or (host[end + 1 :] and not host[end + 1 :].startswith(":")):
            return None
        return host[1:end] or None
    name, _, port = host.partition(":")
    if port and not port.isdigit():
        return None
    return name.rstrip(".") or None
