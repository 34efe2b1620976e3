"""Activity hints in a program's output (terminal/signals.py), parsed from OSC
sequences a program writes, so untrusted: notifications without controls and
bounded, progress states and percentages in range, shell integration marks, and
everything else nothing. Their effect on a session is in tests/test_terminal_signals.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.terminal.signals import (
    CONTROLS,
    SIGNAL_TEXT_CHARS,
    TerminalSignal,
    osc_signal,
)


@pytest.mark.parametrize(
    ("number", "value", "signal"),
    [
        ("9", "Build done", TerminalSignal("notification", text="Build done")),
        ("9", "4;1;42", TerminalSignal("progress", state=1, value=42)),
        ("9", "4;3", TerminalSignal("progress", state=3)),
        ("9", "4;;", TerminalSignal("progress", state=0)),
        ("9", "4;2;250", TerminalSignal("progress", state=2, value=100)),
        ("9", "4;2;-5", TerminalSignal("progress", state=2, value=0)),
        ("9", "4;5;1", None),  # no such state
        ("9", "9;/home/me", None),  # ConEmu's working directory: no signal, no text
        ("9", "1;2", None),  # another ConEmu command, that looks like progress
        (
            "777",
            "notify;Claude;needs you",
            TerminalSignal("notification", text="Claude: needs you"),
        ),
        ("777", "notify;;only body", TerminalSignal("notification", text="only body")),
        ("777", "other;x", None),
        ("99", "i=1:d=0;Tests passed", TerminalSignal("notification", text="Tests passed")),
        ("99", "i=1:p=close;", None),
        ("133", "A", TerminalSignal("prompt")),
        ("133", "B", TerminalSignal("prompt")),
        ("133", "C", TerminalSignal("command")),
        ("133", "D;1", TerminalSignal("done", value=1)),
        ("133", "D", TerminalSignal("done")),
        ("133", "D;9999999999", TerminalSignal("done")),  # too big to be a status
        ("133", "E", None),
        ("0", "a title", None),
    ],
)
def test_what_each_sequence_signals(number: str, value: str, signal: TerminalSignal | None) -> None:
    assert osc_signal(number, value) == signal


def test_a_notifications_text_is_one_bounded_line_without_controls() -> None:
    signal = osc_signal("9", "line\x1b[31m one\r\nline\x9b two\t" + "x" * 1000)
    assert signal is not None
    assert signal.text.startswith("line [31m one line two x")
    assert len(signal.text) == SIGNAL_TEXT_CHARS


NUMBERS = st.sampled_from(["9", "777", "99", "133", "0", "52"])
ASCII_FIELDS = st.text("0123456789-;ABCDnotify x\x07\x1b\x9b", max_size=20)


@given(NUMBERS, ASCII_FIELDS | st.text(st.characters(max_codepoint=0x7F), max_size=40))
def test_any_sequence_gives_a_bounded_signal_or_none(number: str, value: str) -> None:
    signal = osc_signal(number, value)
    if signal is None:
        return
    assert len(signal.text) <= SIGNAL_TEXT_CHARS and not CONTROLS.search(signal.text)
    assert signal.text == signal.text.strip()
    if signal.kind == "progress":
        assert 0 <= signal.state <= 4
        assert signal.value is None or 0 <= signal.value <= 100
    if signal.kind == "done" and signal.value is not None:
        assert abs(signal.value) < 10**9


@pytest.mark.parametrize(("number", "value"), [("133", "D;²"), ("9", "4;²"), ("9", "4;1;²")])
def test_a_digit_int_refuses_is_no_number(number: str, value: str) -> None:
    """``str.isdigit()`` takes superscripts, which ``int()`` refuses: such a field is
    no number (it raised out of HeadlessTerminal.feed, costing the renderer a batch):
    read as any other text that is no number is."""
    assert osc_signal(number, value) == osc_signal(number, value.replace("²", "x"))
