"""The command line's grammar (cli/grammar.py) on its own: every example its help
shows parses as written, every command's help renders, and the options that must
go together or not are told apart before anything reaches a server."""

from __future__ import annotations

import argparse
import shlex

import pytest

from ptyvisor.cli.grammar import build_parser


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, nested ones under "outer inner"."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found.update({f"{name} {k}": v for k, v in _commands(sub).items()})
    return found


COMMANDS = _commands(build_parser())


def _examples() -> list[str]:
    lines = []
    for command in COMMANDS.values():
        for line in (command.epilog or "").splitlines():
            text = line.strip().split("  #")[0].strip()
            if text.startswith("ptyvisor ") and "$(" not in text[: text.find("ptyvisor")]:
                lines.append(text)
    return lines


EXAMPLES = _examples()


def test_the_help_shows_examples() -> None:
    assert len(EXAMPLES) >= 10, EXAMPLES


def _invocations(example: str) -> list[list[str]]:
    """Each ``ptyvisor …`` of a shell line, up to its pipe, ``;`` or ``&&``."""
    lexer = shlex.shlex(example.split("=$(", 1)[-1].rstrip(")"), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    runs: list[list[str]] = [[]]
    for token in lexer:
        if token in ("|", ";", "&&", "||"):
            runs.append([])
        else:
            runs[-1].append(token)
    return [run[1:] for run in runs if run[:1] == ["ptyvisor"]]


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_in_the_help_parses(example: str) -> None:
    invocations = _invocations(example)
    assert invocations
    for argv in invocations:
        build_parser().parse_args(argv)  # a SystemExit here is a help that lies


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as shown:
        build_parser().parse_args([*name.split(), "--help"])
    assert shown.value.code == 0
    assert capsys.readouterr().out.startswith("usage: ptyvisor")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--worktree", "--", "sh"],
        ["run", "--worktree", "feat", "--agent", "pi"],
        ["run", "--agent", "pi", "--via", "ssh -t host"],
        ["close", "--remove-worktree", "s1a2b"],
        ["prompt", "s1a2b", "Fix it", "--wait", "30"],
        ["mcp", "--context", "build"],
    ],
)
def test_this_stops_options_parse(argv: list[str]) -> None:
    options = build_parser().parse_args(argv)
    assert options.command == argv[0]


def test_a_bare_worktree_means_the_sessions_own_name() -> None:
    assert build_parser().parse_args(["run", "--worktree", "--", "sh"]).worktree == ""
    assert build_parser().parse_args(["run", "--", "sh"]).worktree is None
