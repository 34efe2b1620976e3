"""Compatibility: a keeper of an earlier version starts ``python -m ptyvisor.worker
LINK TCP CONTROL`` at a restart after an upgrade; it runs `ptyvisor.server.worker`
(public, see docs/architecture.md, *Module paths others depend on*)."""

import sys

from ptyvisor.server.worker import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
