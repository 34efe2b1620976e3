"""The web page, served over plain HTTP GETs on the WebSocket port.

Every file is read into memory once at start-up and looked up by exact name, so no
request path ever reaches the file system. The page's code is public (the same for
every install), so static files need no token; the page proves its token with
``GET /api/auth`` and the WebSocket handshake, where every API request is checked.
A page URL carrying a wrong ``?token=`` gets a "not authorised" page at once.

Headers: a Content-Security-Policy that allows only our own scripts (no inline
script, no remote origin; inline *styles* are allowed because xterm.js writes its
own ``<style>`` elements), ``no-referrer`` so the first URL's token cannot leak,
and ``no-cache`` with an ETag so a reinstall is picked up without stale files.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

from websockets.datastructures import Headers
from websockets.http11 import Response

from ptyvisor import web_assets

log = logging.getLogger(__name__)

STATIC_DIR = web_assets.WEB_DIR / "static"
NOT_AUTHORISED_FILE = web_assets.WEB_DIR / "not-authorised.html"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".woff2": "font/woff2",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


def _asset(path: Path) -> Asset:
    body = path.read_bytes()
    content_type = CONTENT_TYPES.get(path.suffix, "application/octet-stream")
    return Asset(body, content_type, f'"{hashlib.sha256(body).hexdigest()[:32]}"')


def load_assets(static_dir: Path = STATIC_DIR) -> dict[str, Asset]:
    """URL path → asset: ``/`` is index.html, everything else under ``/static/``."""
    assets: dict[str, Asset] = {}
    # Links followed: ``static/client`` is the JavaScript client's own folder
    # (clients/js/src), so the page runs the package frontends install.
    for folder, _dirs, files in os.walk(static_dir, followlinks=True):
        for name in sorted(files):
            path = Path(folder) / name
            if path.is_file() and not name.startswith("."):
                relative = path.relative_to(static_dir).as_posix()
                assets[f"/static/{relative}"] = _asset(path)
    if "/static/index.html" in assets:
        assets["/"] = assets["/index.html"] = assets["/static/index.html"]
    missing = web_assets.missing_assets(static_dir / "vendor")
    if missing:
        log.warning(
            "web page: %s not vendored, the page cannot show terminals; "
            "reinstall ptyvisor with network access (python -m ptyvisor.web_assets)",
            ", ".join(missing),
        )
    return assets


class WebPage:
    """Answers the non-WebSocket GETs: the page, its assets, the auth check."""

    def __init__(self, assets: dict[str, Asset] | None = None) -> None:
        self._assets = load_assets() if assets is None else assets
        self._not_authorised = (
            NOT_AUTHORISED_FILE.read_bytes()
            if NOT_AUTHORISED_FILE.is_file()
            else b"<!doctype html><title>Not authorised</title><h1>Not authorised</h1>\n"
        )

    def refuse(self, status: HTTPStatus, reason: str) -> Response:
        """A refused request (its Host or Origin): the reason as plain text."""
        return http_response(status, reason.encode(), "text/plain; charset=utf-8")

    def respond(
        self, method: str, path: str, headers: Headers, *, token_ok: bool | None
    ) -> Response:
        """``token_ok`` is None when the request offered no token at all."""
        if method not in ("GET", "HEAD"):
            refused = http_response(
                HTTPStatus.METHOD_NOT_ALLOWED, b"only GET\n", "text/plain; charset=utf-8"
            )
            refused.headers["Allow"] = "GET, HEAD"
            return refused
        response = self._get(path, headers, token_ok=token_ok)
        if method == "HEAD":
            response.body = b""  # Content-Length still tells the GET's length
        return response

    def _get(self, path: str, headers: Headers, *, token_ok: bool | None) -> Response:
        if path == "/api/auth":
            if token_ok:
                return http_response(HTTPStatus.NO_CONTENT, b"", "text/plain; charset=utf-8")
            return http_response(
                HTTPStatus.UNAUTHORIZED, b"missing or wrong token\n", "text/plain; charset=utf-8"
            )
        if path in ("/", "/index.html") and token_ok is False:
            return http_response(
                HTTPStatus.UNAUTHORIZED, self._not_authorised, CONTENT_TYPES[".html"]
            )
        asset = self._assets.get(path)
        if asset is None:
            return http_response(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
        if headers.get("If-None-Match") == asset.etag:
            return http_response(HTTPStatus.NOT_MODIFIED, b"", asset.content_type, etag=asset.etag)
        return http_response(HTTPStatus.OK, asset.body, asset.content_type, etag=asset.etag)


def http_response(
    status: HTTPStatus, body: bytes, content_type: str, *, etag: str | None = None
) -> Response:
    """A response with the headers every plain HTTP answer of this port carries."""
    headers = Headers()
    headers["Content-Type"] = content_type
    if status is not HTTPStatus.NOT_MODIFIED:
        headers["Content-Length"] = str(len(body))
    headers["Cache-Control"] = "no-cache"
    headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "no-referrer"
    headers["Cross-Origin-Opener-Policy"] = "same-origin"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
    headers["Connection"] = "close"
    if etag is not None:
        headers["ETag"] = etag
    return Response(status.value, status.phrase, headers, body)
