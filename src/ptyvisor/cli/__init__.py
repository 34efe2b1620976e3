"""The ``ptyvisor`` command line.

``emit`` is dispatched before anything else is imported: agent hooks call it on every
tool use, so it must start in a few tens of milliseconds (stdlib only). So are
``serve`` (it runs the keeper, keeper.py, which stays small), ``dial-stdio`` (the
far end of every command given ``ssh://``, client/ssh.py) and ``via-exec`` (the far
end of ``run --via``, agents/via.py).

Everything else is in this package's modules, imported only when needed:
`grammar` (the parser), `commands` (running a subcommand), `formatting` (what
they print) and `tty_attach` (``run`` and ``attach`` on a local terminal).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["emit"]:
        from ptyvisor.agents.emit import main as emit_main

        return emit_main(args[1:])
    if args[:1] == ["dial-stdio"]:
        # The far end of ssh://: started on every command run from elsewhere.
        from ptyvisor.client.ssh import dial_stdio

        return dial_stdio(args[1:])
    if args[:1] == ["via-exec"]:
        # The far end of run --via: starts the agent there once the session answers.
        from ptyvisor.agents.via import far_side

        if len(args) != 3:
            print("usage: ptyvisor via-exec SESSION TOKEN (run by run --via)", file=sys.stderr)
            return 2
        return far_side(args[1], args[2])
    if args[:1] == ["serve"]:
        # The keeper: it must stay small (stdlib only), so nothing else is imported.
        from ptyvisor.keeper.keeper import main as serve_main

        return serve_main(args[1:])
    from ptyvisor.cli.commands import run_command

    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
