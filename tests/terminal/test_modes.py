"""The input modes: tracked from DECSET/DECRST and the keypad escapes, restored by a
snapshot, and applied alone from bytes a flood skips."""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.terminal import HeadlessTerminal, TerminalModes
from ptyvisor.terminal.modes import InputModes

from .support import CSI, ESC, make, round_trip, text

PRIVATE_MODES = [1, 66, 1004, 2004, 9, 1000, 1002, 1003, 1005, 1006, 1015, 1016, 5, 7, 25, 12]
changes = st.lists(st.tuples(st.sampled_from(PRIVATE_MODES), st.booleans()), max_size=20)


def input_modes(terminal: HeadlessTerminal) -> InputModes:
    modes = terminal.modes
    return InputModes(**{f.name: getattr(modes, f.name) for f in fields(InputModes)})


def sequences(changes: list[tuple[int, bool]]) -> bytes:
    return "".join(f"{CSI}?{mode}{'h' if on else 'l'}" for mode, on in changes).encode()


@given(before=changes, after=changes)
def test_the_replay_gives_any_terminal_exactly_these_modes(
    before: list[tuple[int, bool]], after: list[tuple[int, bool]]
) -> None:
    """What the terminal tracks from the sequences is what the record's own table
    says, and its replay gives that to a terminal in any other state."""
    expected = InputModes()
    for mode, on in after:
        expected = expected.changed(mode, on) or expected
    tracked = HeadlessTerminal(10, 3)
    tracked.feed(sequences(after))
    assert input_modes(tracked) == expected
    other = HeadlessTerminal(10, 3)
    other.feed(sequences(before))
    other.feed(expected.replay().encode())
    assert input_modes(other) == expected


def test_modes_the_screen_keeps_are_not_input_modes() -> None:
    assert InputModes().changed(25, True) is None and InputModes().changed(1049, True) is None
    assert InputModes().changed(1002, False) == InputModes()  # resetting any tracking: off


def test_modes_are_tracked_and_restored_by_the_snapshot() -> None:
    term = make(f"{CSI}?1h{ESC}={CSI}?2004h{CSI}?1002h{CSI}?1006h{CSI}?1004h{CSI}?7l{CSI}?25l")
    expected = TerminalModes(
        alternate_screen=False,
        application_cursor_keys=True,
        application_keypad=True,
        bracketed_paste=True,
        mouse_tracking="button",
        mouse_encoding="sgr",
        focus_events=True,
        auto_wrap=False,
        cursor_visible=False,
    )
    assert term.modes == expected
    snap = term.snapshot()
    assert snap.modes == expected
    for sequence in ["?1h", "?2004h", "?1002h", "?1006h", "?1004h", "?7l", "?25l"]:
        assert CSI + sequence in snap.ansi
    assert ESC + "=" in snap.ansi
    round_trip(term)


def test_mouse_modes_follow_xterm() -> None:
    term = make(f"{CSI}?1000;1002;1006h")
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("button", "sgr")
    term.feed(f"{CSI}?1003h{CSI}?1015h".encode())
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("any", "urxvt")
    term.feed(f"{CSI}?1006l".encode())  # not the current encoding: no change
    assert term.modes.mouse_encoding == "urxvt"
    term.feed(f"{CSI}?1000l{CSI}?1015l".encode())  # resetting any tracking mode: off
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("off", "default")
    term.feed(f"{CSI}?9h{CSI}?1005h".encode())
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("x10", "utf8")
    round_trip(term)


def test_mouse_encoding_is_restored_with_tracking() -> None:
    term = make(f"{CSI}?1006h{CSI}?1003h")
    ansi = term.snapshot().ansi
    assert ansi.index(CSI + "?1006h") > ansi.rindex(CSI + "?1006l")
    assert ansi.index(CSI + "?1003h") > ansi.rindex(CSI + "?1000l")
    assert make(ansi).modes == term.modes


def test_skip_applies_only_private_modes_and_resets_the_parser() -> None:
    term = make("before")
    term.skip(b"\x1b[?1049h\x1b[?2004h\x1b[?1000;1006hjunk text\x1b=\x1b]2;t")
    assert term.modes.alternate_screen and term.modes.bracketed_paste
    assert term.modes.application_keypad
    assert (term.modes.mouse_tracking, term.modes.mouse_encoding) == ("normal", "sgr")
    assert text(term) == [""] * 5
    term.feed(b"after")  # not part of the unterminated OSC that was skipped
    assert text(term)[0].strip() == "after" and term.title == ""
    term.skip(b"\x1b[?1049l\xe4\xb8")  # half a UTF-8 character
    term.feed(b"\xad!")
    assert text(term)[0] == "before\ufffd!"  # the decoder started clean
