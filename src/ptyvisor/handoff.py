"""The link between the keeper and the server it runs: messages and descriptors.

A ``SOCK_SEQPACKET`` socket pair: each message is one JSON object in one packet, with
descriptors attached (``SCM_RIGHTS``: the receiver gets its own duplicates). A body
too big for one packet travels in a memfd attached as the first descriptor, marked
``"_blob": true``. Stdlib only: the keeper uses it.

Messages (``op``), keeper → server:

- ``config`` (first): the server's settings.
- ``adopt`` (one per running program, then ``adopted``): ``session``, ``pid``, ``tty``,
  ``identity``, ``cols``, ``rows``, ``status`` (its ``waitpid`` status if it exited
  while no server ran) — with its PTY master and ring. ``state``: what the previous
  server handed over at a planned restart (see handover below), else absent.
- ``exited``: ``session``, ``status`` — the keeper reaped the program.
- ``spawned`` / ``spawn_failed``: the answer to a ``spawn`` (same ``id``), with the
  program's PTY master and ring.
- ``stop``: the server is stopping for good; ``restart``: hand over, then exit.
- ``ping``: ``n`` — every second once the server serves; it answers ``pong`` from its
  event loop, and one silent for ten seconds is replaced.

Server → keeper:

- ``ready``: serving (the keeper prints the page URL once, for the first server).
- ``pong``: ``n`` — the answer to ``ping``.
- ``spawn``: ``id``, ``spec`` (owner.ProgramSpec as JSON).
- ``size``: ``session``, ``cols``, ``rows`` — remembered for the next server.
- ``forget``: ``session`` — closed and reaped: the keeper lets go of it.
- ``handover``: ``sessions`` — per session, the state only this server knew (screen,
  activity, queued message), for the next one; sent before exiting at a restart.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from typing import Any

VERSION = 1
MAX_PACKET = 64 * 1024
"""Bodies larger than this travel in a memfd."""
MAX_FDS = 8
Message = dict[str, Any]


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def encode(message: Message, fds: Sequence[int] = ()) -> tuple[bytes, list[int], int | None]:
    """The packet and descriptors for ``message``; the third item is a memfd this
    call created for a big body (the caller closes it once sent)."""
    body = json.dumps(message, separators=(",", ":")).encode()
    if len(body) <= MAX_PACKET:
        return body, list(fds), None
    blob = os.memfd_create("ptyvisor-handoff", os.MFD_CLOEXEC)
    os.write(blob, body)
    return json.dumps({"_blob": True}).encode(), [blob, *fds], blob


def decode(packet: bytes, fds: list[int]) -> tuple[Message, list[int]]:
    """A received packet and its descriptors; a memfd body is read and closed."""
    for fd in fds:
        os.set_inheritable(fd, False)  # SCM_RIGHTS hands them over inheritable
    message = json.loads(packet)
    if not isinstance(message, dict):
        raise ValueError("a link message is a JSON object")
    if message.get("_blob"):
        blob, *fds = fds
        try:
            size = os.fstat(blob).st_size
            message = json.loads(os.pread(blob, size, 0))
        finally:
            os.close(blob)
    return message, fds


def send(sock: socket.socket, message: Message, fds: Sequence[int] = ()) -> None:
    """Blocking send (the keeper's side)."""
    packet, attached, blob = encode(message, fds)
    try:
        socket.send_fds(sock, [packet], attached)
    finally:
        if blob is not None:
            os.close(blob)


class Truncated(ValueError):
    """A message whose descriptors did not all arrive: the receiver had no room for
    them (``MSG_CTRUNC``, out of descriptors). The ones that came are closed."""

    def __init__(self, message: Message) -> None:
        super().__init__("descriptors lost on the way: the receiver ran out of them")
        self.message = message


def receive(sock: socket.socket) -> tuple[Message, list[int]] | None:
    """One message (blocking, or raising BlockingIOError on a non-blocking socket);
    None when the other side is gone. Raises `Truncated` (carrying the message) when
    its descriptors could not all be received, and ValueError for a packet that is
    not a message."""
    packet, fds, flags, _address = socket.recv_fds(sock, MAX_PACKET + 1024, MAX_FDS)
    if not packet:
        for fd in fds:
            os.close(fd)
        return None
    if flags & socket.MSG_CTRUNC:
        for fd in fds:
            os.close(fd)
        try:
            message = json.loads(packet)
        except ValueError:
            message = None
        raise Truncated(message if isinstance(message, dict) else {})
    return decode(packet, fds)
