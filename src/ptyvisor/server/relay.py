"""``/contexts/NAME``: a client of this server reaching a named context's server.

A frontend that can only open WebSockets (the page, in a browser) reaches the servers
on other machines through this one: it connects to ``/contexts/NAME`` with this
server's token, as to ``/``, and this server dials the context's ``ssh://`` URL the
way the CLI does (the user's own ``ssh``, ``dial-stdio`` there, the far server's token
read there), then passes every message both ways unchanged. So the frontend speaks
the far server's protocol, greeting included, and everything works as it does on
that server: the far server checks every message, and its token never leaves this
one.

Only ``ssh://`` contexts are relayed (a ``ws://`` one needs a token this server does
not hold); a relay never starts a server on the far machine (looking must not start
anything). Either side closing closes the other, with its code; what fails on the
way is a close with a reason (``BadContext``, the host unreachable), made printable.
Memory is websockets' own bounds on each side: a message is read from one side only
once the other has taken the last.
"""

from __future__ import annotations

import logging

import anyio
from websockets import ConnectionClosed, Data, InvalidHandshake
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection
from websockets.frames import CloseCode

from ptyvisor.client import contexts
from ptyvisor.client.client import dial
from ptyvisor.client.ssh import is_ssh
from ptyvisor.errors import BadContext, HostUnreachable
from ptyvisor.wire.untrusted import printable

log = logging.getLogger(__name__)

PREFIX = "/contexts/"
REASON_BYTES = 120
"""A close reason's limit (the protocol allows 123 bytes)."""


def context_of(path: str) -> str | None:
    """The context a request path names (``/contexts/NAME``), or None for any other."""
    return path[len(PREFIX) :] if path.startswith(PREFIX) else None


async def relay(client: ServerConnection, name: str) -> None:
    """Serve ``client`` by relaying it to context ``name``'s server until either ends.
    What the far server sends is not limited here, as `Client` does not limit it (a
    snapshot with its scrollback is large); what ``client`` sends is, by this server."""
    try:
        url = contexts.url_of(contexts.checked_name(name))
    except BadContext as unknown:
        await _refuse(client, CloseCode.POLICY_VIOLATION, str(unknown))
        return
    if not is_ssh(url):
        await _refuse(client, CloseCode.POLICY_VIOLATION, f"{name} is not an ssh:// context")
        return
    try:
        far, channel = await dial(url, None, autostart=False, max_size=None)
    except (HostUnreachable, InvalidHandshake, OSError, TimeoutError) as failure:
        await _refuse(client, CloseCode.TRY_AGAIN_LATER, f"{name}: {failure}")
        return
    assert channel is not None
    log.info("relaying a client to context %s", printable(name))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pass_on, client, far, tg.cancel_scope)
            tg.start_soon(_pass_on, far, client, tg.cancel_scope)
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await _close_like(far, client)
            await _close_like(client, far)
            await anyio.to_thread.run_sync(channel.close)


async def _pass_on(
    source: ServerConnection | ClientConnection,
    sink: ServerConnection | ClientConnection,
    done: anyio.CancelScope,
) -> None:
    """Every message from ``source`` to ``sink`` as it came (text or bytes), until
    ``source`` ends; then the relay ends."""
    message: Data
    try:
        async for message in source:
            await sink.send(message)
    except ConnectionClosed:
        pass
    done.cancel()


async def _close_like(
    closing: ServerConnection | ClientConnection, ended: ServerConnection | ClientConnection
) -> None:
    """Close ``closing`` with the code and reason ``ended`` closed with, if any."""
    code = ended.close_code if ended.close_code is not None else CloseCode.NORMAL_CLOSURE
    if code in (CloseCode.NO_STATUS_RCVD, CloseCode.ABNORMAL_CLOSURE):
        code = CloseCode.GOING_AWAY
    await closing.close(code, ended.close_reason or "")


def close_reason(text: str) -> str:
    """``text`` as a close reason: printable (it names what a client asked for) and
    within the protocol's 123 bytes, cut at a character."""
    return printable(text).encode()[:REASON_BYTES].decode(errors="ignore")


async def _refuse(client: ServerConnection, code: CloseCode, reason: str) -> None:
    text = close_reason(reason)
    log.info("refused a relay: %s", text)
    await client.close(code, text)
