"""The rows' helpers that run in processes of their own (``python -m bench.workers NAME``):
the flood's viewer (row 1), the closer (row 6), the followers (row 8)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import anyio

from bench.common import (
    READY,
    TOKEN,
    plain_connection,
    plain_request,
)
from bench.fanout import follow_all
from bench_hardening import CloseAll
from ptyvisor.client.client import Client


async def drain(url: str, session_id: str) -> None:
    """The flood's viewer (``--drain``, a process of its own): follow the session until
    its program exits; print ``attached`` once attached, then what it got, in JSON."""
    received = snapshots = 0
    async with plain_connection(url) as ws:
        await plain_request(ws, {"type": "attach", "session": session_id})
        print("attached", flush=True)
        async for message in ws:
            if isinstance(message, bytes):
                received += len(message)
                continue
            reply = json.loads(message)
            if reply.get("type") == "snapshot":
                snapshots += 1
            elif reply.get("type") == "process" and reply["process"]["state"] == "exited":
                break
    print(json.dumps({"bytes": received, "snapshots": snapshots}), flush=True)


async def close_all(url: str, session_ids: list[str]) -> None:
    """Row 6's closer (``--close``, a process of its own): close the sessions
    concurrently, then print how many seconds that took."""
    async with Client.connect(url, TOKEN) as control:
        closing = CloseAll(control, session_ids)
        await closing()
    print(f"{closing.took:.6f}", flush=True)


async def followers(url: str, session_id: str, clients: str, path: str) -> None:
    """Row 8's clients in a process of their own (``--follow``): print ``attached``
    once all are attached, then what each got, in JSON."""
    expected = memoryview(READY + await anyio.Path(path).read_bytes())
    results = await follow_all(
        url, session_id, int(clients), expected, lambda: print("attached", flush=True)
    )
    print(json.dumps([asdict(result) for result in results]), flush=True)


def main() -> int:
    name, *args = sys.argv[1:]
    match name:
        case "drain":
            url, session = args
            anyio.run(drain, url, session)
        case "close":
            anyio.run(close_all, args[0], args[1:])
        case "follow":
            url, session, clients, path = args
            anyio.run(followers, url, session, clients, path)
        case _:
            raise SystemExit(f"no worker {name!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
