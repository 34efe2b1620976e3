"""Telling a service manager how serve is doing: systemd's notification protocol.

Under a unit of ``Type=notify`` (``ptyvisor service install``), systemd gives the
main process ``$NOTIFY_SOCKET``, a datagram socket (``@`` at the start: an abstract
one). ``READY=1`` there says serve serves, so ``systemctl --user start`` returns then,
and units ordered after it start only then; ``STOPPING=1`` says it is stopping its
programs. Anywhere else the variable is unset and this does nothing.

Stdlib only: the keeper uses it.
"""

from __future__ import annotations

import contextlib
import os
import socket

VARIABLE = "NOTIFY_SOCKET"


def notify(*states: str) -> None:
    """Send ``states`` (``"READY=1"``, ``"STATUS=…"``) to the service manager, if any;
    a manager that is gone costs nothing."""
    address = os.environ.get(VARIABLE, "")
    if not address or address[0] not in "/@":
        return
    target = "\0" + address[1:] if address[0] == "@" else address
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(target)
        sock.sendall("\n".join(states).encode())
