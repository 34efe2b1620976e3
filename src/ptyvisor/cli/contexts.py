"""``ptyvisor context``: names for servers (`ptyvisor.client.contexts` keeps them)."""

from __future__ import annotations

import argparse

from ptyvisor.cli.formatting import columns, complain, say
from ptyvisor.client import contexts
from ptyvisor.errors import BadContext
from ptyvisor.wire.untrusted import printable


def context_command(options: argparse.Namespace) -> int:
    try:
        match options.action:
            case "add":
                contexts.add(options.name, options.url)
                say(options.name)
            case "rm":
                contexts.remove(options.name)
                say(options.name)
            case "use":
                contexts.use(options.name)
                say(f"now reaching {options.name}")
            case _:
                rows = [
                    (("* " if c.current else "  ") + printable(c.name), printable(c.url))
                    for c in contexts.listing()
                ]
                say("\n".join(columns([("  NAME", "URL"), *rows])))
    except BadContext as bad:
        complain(f"ptyvisor context: {printable(str(bad))}")
        return 1
    return 0
