"""``python -m ptyvisor.hooks AGENT``: the hook entry point of agents started by an
earlier version (see the package's notes)."""

import sys

from ptyvisor.agents.hooks.__main__ import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
