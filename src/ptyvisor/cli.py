"""The ``ptyvisor`` command line.

``emit`` is dispatched before anything else is imported: agent hooks call it on every
tool use, so it must start in a few tens of milliseconds (stdlib only).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["emit"]:
        from ptyvisor.emit import main as emit_main

        return emit_main(args[1:])
    from ptyvisor.commands import run_command

    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
