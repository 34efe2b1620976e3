"""Vendor the web page's third-party front-end code (xterm.js and its addons) at install time.

The versions are pinned, with their sha512 integrity, in ``web/package-lock.json``
(written by ``npm install --package-lock-only`` when a version changes). Installing
ptyvisor (``pip install``, editable or not) runs :func:`vendor` from ``setup.py``: it
downloads each pinned tarball from the npm registry (no npm needed, only Python),
checks its integrity, and copies the few files the page loads into
``web/static/vendor/`` — git-ignored, never committed, never fetched at run time.
Tarballs are cached under ``~/.cache/ptyvisor/npm`` so a reinstall works offline.

The registry is the one npm would use (`npm_settings`): ``npm_config_registry`` in the
environment, else the ``registry`` (or ``@scope:registry``) of the project's, the
user's and the global ``npmrc``, with ``${VAR}`` expanded as npm does, and that
registry's ``_authToken`` sent as npm sends it — so an install behind a mirror works
without npm on the machine. The token is never printed.

Stdlib only: ``setup.py`` loads this file by path before ptyvisor's dependencies exist.
Run ``python -m ptyvisor.web_assets`` to vendor again by hand.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Mapping
from pathlib import Path

WEB_DIR = Path(__file__).resolve().parent / "web"
LOCK_FILE = WEB_DIR / "package-lock.json"
VENDOR_DIR = WEB_DIR / "static" / "vendor"
STAMP_NAME = ".integrity"
DEFAULT_REGISTRY = "https://registry.npmjs.org"

VENDORED: dict[str, dict[str, str]] = {
    "@xterm/xterm": {
        "lib/xterm.mjs": "xterm.mjs",
        "css/xterm.css": "xterm.css",
        "LICENSE": "LICENSE.xterm.txt",
    },
    "@xterm/addon-fit": {
        "lib/addon-fit.mjs": "addon-fit.mjs",
        "LICENSE": "LICENSE.addon-fit.txt",
    },
    "@xterm/addon-unicode11": {
        "lib/addon-unicode11.mjs": "addon-unicode11.mjs",
        "LICENSE": "LICENSE.addon-unicode11.txt",
    },
    "@xterm/addon-search": {
        "lib/addon-search.mjs": "addon-search.mjs",
        "LICENSE": "LICENSE.addon-search.txt",
    },
    "@xterm/addon-web-links": {
        "lib/addon-web-links.mjs": "addon-web-links.mjs",
        "LICENSE": "LICENSE.addon-web-links.txt",
    },
    # Fallback glyphs agents draw that common monospace fonts lack (app.css says
    # which font serves which code points). Each is loaded only when one of its
    # characters is on screen.
    "@fontsource/noto-sans-symbols": {
        "files/noto-sans-symbols-symbols-400-normal.woff2": "noto-sans-symbols.woff2",
        "LICENSE": "LICENSE.noto-sans-symbols.txt",
    },
    "@fontsource/noto-sans-symbols-2": {
        "files/noto-sans-symbols-2-symbols-400-normal.woff2": "noto-sans-symbols-2.woff2",
        "files/noto-sans-symbols-2-braille-400-normal.woff2": "noto-sans-braille.woff2",
        "LICENSE": "LICENSE.noto-sans-symbols-2.txt",
    },
    "@fontsource/noto-sans-math": {
        "files/noto-sans-math-latin-400-normal.woff2": "noto-sans-math.woff2",
        "LICENSE": "LICENSE.noto-sans-math.txt",
    },
}
"""Per npm package: file inside its tarball → name under ``static/vendor/``."""

REQUIRED = (
    "xterm.mjs",
    "xterm.css",
    "addon-fit.mjs",
    "addon-unicode11.mjs",
    "addon-search.mjs",
    "addon-web-links.mjs",
)
"""What the page cannot work without; the server warns when one is missing."""


class VendorError(Exception):
    """A pinned package could not be fetched or did not match its integrity."""


def pinned(lock_file: Path = LOCK_FILE) -> dict[str, tuple[str, str]]:
    """Package name → (version, integrity) from the lock file."""
    lock = json.loads(lock_file.read_text())
    packages = lock["packages"]
    result = {}
    for name in VENDORED:
        entry = packages[f"node_modules/{name}"]
        result[name] = (entry["version"], entry["integrity"])
    return result


def missing_assets(vendor_dir: Path = VENDOR_DIR) -> list[str]:
    return [name for name in REQUIRED if not (vendor_dir / name).is_file()]


def vendor(
    *, lock_file: Path = LOCK_FILE, vendor_dir: Path = VENDOR_DIR, quiet: bool = False
) -> None:
    """Make ``vendor_dir`` match the lock file; a no-op when it already does.

    Every tarball is fetched and checked before anything is written, so a bad one
    leaves the folder as it was.
    """
    pins = pinned(lock_file)
    stamp = json.dumps(pins, sort_keys=True)
    stamp_file = vendor_dir / STAMP_NAME
    if not missing_assets(vendor_dir) and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return
    tarballs = {name: _fetch(name, *pin, quiet=quiet) for name, pin in pins.items()}
    vendor_dir.mkdir(parents=True, exist_ok=True)
    for name, tarball in tarballs.items():
        _extract(tarball, VENDORED[name], vendor_dir)
    stamp_file.write_text(stamp)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ptyvisor" / "npm"


def npm_settings(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> dict[str, str]:
    """npm's configuration as far as fetching goes, by npm's precedence: the global
    ``npmrc`` (``$NPM_CONFIG_GLOBALCONFIG``, else ``$PREFIX/etc/npmrc`` for
    ``npm_config_prefix``), the user's (``$NPM_CONFIG_USERCONFIG``, else
    ``~/.npmrc``), the project's (``./.npmrc``), then ``npm_config_*`` variables (any
    case). Later wins."""
    env = os.environ if env is None else env
    lowered = {key.lower(): value for key, value in env.items()}
    files = []
    prefix = lowered.get("npm_config_prefix")
    globalconfig = lowered.get("npm_config_globalconfig") or (
        os.path.join(prefix, "etc", "npmrc") if prefix else None
    )
    files.append(globalconfig)
    home = env.get("HOME") or str(Path.home())
    files.append(lowered.get("npm_config_userconfig") or os.path.join(home, ".npmrc"))
    files.append(str((cwd or Path.cwd()) / ".npmrc"))
    settings: dict[str, str] = {}
    for path in files:
        if path:
            settings.update(_read_npmrc(Path(path), env))
    for key, value in lowered.items():
        if key.startswith("npm_config_") and value:
            settings[key.removeprefix("npm_config_")] = value
    return settings


def _read_npmrc(path: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``key = value`` lines (``;`` and ``#`` comments), ``${VAR}`` from ``env``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith((";", "#")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip().strip('"')
        found[key.strip()] = re.sub(r"\$\{([^}]*)\}", lambda m: env.get(m[1], ""), value)
    return found


def _registry_for(name: str, settings: Mapping[str, str]) -> str:
    scope = name.split("/", 1)[0] if name.startswith("@") else None
    chosen = (scope and settings.get(f"{scope}:registry")) or settings.get("registry")
    return (chosen or DEFAULT_REGISTRY).rstrip("/")


def _auth_token(registry: str, settings: Mapping[str, str]) -> str | None:
    """The ``//host/path/:_authToken`` npm would send to ``registry``: the one for its
    path, else for a path above it, up to the host."""
    nerfed = "//" + registry.split("://", 1)[-1].rstrip("/") + "/"
    while True:
        token = settings.get(f"{nerfed}:_authToken")
        if token:
            return token
        if nerfed.count("/") <= 3:  # "//host/"
            return None
        nerfed = nerfed[: nerfed.rstrip("/").rfind("/") + 1]


def _tarball_url(name: str, version: str, settings: Mapping[str, str]) -> str:
    basename = name.rsplit("/", 1)[-1]
    return f"{_registry_for(name, settings)}/{name}/-/{basename}-{version}.tgz"


def _fetch(name: str, version: str, integrity: str, *, quiet: bool) -> bytes:
    algorithm, _, expected_b64 = integrity.partition("-")
    if algorithm != "sha512":
        raise VendorError(f"{name}@{version}: unsupported integrity {algorithm!r}")
    expected = base64.b64decode(expected_b64)
    cached = _cache_dir() / f"{expected.hex()[:32]}.tgz"
    if cached.is_file():
        data = cached.read_bytes()
        if hashlib.sha512(data).digest() == expected:
            return data
    settings = npm_settings()
    url = _tarball_url(name, version, settings)
    if not quiet:
        print(f"ptyvisor: fetching {name}@{version} from {url}", file=sys.stderr)
    request = urllib.request.Request(url)
    token = _auth_token(_registry_for(name, settings), settings)
    if token:  # for this registry only: never carried along a redirect to elsewhere
        request.add_unredirected_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            data = bytes(response.read())
    except OSError as error:
        raise VendorError(f"{name}@{version}: cannot download {url}: {error}") from None
    if hashlib.sha512(data).digest() != expected:
        raise VendorError(f"{name}@{version}: {url} does not match the lock file's integrity")
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cached.parent, delete=False) as partial:
        partial.write(data)
    os.replace(partial.name, cached)
    return data


def _extract(tarball: bytes, files: dict[str, str], vendor_dir: Path) -> None:
    """Copy only the named regular files; nothing in the archive chooses a path."""
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for inner, target in files.items():
            member = archive.getmember(f"package/{inner}")
            extracted = archive.extractfile(member) if member.isfile() else None
            if extracted is None:
                raise VendorError(f"package/{inner} is not a regular file")
            destination = vendor_dir / target
            temporary = destination.with_suffix(destination.suffix + ".part")
            temporary.write_bytes(extracted.read())
            os.replace(temporary, destination)


if __name__ == "__main__":
    try:
        vendor()
    except VendorError as error:
        print(f"ptyvisor: {error}", file=sys.stderr)
        sys.exit(1)
    print(f"vendored into {VENDOR_DIR}")
