"""Named servers, as Docker and kubectl name their targets.

``ptyvisor context add build ssh://build-box`` names a server; ``context use build``
makes it the one every command reaches; ``--context NAME`` and ``PTYVISOR_CONTEXT``
choose one for a command or a shell. ``default`` is always this machine's server (the
URL a client finds without one). The Python API takes a context's name wherever it
takes a URL.

Which server a client reaches, first found wins: ``--url``/``-H``, ``--context``,
``$PTYVISOR_URL`` (also what a program inside a session is given), ``$PTYVISOR_CONTEXT``,
the context in use, this machine's.

Kept in ``$XDG_CONFIG_HOME/ptyvisor/contexts.json`` (``~/.config/...``), private to
the user, written whole and renamed into place. It holds URLs only: a server's token
stays on its own machine (``ssh://`` reads it there).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ptyvisor.config import DEFAULT_HOST, DEFAULT_PORT
from ptyvisor.errors import BadContext

DEFAULT = "default"
ENV = "PTYVISOR_CONTEXT"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SCHEMES = ("ws", "wss", "ssh", "http", "https")


@dataclass(frozen=True, slots=True)
class Context:
    name: str
    url: str
    current: bool = False


def local_url() -> str:
    return f"ws://{DEFAULT_HOST}:{DEFAULT_PORT}/"


def store() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "ptyvisor" / "contexts.json"


def _load() -> tuple[dict[str, str], str | None]:
    """(name -> URL, the one in use); an unreadable file is an error, not empty."""
    try:
        data = json.loads(store().read_text())
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as unreadable:
        raise BadContext(f"cannot read {store()}: {unreadable}") from None
    contexts = data.get("contexts") if isinstance(data, dict) else None
    if not isinstance(contexts, dict):
        raise BadContext(f"{store()} is not a contexts file")
    urls = {
        str(name): str(entry["url"])
        for name, entry in contexts.items()
        if isinstance(entry, dict) and isinstance(entry.get("url"), str)
    }
    current = data.get("current")
    return urls, current if isinstance(current, str) and current in urls else None


def _save(urls: dict[str, str], current: str | None) -> None:
    path = store()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = {"version": 1, "current": current, "contexts": {n: {"url": u} for n, u in urls.items()}}
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(body, out, indent=2)
        out.write("\n")
    os.replace(temp, path)


def checked_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise BadContext(f"a context's name is letters, digits, '.', '_' or '-': {name!r}")
    return name


def checked_url(url: str) -> str:
    """A URL a context may hold: ws://, wss://, ssh:// or a page's http(s)://."""
    if urlsplit(url).scheme not in _SCHEMES or not urlsplit(url).netloc:
        raise BadContext(f"not a server URL (ws://, wss://, ssh://, http(s)://): {url!r}")
    if url.startswith("ssh://"):
        from ptyvisor.client.ssh import parse_target

        try:
            parse_target(url)
        except ValueError as bad:
            raise BadContext(str(bad)) from None
    return url


def add(name: str, url: str) -> None:
    if checked_name(name) == DEFAULT:
        raise BadContext("'default' is this machine's server; choose another name")
    urls, current = _load()
    urls[name] = checked_url(url)
    _save(urls, current)


def remove(name: str) -> None:
    urls, current = _load()
    if urls.pop(name, None) is None:
        raise BadContext(f"no context {name!r}")
    _save(urls, None if current == name else current)


def use(name: str) -> None:
    """Make ``name`` the context every command reaches (``default``: this machine)."""
    urls, _current = _load()
    if name != DEFAULT and name not in urls:
        raise BadContext(f"no context {name!r} (ptyvisor context ls)")
    _save(urls, None if name == DEFAULT else name)


def listing() -> list[Context]:
    """``default`` first, then every context by name; which is in use."""
    urls, current = _load()
    return [
        Context(DEFAULT, local_url(), current is None),
        *(Context(name, urls[name], name == current) for name in sorted(urls)),
    ]


def url_of(name: str) -> str:
    if name == DEFAULT:
        return local_url()
    urls, _current = _load()
    if name not in urls:
        raise BadContext(f"no context {name!r} (ptyvisor context ls)")
    return urls[name]


def chosen_url(url: str | None = None, context: str | None = None) -> str:
    """The server a client reaches (see the module's notes for the order)."""
    if url:
        return url
    if context:
        return url_of(context)
    if os.environ.get("PTYVISOR_URL"):
        return os.environ["PTYVISOR_URL"]
    if os.environ.get(ENV):
        return url_of(os.environ[ENV])
    urls, current = _load()
    return urls[current] if current is not None else local_url()
