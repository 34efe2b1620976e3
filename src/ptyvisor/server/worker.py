"""The server process: everything but owning the programs (see keeper.py).

``python -m ptyvisor.server.worker LINK TCP CONTROL`` is started by the keeper with the link
socket and the listening sockets as inherited descriptors; `serve_in_process` is
``ptyvisor serve --no-keeper``, a server that owns its programs itself.
"""

from __future__ import annotations

import functools
import logging
import signal
import sys

import anyio

from ptyvisor.config import ServerConfig
from ptyvisor.errors import KeeperGone
from ptyvisor.keeper import descriptors, logs
from ptyvisor.keeper import options as serve_options
from ptyvisor.server.keeperlink import KeeperLink

log = logging.getLogger("ptyvisor.server")


def main(argv: list[str]) -> int:
    from ptyvisor.server.serving import run_server

    # Stopping is the keeper's to decide: it says so over the link.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        link = KeeperLink.connect(*(int(fd) for fd in argv[:3]))
    except (KeeperGone, OSError, ValueError) as refused:
        print(f"ptyvisor server: cannot start under the keeper: {refused}", file=sys.stderr)
        return 3
    logs.configure(link.verbose)
    try:
        anyio.run(functools.partial(run_server, link.config, keeper=link))
    except BaseException as raised:
        error = _unwrap(raised)
        if isinstance(error, KeeperGone):
            log.warning("the keeper is gone (%s); stopping", error)
            return 1
        raise
    return 0


def serve_in_process(config: ServerConfig, *, explicit_token: bool) -> int:
    """``ptyvisor serve --no-keeper``: programs end with this process, which SIGINT
    and SIGTERM stop; SIGHUP (a closed terminal) only moves its log, as the keeper's."""
    from ptyvisor.server.serving import run_server

    logs.configure(False)

    async def serve() -> None:
        async with anyio.create_task_group() as tg:
            await tg.start(run_server, config)
            # Catch the signals before announcing: whoever reads it may stop us at once.
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as got:
                print("\n".join(serve_options.announce(config, explicit_token=explicit_token)))
                sys.stdout.flush()
                output = logs.TerminalOutput(config.state_dir)
                async for signum in got:
                    if signum == signal.SIGHUP:  # a closed terminal: not a stop
                        output.hung_up()
                        continue
                    tg.cancel_scope.cancel()
                    return

    try:
        anyio.run(serve)
    except BaseException as raised:
        failure = _unwrap(raised)
        if isinstance(failure, OSError):
            print(descriptors.listen_failure(config.host, config.port, failure), file=sys.stderr)
            return 1
        if isinstance(failure, KeyboardInterrupt):
            return 130
        raise
    return 0


def _unwrap(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
