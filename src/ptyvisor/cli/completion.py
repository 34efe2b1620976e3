"""Shell completion scripts, generated from the CLI's own argument parser, so they
never fall behind it: ``eval "$(ptyvisor completion bash)"`` (or ``zsh``).

They complete subcommands, each subcommand's options, and the values of options
with a fixed set of choices (``--agent``, ``--phase``). Session references are
not completed: that would need a server round trip on every Tab.
"""

from __future__ import annotations

import argparse
import shlex


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> tuple[list[str], dict[str, list[str]]]:
    """Every option string, and the choices of those that have them."""
    flags: list[str] = []
    choices: dict[str, list[str]] = {}
    for action in parser._actions:
        flags.extend(action.option_strings)
        if action.option_strings and action.choices:
            for flag in action.option_strings:
                choices[flag] = [str(choice) for choice in action.choices]
    return flags, choices


def bash(parser: argparse.ArgumentParser) -> str:
    commands = _commands(parser)
    top, _ = _options(parser)
    cases = []
    for name, sub in sorted(commands.items()):
        flags, choices = _options(sub)
        value_cases = "".join(
            f"            {shlex.quote(flag)}) COMPREPLY=($(compgen -W "
            f'{shlex.quote(" ".join(values))} -- "$cur")); return;;\n'
            for flag, values in sorted(choices.items())
        )
        cases.append(
            f"        {shlex.quote(name)})\n"
            f'            case "$prev" in\n{value_cases}            esac\n'
            f'            COMPREPLY=($(compgen -W {shlex.quote(" ".join(flags))} -- "$cur"));;\n'
        )
    words = " ".join([*sorted(commands), *top])
    # The command is the first command name past the global options, whose values
    # (-H ssh://me@box:2222) bash splits into several words at ':', '@' and '='.
    valued = "|".join(
        shlex.quote(flag)
        for action in parser._actions
        if action.nargs != 0
        for flag in action.option_strings
    )
    skip_value = f"            {valued}) i=$((i + 1));;\n" if valued else ""
    at_value = f'        case "$prev" in {valued}) return;; esac\n' if valued else ""
    names = "|".join(map(shlex.quote, sorted(commands)))
    find_command = f'            {names}) command="${{COMP_WORDS[i]}}"; break;;\n' if names else ""
    return (
        '# ptyvisor bash completion: eval "$(ptyvisor completion bash)"\n'
        "_ptyvisor() {\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"\n'
        '    local command="" i=1\n'
        '    while [ "$i" -lt "$COMP_CWORD" ]; do\n'
        '        case "${COMP_WORDS[i]}" in\n' + skip_value + find_command + "        esac\n"
        "        i=$((i + 1))\n"
        "    done\n"
        '    if [ -z "$command" ]; then\n'
        + at_value
        + f'        COMPREPLY=($(compgen -W {shlex.quote(words)} -- "$cur")); return\n'
        "    fi\n"
        '    case "$command" in\n' + "".join(cases) + "    esac\n"
        "}\n"
        "complete -o default -F _ptyvisor ptyvisor\n"
    )


def zsh(parser: argparse.ArgumentParser) -> str:
    """The bash function through zsh's bashcompinit: one generator, two shells."""
    return (
        '# ptyvisor zsh completion: eval "$(ptyvisor completion zsh)"\n'
        "autoload -U +X bashcompinit && bashcompinit\n" + bash(parser)
    )
