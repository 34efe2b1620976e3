"""``ptyvisor serve``'s options: declared, checked at start, turned into a ServerConfig.

Stdlib only, because ``serve`` runs the keeper (keeper.py), which must stay small.
Every option is checked before anything starts, with a one-line error.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
from pathlib import Path

from ptyvisor import __version__
from ptyvisor.config import (
    DEFAULT_CLIENT_BUFFER,
    DEFAULT_HOST,
    DEFAULT_LAG_LIMIT,
    DEFAULT_NOTIFY_QUIET,
    DEFAULT_PORT,
    DEFAULT_RECORD_LIMIT,
    DEFAULT_REPLAY_BYTES,
    ServerConfig,
    default_state_dir,
    ensure_state_dir,
    load_or_create_token,
    load_settings,
    notify_targets,
    save_settings,
)
from ptyvisor.keeper.privatefiles import directory_problem

NUMERIC_OPTIONS: dict[str, tuple[str, int, int]] = {
    "port": ("--port", 0, 65535),
    "replay_bytes": ("--replay-bytes", 4096, 1 << 34),
    "render_lag": ("--render-lag", 4096, 1 << 34),
    "scrollback": ("--scrollback", 0, 1_000_000),
    "client_buffer": ("--client-buffer", 16 * 1024, 1 << 34),
    "record_limit": ("--record-limit", 64 * 1024, 1 << 40),
}
"""serve's numeric options: (flag, least, most)."""


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default=DEFAULT_HOST, help="bind address (default: loopback)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="(default 7733)")
    serve.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="token, settings, records, control socket "
        "(default: $PTYVISOR_STATE_DIR, else ~/.local/share/ptyvisor)",
    )
    serve.add_argument("--token", default=None, help="access token (default: stored one)")
    serve.add_argument(
        "--detach",
        action="store_true",
        help="serve in the background (a session of its own, logging to "
        "<state-dir>/serve.log) and return once it serves; `ptyvisor stop` ends it",
    )
    serve.add_argument("--announce-fd", type=int, default=None, help=argparse.SUPPRESS)
    serve.add_argument(
        "--notify",
        action="append",
        default=[],
        metavar="URL",
        help="send a notification when a session needs input, finishes a turn, fails or "
        "exits, to an Apprise URL (json://, ntfy://, slack://, mailto://, …), optionally "
        "followed by on=EVENT,… and sessions=GLOB (repeatable; a URL with a secret "
        "belongs in <state-dir>/notify, one per line, not on a command line)",
    )
    serve.add_argument(
        "--notify-quiet",
        type=float,
        default=DEFAULT_NOTIFY_QUIET,
        metavar="SECONDS",
        help="a session's same notification at most once in this time (default 30)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="browser Origin allowed besides the server's own (repeatable; '*' for any)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="Host name a browser may use besides loopback and the address it connects to "
        "(repeatable; a DNS-rebinding defence)",
    )
    serve.add_argument(
        "--tls-cert", type=Path, default=None, help="serve TLS with this PEM certificate"
    )
    serve.add_argument("--tls-key", type=Path, default=None, help="its private key (PEM)")
    serve.add_argument(
        "--replay-bytes",
        type=int,
        default=DEFAULT_REPLAY_BYTES,
        help=f"output kept per session for exact replay (default {DEFAULT_REPLAY_BYTES})",
    )
    serve.add_argument(
        "--render-lag",
        type=int,
        default=DEFAULT_LAG_LIMIT,
        help=f"bytes the headless terminal may fall behind (default {DEFAULT_LAG_LIMIT})",
    )
    serve.add_argument("--scrollback", type=int, default=1000, help="lines kept (default 1000)")
    serve.add_argument(
        "--client-buffer",
        type=int,
        default=DEFAULT_CLIENT_BUFFER,
        help="bytes queued per client before it is dropped back to a snapshot "
        f"(default {DEFAULT_CLIENT_BUFFER})",
    )
    serve.add_argument(
        "--codex-remote-answers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let clients answer Codex's approvals (persisted in <state-dir>/settings.json)",
    )
    serve.add_argument(
        "--qwen-code-remote-answers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let clients answer Qwen Code's approvals (persisted likewise)",
    )
    serve.add_argument(
        "--metrics-public",
        action="store_true",
        help="serve /metrics without the token (default: token required)",
    )
    serve.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="DIR",
        help="record every session as an asciicast v2 file DIR/<id>.cast (default: only "
        "sessions spawned with record: true, into <state-dir>/recordings)",
    )
    serve.add_argument(
        "--record-limit",
        type=int,
        default=DEFAULT_RECORD_LIMIT,
        help="bytes per recording file before it is rotated; 4 files are kept per "
        f"session (default {DEFAULT_RECORD_LIMIT})",
    )
    serve.add_argument(
        "--no-keeper",
        action="store_true",
        help="run without the keeper process: programs end when this server does",
    )
    serve.add_argument("-v", "--verbose", action="store_true", help="log debug detail")


def check(options: argparse.Namespace) -> str | None:
    """What is wrong with serve's options, in one line; None if nothing is."""
    for attribute, (flag, least, most) in NUMERIC_OPTIONS.items():
        value = getattr(options, attribute)
        if not least <= value <= most:
            return f"{flag} must be between {least} and {most}, not {value}"
    if (options.tls_cert is None) != (options.tls_key is None):
        return "--tls-cert and --tls-key go together"
    if not 0 <= options.notify_quiet <= 86400:
        return f"--notify-quiet must be between 0 and 86400 seconds, not {options.notify_quiet:g}"
    if options.detach and options.no_keeper:
        return "--detach needs the keeper (programs outlive only a serve with one)"
    for path in (options.tls_cert, options.tls_key):
        problem = None if path is None else _not_a_file(path)
        if problem is not None:
            return problem
    if options.record is not None:
        return directory_problem(options.record, "recordings")
    return None


def _not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a certificate or key file, or None."""
    if path.is_file():
        return None
    if path.is_dir():
        return f"{path} is a directory, not a file"
    if path.exists():
        return f"{path} is not a regular file"
    return f"no such file: {path}"


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


def make_config(options: argparse.Namespace) -> tuple[ServerConfig, bool]:
    """The server's config from checked options (state directory made, token loaded or
    created, the Codex setting saved if given); and whether the token was explicit.
    Raises OSError (state directory, certificate files, the notify file), ssl.SSLError
    or BadNotifyTarget."""
    state_dir = ensure_state_dir((options.state_dir or default_state_dir()).absolute())
    explicit_token = options.token or os.environ.get("PTYVISOR_TOKEN")
    token = explicit_token or load_or_create_token(state_dir)
    settings = load_settings(state_dir)
    if options.record is not None:
        options.record.mkdir(parents=True, exist_ok=True, mode=0o700)
    if options.codex_remote_answers is not None:
        settings.codex_remote_answers = options.codex_remote_answers
    if options.qwen_code_remote_answers is not None:
        settings.qwen_code_remote_answers = options.qwen_code_remote_answers
    if options.codex_remote_answers is not None or options.qwen_code_remote_answers is not None:
        save_settings(state_dir, settings)
    config = ServerConfig(
        settings=settings,
        token=token,
        host=options.host,
        port=options.port,
        state_dir=state_dir,
        allowed_origins=options.allow_origin,
        allowed_hosts=options.allow_host,
        tls_cert=None if options.tls_cert is None else options.tls_cert.absolute(),
        tls_key=None if options.tls_key is None else options.tls_key.absolute(),
        replay_bytes=options.replay_bytes,
        render_lag_limit=options.render_lag,
        scrollback=options.scrollback,
        client_buffer=options.client_buffer,
        metrics_public=options.metrics_public,
        record_dir=None if options.record is None else options.record.absolute(),
        record_limit=options.record_limit,
        notify=options.notify,
        notify_quiet=options.notify_quiet,
    )
    config.tls_context()  # an unusable certificate is refused now, in one line
    notify_targets(config)  # so is a notification target that cannot be used
    return config, bool(explicit_token)


def beyond_loopback_warning(config: ServerConfig) -> str | None:
    if is_loopback(config.host):
        return None
    warning = f"warning: listening on {config.host}, beyond this machine"
    if config.tls_cert is None:
        warning += ": without --tls-cert/--tls-key the token crosses the network in clear"
    return warning


def announce(config: ServerConfig, *, explicit_token: bool) -> list[str]:
    """What ``serve`` prints on stdout once it listens; the page line (last, with the
    token, as Jupyter does) is printed there only, never logged."""
    page = config.url.replace("ws", "http", 1)
    source = "given by --token / PTYVISOR_TOKEN" if explicit_token else config.state_dir / "token"
    return [
        f"ptyvisor {__version__} serving on {config.url}",
        f"token: {source}",
        f"page: {page}?token={config.token}",
    ]
