"""AltScreenGuard: what a program writes never takes an attached terminal off its
alternate screen, however the bytes are split (the end-to-end test is in test_commands)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.cli.altscreen import HOLD_LIMIT, SOFT_RESET, AltScreenGuard, ScreenSwitch
from ptyvisor.terminal import HeadlessTerminal


def feed_all(guard: AltScreenGuard, *chunks: bytes) -> tuple[bytes, ScreenSwitch | None]:
    out = b""
    for chunk in chunks:
        data, switch = guard.feed(chunk)
        out += data
        if switch is not None:
            return out, switch
    return out, None


def test_a_switch_is_cut_out_and_reported_and_what_follows_is_dropped() -> None:
    guard = AltScreenGuard()
    assert guard.feed(b"before\x1b[?1049hafter") == (b"before", ScreenSwitch(enter=True))
    assert guard.feed(b"x\x1b[?47l") == (b"x", ScreenSwitch(enter=False))
    assert guard.feed(b"\x1b[?1047h") == (b"", ScreenSwitch(enter=True))


def test_other_modes_in_the_same_sequence_are_kept() -> None:
    guard = AltScreenGuard()
    assert guard.feed(b"\x1b[?1;1049;25h") == (b"\x1b[?1;25h", ScreenSwitch(enter=True))
    assert guard.feed(b"\x1b[?1049$p\x1b[?25l\x1b[?10490h") == (
        b"\x1b[?1049$p\x1b[?25l\x1b[?10490h",
        None,
    )


def test_reset_and_erase_scrollback_stay_inside() -> None:
    guard = AltScreenGuard()
    assert guard.feed(b"a\x1bcb\x1b[3Jc\x1b[2J") == (b"a" + SOFT_RESET + b"bc\x1b[2J", None)


def test_a_sequence_split_across_reads_is_held_until_complete() -> None:
    guard = AltScreenGuard()
    assert guard.feed(b"text\x1b[?10") == (b"text", None)
    assert guard.feed(b"49") == (b"", None)
    assert guard.feed(b"lmore") == (b"", ScreenSwitch(enter=False))
    assert guard.feed(b"ok\x1b") == (b"ok", None)
    assert guard.feed(b"c") == (SOFT_RESET, None)


def test_held_bytes_are_bounded() -> None:
    guard = AltScreenGuard()
    long = b"\x1b[" + b"1;" * HOLD_LIMIT
    assert guard.feed(long) == (long, None)


def test_a_redraw_after_reset_forgets_what_was_held() -> None:
    guard = AltScreenGuard()
    guard.feed(b"\x1b[?104")
    guard.reset()
    assert guard.feed(b"9h") == (b"9h", None)


def test_a_snapshot_redraw_keeps_the_terminal_on_its_alternate_screen() -> None:
    """A snapshot of a program on its alternate screen draws its main screen, then
    switches: drawn through `redraw`, a terminal already on the alternate screen shows
    the program's alternate screen and stays there."""
    program = HeadlessTerminal(20, 4)
    program.feed(b"main\r\n\x1b[?1049h\x1b[Halt-text")
    ansi = program.snapshot().ansi.encode()
    assert b"\x1b[?1049h" in ansi
    user = HeadlessTerminal(20, 4)
    user.feed(b"shell\r\n\x1b[?1049h" + AltScreenGuard.redraw(ansi))
    assert user.modes.alternate_screen
    assert user.display[0].rstrip() == "alt-text"
    assert "main" not in "".join(user.display)
    user.feed(b"\x1b[?1049l")
    assert user.display[0].rstrip() == "shell"


@given(st.lists(st.binary(max_size=40) | st.sampled_from([b"\x1b", b"[", b"?", b"1049", b"h"])))
def test_no_split_lets_a_switch_or_reset_through(chunks: list[bytes]) -> None:
    """Whatever a program writes, split however: the terminal never leaves the
    alternate screen, and what is written unsplit is written split."""
    guard = AltScreenGuard()
    terminal = HeadlessTerminal(20, 4)
    terminal.feed(b"\x1b[?1049h")
    whole, whole_switch = AltScreenGuard().feed(b"".join(chunks))
    out, switch = feed_all(guard, *chunks)
    terminal.feed(out)
    assert terminal.modes.alternate_screen
    assert switch == whole_switch
    assert out == whole
