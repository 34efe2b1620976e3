"""A client command that finds no server starts one, as tmux does.

When nothing listens at the server URL, that URL is a plain ``ws://`` one on this
machine (loopback), and no ``serve`` holds the state directory, the command starts
``serve`` in the background on that address and state directory (see
`ptyvisor.keeper.background`: its own session, logging to the state directory) and
goes on. ``--no-autostart`` or ``PTYVISOR_NO_AUTOSTART=1`` turns it off; a server
elsewhere (``wss://``, another host) is never started.
"""

from __future__ import annotations

import argparse
import os
from urllib.parse import urlsplit

from ptyvisor.cli.formatting import complain
from ptyvisor.client.scripting import server_url
from ptyvisor.config import default_state_dir
from ptyvisor.keeper import background

OFF = "PTYVISOR_NO_AUTOSTART"
"""Set (to anything but ``0`` or empty) to never start a server."""
PROBE_SECONDS = 2.0


def wanted(options: argparse.Namespace) -> bool:
    return not getattr(options, "no_autostart", False) and os.environ.get(OFF, "") in ("", "0")


def ensure_server(options: argparse.Namespace) -> None:
    """Start a background serve if the command would find none (see the module)."""
    url = server_url(options.url, getattr(options, "context", None))
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port
    if parts.scheme != "ws" or host is None or port is None:
        return
    state_dir = options.state_dir or default_state_dir()
    started = background.serve_if_missing(host, port, state_dir, token=options.token)
    if started is None:
        return
    if isinstance(started, str):
        complain(f"ptyvisor: no server at {url}, and starting one failed:\n{started}")
        return
    complain(
        f"ptyvisor: started a server on {url} in the background (pid {started.pid}, "
        f"log {started.log}; `ptyvisor stop` ends it)"
    )
