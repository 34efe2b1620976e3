"""Shell completion (cli/completion.py): the scripts it generates, run by real shells.
The completion function is called in bash with the words a line splits into; the
registration is checked the way a user meets it, by pressing Tab in an interactive
bash and zsh on a real PTY after ``eval "$(ptyvisor completion SHELL)"``."""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import ptyprocess
import pytest

from ptyvisor.agents.activity import ActivityPhase
from ptyvisor.agents.launch import AGENTS
from ptyvisor.cli import completion
from ptyvisor.cli.grammar import build_parser
from ptyvisor.terminal import HeadlessTerminal
from tests.timeouts import scaled

from ..conftest import env_without_ptyvisor

PARSER = build_parser()


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


COMMANDS = subcommands(PARSER)
TOP_FLAGS = ["-h", "--help", "-V", "--version", "-H", "--host", "--context"]


def flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def in_bash(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by a real bash that reads no startup files."""
    return subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script],
        env=env_without_ptyvisor(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def complete_in_bash(
    *lines: list[str], parser: argparse.ArgumentParser = PARSER
) -> list[list[str]]:
    """What ``_ptyvisor`` (generated from ``parser``) offers for each line, given as the
    words bash splits it into (the last is the word being completed), all in one bash."""
    calls = [
        f"COMP_WORDS=({' '.join(shlex.quote(word) for word in words)}); "
        f"COMP_CWORD={len(words) - 1}; COMPREPLY=(); _ptyvisor; "
        'printf "%s\\n" "${#COMPREPLY[@]}" "${COMPREPLY[@]}"'
        for words in lines
    ]
    result = in_bash(completion.bash(parser) + "\n".join(calls))
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    out = iter(result.stdout.splitlines())
    offered = [[next(out) for _ in range(int(count))] for count in out]
    assert len(offered) == len(lines)
    return offered


def test_the_first_word_is_a_command_or_a_global_option() -> None:
    everything, run, context = complete_in_bash(
        ["ptyvisor", ""], ["ptyvisor", "ru"], ["ptyvisor", "--c"]
    )
    assert everything == [*sorted(COMMANDS), *TOP_FLAGS]
    assert (run, context) == (["run"], ["--context"])


def test_every_command_offers_exactly_its_own_options() -> None:
    """Generated from the parser: a new option is offered without touching the script."""
    names = sorted(COMMANDS)
    offered = complete_in_bash(*(["ptyvisor", name, "-"] for name in names))
    assert {name: set(got) for name, got in zip(names, offered, strict=True)} == {
        name: flags(COMMANDS[name]) for name in names
    }
    assert "--agent" in offered[names.index("run")]
    (partial,) = complete_in_bash(["ptyvisor", "wait", "--ph"])
    assert partial == ["--phase"]


def test_an_option_with_choices_offers_its_values_right_after_it() -> None:
    agents, some, phases, after, elsewhere = complete_in_bash(
        ["ptyvisor", "run", "--agent", ""],
        ["ptyvisor", "run", "--agent", "co"],
        ["ptyvisor", "wait", "--phase", ""],
        ["ptyvisor", "run", "--agent", "codex", "--det"],
        ["ptyvisor", "wait", "--agent", "c"],  # wait has no --agent
    )
    assert agents == list(AGENTS)
    assert some == ["codex", "copilot"]
    assert phases == [phase.value for phase in ActivityPhase]
    assert (sorted(after), elsewhere) == (["--detach", "--detach-key"], [])


def test_every_value_offered_is_the_parsers_own_word() -> None:
    """compgen expands the words it offers: each must come back exactly as the parser
    spells it (no ``$``, quote or space that the shell would rewrite)."""
    asked = [
        (name, flag, [str(choice) for choice in action.choices])
        for name, sub in sorted(COMMANDS.items())
        for action in sub._actions
        if action.option_strings and action.choices
        for flag in action.option_strings
    ]
    assert len(asked) >= 2
    offered = complete_in_bash(*(["ptyvisor", name, flag, ""] for name, flag, _ in asked))
    assert offered == [choices for _, _, choices in asked]


def test_a_global_option_before_the_command_is_passed_over() -> None:
    """``ptyvisor -H ssh://me@box:2222 run --agent …`` (docs/remote.md): bash splits the
    URL at each ``:`` and ``@`` (COMP_WORDBREAKS), and the command still counts."""
    url = ["ssh", ":", "//me", "@", "box", ":", "2222"]
    after_host, agents, with_context, host_value, context_value = complete_in_bash(
        ["ptyvisor", "-H", *url, "ru"],
        ["ptyvisor", "-H", *url, "run", "--agent", "cla"],
        ["ptyvisor", "--context", "prod", "wait", "--phase", "need"],
        ["ptyvisor", "--host", ""],
        ["ptyvisor", "--context", ""],
    )
    assert (after_host, agents, with_context) == (["run"], ["claude-code"], ["needs_input"])
    # A global option's value is the user's own: no command is offered for it.
    assert (host_value, context_value) == ([], [])
    # A context named like a command is that option's value, not the command.
    (named_run,) = complete_in_bash(["ptyvisor", "--context", "run", "wait", "--ph"])
    assert named_run == ["--phase"]


def test_the_function_is_registered_for_ptyvisor_falling_back_to_file_names() -> None:
    result = in_bash(completion.bash(PARSER) + "complete -p ptyvisor")
    assert result.stdout == "complete -o default -F _ptyvisor ptyvisor\n", result.stderr


def test_a_parser_without_commands_or_valued_options_still_gives_a_script() -> None:
    """Each generated ``case`` needs a pattern: none is written for an empty list."""
    bare = argparse.ArgumentParser(prog="ptyvisor")
    assert complete_in_bash(["ptyvisor", "-"], parser=bare) == [["-h", "--help"]]


def test_every_spelling_of_an_option_offers_its_choices() -> None:
    parser = argparse.ArgumentParser(prog="ptyvisor")
    parser.add_subparsers().add_parser("paint").add_argument("-c", "--colour", choices=["r", "g"])
    offered = complete_in_bash(
        ["ptyvisor", "paint", "-c", ""], ["ptyvisor", "paint", "--colour", ""], parser=parser
    )
    assert offered == [["r", "g"], ["r", "g"]]


def test_the_zsh_script_is_the_bash_one_through_bashcompinit() -> None:
    zsh = completion.zsh(PARSER)
    assert zsh.endswith(completion.bash(PARSER))
    assert "autoload -U +X bashcompinit && bashcompinit\n" in zsh


# ------------------------------------------------------------ Tab in a real shell


class Shell:
    """An interactive shell on a real PTY; its screen is rendered by ptyvisor's own
    terminal emulator, so a completion is seen as the line the user would see."""

    def __init__(self, argv: list[str], home: Path) -> None:
        env = env_without_ptyvisor(HOME=str(home), TERM="xterm", HISTFILE=os.devnull)
        self.proc = ptyprocess.PtyProcess.spawn(argv, env=env, cwd=str(home), dimensions=(24, 120))
        self.output = b""

    def screen(self) -> list[str]:
        terminal = HeadlessTerminal(120, 24)
        terminal.feed(self.output)
        return [line.rstrip() for line in terminal.display]

    def shows(self, line: str, *, timeout: float = 15) -> None:
        """Read until the screen holds ``line`` as a whole line."""
        deadline = time.monotonic() + scaled(timeout)
        while line not in self.screen():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no line {line!r} on the screen: {self.screen()}")
            if select.select([self.proc.fd], [], [], min(remaining, 0.2))[0]:
                try:
                    self.output += os.read(self.proc.fd, 65536)
                except OSError:  # EIO: the shell is gone
                    raise AssertionError(f"the shell ended: {self.screen()}") from None

    def type(self, data: str) -> None:
        os.write(self.proc.fd, data.encode())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.kill(signal.SIGKILL)
            self.proc.wait()
        with contextlib.suppress(Exception):
            self.proc.close(force=True)


SHELLS = {
    "bash": (["bash", "--norc", "--noprofile", "-i"], ""),
    # compinit as a user's .zshrc has it, without writing its dump file (-D).
    "zsh": (["zsh", "-f", "-i"], "autoload -U compinit && compinit -u -D && "),
}
PROMPT = "READY> "


@pytest.fixture(params=sorted(SHELLS))
def shell(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Shell]:
    """A shell that has run the line the docs give, ``eval "$(ptyvisor completion X)"``."""
    argv, setup = SHELLS[request.param]
    started = Shell(argv, tmp_path)
    try:
        ptyvisor = f"{shlex.quote(sys.executable)} -m ptyvisor"
        started.type(
            f'{setup}eval "$({ptyvisor} completion {request.param})" && '
            f"PS1={shlex.quote(PROMPT)} && echo LOADED''\n"
        )
        started.shows("LOADED")
        started.shows(PROMPT.rstrip())  # typed before readline reads, it would be echoed
        yield started
    finally:
        started.close()


@pytest.mark.parametrize(
    ("typed", "completed"),
    [
        ("ptyvisor compl", "ptyvisor completion "),
        ("ptyvisor wait --ph", "ptyvisor wait --phase "),
        ("ptyvisor run --agent cla", "ptyvisor run --agent claude-code "),
        (
            "ptyvisor -H ssh://me@box:2222 run --agent qw",
            "ptyvisor -H ssh://me@box:2222 run --agent qwen-code ",
        ),
    ],
)
def test_tab_completes_the_line(shell: Shell, typed: str, completed: str) -> None:
    shell.type(typed + "\t")
    shell.shows((PROMPT + completed).rstrip())
