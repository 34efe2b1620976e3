"""The web page's HTTP side on a real server: assets, headers, auth, the token subprotocol,
and the install-time vendoring of xterm.js against a local registry."""

from __future__ import annotations

import base64
import hashlib
import http.client
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from ptyvisor import web_assets
from ptyvisor.agents.launch import AGENTS
from ptyvisor.wire.protocol import SERVER_MESSAGE, Hello

from ..conftest import TOKEN, RunningServer

pytestmark = pytest.mark.anyio


class Reply:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


async def get(server: RunningServer, path: str, method: str = "GET", **headers: str) -> Reply:
    address = urlsplit(server.url).netloc

    def fetch() -> Reply:
        conn = http.client.HTTPConnection(address, timeout=10)
        try:
            conn.request(method, path, headers=headers)
            response = conn.getresponse()
            return Reply(
                response.status,
                {k.lower(): v for k, v in response.getheaders()},
                response.read(),
            )
        finally:
            conn.close()

    return await anyio.to_thread.run_sync(fetch)


async def test_page_and_assets_served_with_safe_headers(server: RunningServer) -> None:
    page = await get(server, "/")
    assert page.status == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert b"<script" in page.body
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "default-src 'none'" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-cache"

    for path, content_type in [
        ("/static/vendor/xterm.mjs", "text/javascript; charset=utf-8"),
        ("/static/vendor/addon-fit.mjs", "text/javascript; charset=utf-8"),
        ("/static/vendor/xterm.css", "text/css; charset=utf-8"),
    ]:
        asset = await get(server, path)
        assert asset.status == 200, path
        assert asset.headers["content-type"] == content_type
        assert asset.headers["content-security-policy"] == csp
        etag = asset.headers["etag"]
        again = await get(server, path, **{"If-None-Match": etag})
        assert again.status == 304
        assert again.body == b""
    xterm = await get(server, "/static/vendor/xterm.mjs")
    assert b"export" in xterm.body
    assert len(xterm.body) > 100_000


async def test_only_get_and_head(server: RunningServer) -> None:
    full = await get(server, "/static/app.css")
    head = await get(server, "/static/app.css", method="HEAD")
    assert head.status == 200
    assert head.body == b""
    assert head.headers["content-length"] == str(len(full.body))
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        refused = await get(server, "/", method=method)
        assert refused.status == 405, method
        assert refused.headers["allow"] == "GET, HEAD"
    # Not even with the token and an upgrade: a WebSocket handshake is a GET.
    upgrade = await get(
        server,
        "/",
        method="POST",
        Authorization=f"Bearer {TOKEN}",
        Upgrade="websocket",
        Connection="Upgrade",
    )
    assert upgrade.status == 405


@pytest.mark.parametrize(
    "path",
    [
        "/static/../pyproject.toml",
        "/static/%2e%2e/web_assets.py",
        "/static/vendor/.integrity",
        "/etc/passwd",
        "/static/",
        "/api/other",
    ],
)
async def test_nothing_outside_the_assets_is_served(server: RunningServer, path: str) -> None:
    reply = await get(server, path)
    assert reply.status == 404
    assert reply.headers["content-type"].startswith("text/plain")


async def test_auth_endpoint_and_wrong_token_page(server: RunningServer) -> None:
    assert (await get(server, "/api/auth")).status == 401
    assert (await get(server, "/api/auth", Authorization="Bearer nope")).status == 401
    assert (await get(server, "/api/auth", Authorization=f"Bearer {TOKEN}")).status == 204
    wrong = await get(server, "/?token=nope")
    assert wrong.status == 401
    assert b"Not authorised" in wrong.body
    assert wrong.headers["content-type"] == "text/html; charset=utf-8"
    assert (await get(server, f"/?token={TOKEN}")).status == 200
    host = urlsplit(server.url).netloc
    own = await get(server, "/api/auth", Authorization=f"Bearer {TOKEN}", Origin=f"http://{host}")
    assert own.status == 204
    cross = await get(
        server, "/api/auth", Authorization=f"Bearer {TOKEN}", Origin="http://evil.example"
    )
    assert cross.status == 403


async def test_token_subprotocol_keeps_the_token_out_of_urls(server: RunningServer) -> None:
    offered = [Subprotocol("ptyvisor"), Subprotocol(f"ptyvisor.token.{TOKEN}")]
    async with connect(server.url + "ws", subprotocols=offered) as ws:
        assert ws.subprotocol == "ptyvisor"
        hello = SERVER_MESSAGE.validate_json(await ws.recv())
        assert isinstance(hello, Hello)
        assert hello.agents == list(AGENTS)
    wrong = [Subprotocol("ptyvisor"), Subprotocol("ptyvisor.token.nope")]
    with pytest.raises(InvalidStatus) as refused:
        async with connect(server.url + "ws", subprotocols=wrong):
            pass
    assert refused.value.response.status_code == 401


# --------------------------------------------------------------------------- vendoring


def _tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local npm-registry stand-in serving tarballs from a folder."""
    root = tmp_path / "registry"
    root.mkdir()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_vendoring_checks_integrity_and_caches(
    registry: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = registry
    # A fake release of every vendored package: each named file, plus one that is not.
    packages: dict[str, dict[str, str]] = {}
    for number, (name, files) in enumerate(web_assets.VENDORED.items()):
        version = f"{number}.2.3"
        contents = {inner: f"{name} {inner}\n".encode() for inner in files}
        tarball = _tarball({**contents, "lib/other.js": b"not vendored\n"})
        basename = name.rsplit("/", 1)[-1]
        (root / name / "-").mkdir(parents=True)
        (root / name / "-" / f"{basename}-{version}.tgz").write_bytes(tarball)
        packages[f"node_modules/{name}"] = {"version": version, "integrity": _integrity(tarball)}
    lock = tmp_path / "package-lock.json"
    lock.write_text(json.dumps({"lockfileVersion": 3, "packages": packages}))
    vendor_dir = tmp_path / "vendor"
    monkeypatch.setenv("npm_config_registry", url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    web_assets.vendor(lock_file=lock, vendor_dir=vendor_dir, quiet=True)
    assert (vendor_dir / "xterm.mjs").read_bytes() == b"@xterm/xterm lib/xterm.mjs\n"
    assert (vendor_dir / "addon-fit.mjs").read_bytes() == b"@xterm/addon-fit lib/addon-fit.mjs\n"
    assert not (vendor_dir / "other.js").exists()
    assert web_assets.missing_assets(vendor_dir) == []

    # Offline afterwards: the cache serves a fresh vendor folder.
    for tgz in root.rglob("*.tgz"):
        tgz.unlink()
    again = tmp_path / "vendor-again"
    web_assets.vendor(lock_file=lock, vendor_dir=again, quiet=True)
    assert (again / "xterm.mjs").is_file()

    # A tarball that does not match the lock file is refused, nothing is written.
    (root / "@xterm/xterm/-/xterm-0.2.3.tgz").write_bytes(_tarball({"lib/xterm.mjs": b"evil"}))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    tampered = tmp_path / "vendor-tampered"
    with pytest.raises(web_assets.VendorError, match="integrity"):
        web_assets.vendor(lock_file=lock, vendor_dir=tampered, quiet=True)
    assert not (tampered / "xterm.mjs").exists()


class RecordingHandler(QuietHandler):
    """Serves the folder, and keeps each request's path and Authorization header."""

    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        super().do_GET()


def test_vendoring_uses_the_registry_npm_is_configured_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mirror set in the user's .npmrc (not the environment), with ${VAR} expanded
    and its token sent; a scope's own registry for that scope's packages."""
    root = tmp_path / "mirror"
    RecordingHandler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(RecordingHandler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        tarball = _tarball(dict.fromkeys(web_assets.VENDORED["@xterm/xterm"], b"x\n"))
        (root / "mirror-path/@xterm/xterm/-").mkdir(parents=True)
        (root / "mirror-path/@xterm/xterm/-/xterm-1.0.0.tgz").write_bytes(tarball)
        lock = tmp_path / "package-lock.json"
        pin = {"version": "1.0.0", "integrity": _integrity(tarball)}
        lock.write_text(json.dumps({"packages": {"node_modules/@xterm/xterm": pin}}))
        npmrc = tmp_path / "npmrc"
        npmrc.write_text(
            "; the user's npm configuration\n"
            "registry = https://registry.example.invalid/\n"
            f"@xterm:registry={url}/mirror-path/\n"
            f"//127.0.0.1:{httpd.server_address[1]}/:_authToken=${{MIRROR_TOKEN}}\n"
        )
        for name in ("npm_config_registry", "NPM_CONFIG_REGISTRY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("NPM_CONFIG_USERCONFIG", str(npmrc))
        monkeypatch.setenv("MIRROR_TOKEN", "s3cret-token")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        monkeypatch.chdir(tmp_path)
        settings = web_assets.npm_settings()
        assert settings["registry"] == "https://registry.example.invalid/"
        fetched = web_assets._fetch("@xterm/xterm", "1.0.0", pin["integrity"], quiet=True)
        assert fetched == tarball
        assert RecordingHandler.seen == [
            ("/mirror-path/@xterm/xterm/-/xterm-1.0.0.tgz", "Bearer s3cret-token")
        ]
        # The environment wins over every file, as in npm.
        monkeypatch.setenv("NPM_CONFIG_REGISTRY", "https://from-env.example.invalid")
        assert web_assets.npm_settings()["registry"] == "https://from-env.example.invalid"
    finally:
        httpd.shutdown()
        httpd.server_close()
