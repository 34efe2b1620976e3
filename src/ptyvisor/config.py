"""Server settings, the state directory and the access token.

Stdlib only, and a leaf: the keeper reads its settings here, so the server's modules
import their defaults from this one, never the other way round.

The token is generated at first start and stored 0600 in the state directory (a 0700
directory), or given by ``--token`` / ``PTYVISOR_TOKEN``. It is never logged.
"""

from __future__ import annotations

import fnmatch
import json
import os
import secrets
import ssl
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7733
TOKEN_FILE = "token"
SETTINGS_FILE = "settings.json"
DEFAULT_CLIENT_BUFFER = 4 * 1024 * 1024
"""Output queued for one client before it is dropped back to a snapshot."""
DEFAULT_LAG_LIMIT = 512 * 1024
"""Bytes the headless terminal may fall behind a flood (renderer.py)."""
DEFAULT_REPLY_BUFFER = 1024 * 1024
DEFAULT_REPLAY_BYTES = 2 * 1024 * 1024
"""Output each session keeps for exact replay (outputlog.py, and the keeper's ring)."""
DEFAULT_RECORD_LIMIT = 64 * 1024 * 1024
"""Bytes per recording file before it is rotated (recording.py)."""
DEFAULT_NOTIFY_QUIET = 30.0
"""Seconds in which a session's same notification goes to a target once at most."""
NOTIFY_FILE = "notify"
NOTIFY_EVENTS = ("input", "done", "failed", "exited")
"""What a notification is about: the agent asks something, finished a turn, failed;
the program exited."""
CODEX_ANSWER_WAIT_SECONDS = 20.0
"""Default hold of a Codex request: below Codex's hook timeout (30 s, see agents)."""


def control_path(state_dir: Path) -> Path:
    """The control socket (see control.py), in a 0700 directory of its own."""
    return state_dir / "control" / "ptyvisor.sock"


def default_state_dir() -> Path:
    explicit = os.environ.get("PTYVISOR_STATE_DIR")
    if explicit:
        return Path(explicit)
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "ptyvisor"


def ensure_state_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def new_token() -> str:
    """A fresh token (256 bits); never starting with "-", which a command line would
    take for an option (``--token -x…``)."""
    while True:
        token = secrets.token_urlsafe(32)
        if not token.startswith("-"):
            return token


def load_or_create_token(state_dir: Path) -> str:
    """Read the stored token, creating it (0600, atomically) on first start."""
    ensure_state_dir(state_dir)
    token_path = state_dir / TOKEN_FILE
    try:
        token = token_path.read_text().strip()
        if token:
            return token
    except FileNotFoundError:
        pass
    token = new_token()
    temp = state_dir / f".{TOKEN_FILE}.{os.getpid()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    os.replace(temp, token_path)
    return token


@dataclass
class Settings:
    """Server settings persisted as JSON in ``<state_dir>/settings.json`` (0600)."""

    codex_remote_answers: bool = False
    """Whether a client may answer Codex (Codex hides its own prompt while the hook waits)."""
    codex_answer_wait_seconds: float = CODEX_ANSWER_WAIT_SECONDS
    """How long a Codex request is held before Codex falls back to its own prompt."""
    qwen_code_remote_answers: bool = False
    """The same for Qwen Code, which also shows its prompt only once the hook is done."""
    qwen_code_answer_wait_seconds: float = CODEX_ANSWER_WAIT_SECONDS
    """How long a Qwen Code request is held before Qwen shows its own prompt."""

    def answer_hold(self, agent: str | None) -> tuple[bool, float | None]:
        """Whether a client may answer ``agent``'s requests, and how long one is held
        (None: until answered). Codex and Qwen Code hide their own prompt while their
        hook waits, so for them it is opt-in and bounded."""
        if agent == "codex":
            return self.codex_remote_answers, self.codex_answer_wait_seconds
        if agent == "qwen-code":
            return self.qwen_code_remote_answers, self.qwen_code_answer_wait_seconds
        return True, None


def load_settings(state_dir: Path) -> Settings:
    """The stored settings; defaults for a missing, unreadable or malformed file."""
    try:
        stored = json.loads((state_dir / SETTINGS_FILE).read_text())
    except (OSError, ValueError):
        return Settings()
    settings = Settings()
    if not isinstance(stored, dict):
        return settings
    for agent in ("codex", "qwen_code"):
        remote = stored.get(f"{agent}_remote_answers")
        if isinstance(remote, bool):
            setattr(settings, f"{agent}_remote_answers", remote)
        wait = stored.get(f"{agent}_answer_wait_seconds")
        if isinstance(wait, int | float) and not isinstance(wait, bool) and wait > 0:
            setattr(settings, f"{agent}_answer_wait_seconds", float(wait))
    return settings


def save_settings(state_dir: Path, settings: Settings) -> None:
    """Write the settings atomically, 0600."""
    ensure_state_dir(state_dir)
    body = asdict(settings)
    temp = state_dir / f".{SETTINGS_FILE}.{os.getpid()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(body, indent=2) + "\n")
    os.replace(temp, state_dir / SETTINGS_FILE)


def read_token(state_dir: Path | None = None) -> str | None:
    """The token a client should use: ``PTYVISOR_TOKEN``, else the stored one."""
    env = os.environ.get("PTYVISOR_TOKEN")
    if env:
        return env
    try:
        return ((state_dir or default_state_dir()) / TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None


@dataclass
class ServerConfig:
    token: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    state_dir: Path = field(default_factory=default_state_dir)
    allowed_origins: list[str] = field(default_factory=list)
    allowed_hosts: list[str] = field(default_factory=list)
    """``Host`` names accepted besides loopback and the bound host (see access.py)."""
    tls_cert: Path | None = None
    tls_key: Path | None = None
    """Serve ``wss://`` and ``https://`` with these (``--tls-cert``/``--tls-key``)."""
    replay_bytes: int = DEFAULT_REPLAY_BYTES
    render_lag_limit: int = DEFAULT_LAG_LIMIT
    scrollback: int = 1000
    client_buffer: int = DEFAULT_CLIENT_BUFFER
    reply_buffer: int = DEFAULT_REPLY_BUFFER
    """Queued replies and events past which a client's requests are no longer read
    (four times as much closes it: see outbox.py)."""
    metrics_public: bool = False
    """Serve ``/metrics`` without the token (``serve --metrics-public``)."""
    record_dir: Path | None = None
    """Record every session there (``serve --record DIR``); see recording.py."""
    record_limit: int = DEFAULT_RECORD_LIMIT
    """Bytes per recording file before it is rotated (``--record-limit``)."""
    url: str = ""
    """How children reach the server (``PTYVISOR_URL``); set by `bound`."""
    notify: list[str] = field(default_factory=list)
    """Notification targets (see `NotifyTarget`): ``--notify`` and the notify file."""
    notify_quiet: float = DEFAULT_NOTIFY_QUIET
    settings: Settings = field(default_factory=Settings)
    """Persisted settings (``load_settings``); tests set them directly."""
    control_path: str = ""
    """The control socket (``PTYVISOR_CONTROL``); set by `bound`."""

    def bound(self, port: int, control_path: str, url: str = "") -> None:
        """The one change a config sees, once its sockets exist (in the keeper, or in
        a server alone): the port bound (``port`` 0 asks for any), the URL that
        reaches it (``url``: as the keeper said; else made from host and port) and
        the control socket's path ("" without one)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "wss" if self.tls_cert is not None else "ws"
        self.port, self.control_path = port, control_path
        self.url = url or self.url or f"{scheme}://{host}:{port}/"

    @property
    def recordings(self) -> Path:
        """Where recordings go: ``--record DIR``, else ``<state dir>/recordings`` (for
        sessions spawned with ``record: true``)."""
        return self.record_dir or self.state_dir / "recordings"

    def tls_context(self) -> ssl.SSLContext | None:
        """The server's TLS context, or None for plain ``ws://``; raises OSError or
        ssl.SSLError for an unusable certificate or key."""
        if self.tls_cert is None or self.tls_key is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.tls_cert, self.tls_key)
        return context

    def to_json(self) -> dict[str, Any]:
        """Everything a server process needs, for the keeper to hand to it."""
        return {
            "token": self.token,
            "host": self.host,
            "port": self.port,
            "state_dir": str(self.state_dir),
            "allowed_origins": self.allowed_origins,
            "allowed_hosts": self.allowed_hosts,
            "tls_cert": None if self.tls_cert is None else str(self.tls_cert),
            "tls_key": None if self.tls_key is None else str(self.tls_key),
            "replay_bytes": self.replay_bytes,
            "render_lag_limit": self.render_lag_limit,
            "scrollback": self.scrollback,
            "client_buffer": self.client_buffer,
            "reply_buffer": self.reply_buffer,
            "metrics_public": self.metrics_public,
            "record_dir": None if self.record_dir is None else str(self.record_dir),
            "record_limit": self.record_limit,
            "notify": self.notify,
            "notify_quiet": self.notify_quiet,
            "settings": asdict(self.settings),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerConfig:
        fields = dict(data)
        fields["state_dir"] = Path(fields["state_dir"])
        for name in ("tls_cert", "tls_key", "record_dir"):
            fields[name] = None if fields.get(name) is None else Path(fields[name])
        fields["settings"] = Settings(**fields.get("settings", {}))
        return cls(**fields)


# ---------------------------------------------------------------- notifications


class BadNotifyTarget(ValueError):
    """A notification target that cannot be used; the message never holds the URL."""


@dataclass(frozen=True)
class NotifyTarget:
    """Where notifications go (an Apprise URL), and which: ``URL [on=EVENT,…]
    [sessions=GLOB]`` (a session's name or id; see server/notifications.py)."""

    url: str
    events: frozenset[str] = frozenset(NOTIFY_EVENTS)
    sessions: str = "*"

    @property
    def shown(self) -> str:
        """The URL as logs and clients may show it: its scheme only (hosts, paths and
        query strings of such URLs hold tokens)."""
        scheme, sep, _rest = self.url.partition("://")
        return f"{scheme}://…" if sep and scheme.isalnum() else "…"

    def wants(self, event: str, name: str, session_id: str) -> bool:
        return event in self.events and (
            fnmatch.fnmatchcase(name, self.sessions)
            or fnmatch.fnmatchcase(session_id, self.sessions)
        )

    @classmethod
    def parse(cls, line: str) -> NotifyTarget:
        """Raises BadNotifyTarget."""
        url, *filters = line.split() or [""]
        target = cls(url)
        if "://" not in url:
            raise BadNotifyTarget(f"{target.shown}: not an Apprise URL (scheme://…)")
        events, sessions = target.events, "*"
        for item in filters:
            key, sep, value = item.partition("=")
            if key == "on" and sep:
                events = frozenset(value.split(","))
                if not events or not events <= set(NOTIFY_EVENTS):
                    raise BadNotifyTarget(f"{target.shown}: on= takes {','.join(NOTIFY_EVENTS)}")
            elif key == "sessions" and sep and value:
                sessions = value
            else:
                raise BadNotifyTarget(f"{target.shown}: a filter is on= or sessions=")
        return cls(url, events, sessions)


def notify_targets(config: ServerConfig) -> list[NotifyTarget]:
    """``--notify`` targets, then the notify file's lines (blank lines and ``#``
    comments skipped); raises BadNotifyTarget, OSError (the file cannot be read)."""
    lines = list(config.notify)
    file = config.state_dir / NOTIFY_FILE
    if file.exists():
        lines += file.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return [NotifyTarget.parse(line) for line in kept]
