"""What the CLI prints (formatting.py): the ``ls`` table lined up on the terminal's
cells whatever the names hold, cut without splitting a wide character, and how a
program's end and an event are said. (That nothing printed can act on the terminal
is fuzzed in ``tests/wire/test_untrusted.py``.)"""

from __future__ import annotations

import signal

from hypothesis import example, given
from hypothesis import strategies as st

from ptyvisor.agents.activity import Activity, ActivityPhase
from ptyvisor.cli.formatting import columns, ended_text, event_text, format_capture, format_table
from ptyvisor.terminal.widths import char_width, cut_to_width, text_width
from ptyvisor.wire.protocol import Captured, ProcessState, SessionSummary, TermSize
from ptyvisor.wire.untrusted import printable

cells = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12).map(printable)


def starts(line: str, cell_texts: list[str]) -> list[int]:
    """Where on the terminal (in cells) each of ``cell_texts`` begins in ``line``."""
    found, at = [], 0
    for text in cell_texts:
        at = line.index(text, at) if text else at
        found.append(text_width(line[:at]))
        at += len(text)
    return found


@given(st.lists(st.lists(cells, min_size=3, max_size=3), min_size=1, max_size=6))
@example([["0", "0", " "]])
def test_columns_line_up_on_the_terminals_cells(rows: list[list[str]]) -> None:
    rows = [["ID", "NAME", "COMMAND"], *rows]
    lines = columns(rows)
    for line, row in zip(lines, rows, strict=True):
        assert line.startswith(row[0]) and line.endswith(row[-1])
        # A cell is found by its text: not an empty one, nor one that starts with a
        # space, which the padding before it would match.
        if all(cell and not cell[0].isspace() for cell in row):
            assert starts(line, row)[1:] == starts(lines[0], rows[0])[1:]


def test_a_wide_name_takes_two_cells_a_character() -> None:
    lines = columns([("NAME", "X"), ("日本語", "y"), ("abc", "z")])
    assert [text_width(line) for line in lines] == [9, 9, 9]
    assert lines[1] == "日本語  y"


@given(cells, st.integers(min_value=0, max_value=20))
def test_a_cut_fits_its_width_and_never_splits_a_wide_character(text: str, width: int) -> None:
    cut = cut_to_width(text, width)
    assert text_width(cut) <= width
    if text_width(text) <= width:
        assert cut == text
    elif width >= 1:
        assert cut.endswith("…") and text.startswith(cut[:-1])
        assert text_width(cut) >= width - 1  # a wide character may leave one cell free
    assert all(char_width(c) in (0, 1, 2) for c in cut)


def test_ls_cuts_each_row_to_the_terminals_width() -> None:
    session = SessionSummary(
        id="s0badc0de",
        name="名前" * 30,
        argv=["claude"],
        cwd="/",
        process=ProcessState(state="running", pid=1),
        activity=Activity(phase=ActivityPhase.WORKING, since=0, source="extension"),
        clients=0,
        created_at=0,
        size=TermSize(cols=80, rows=24),
    )
    table = format_table([session], width=50)
    assert all(text_width(line) <= 50 for line in table.splitlines())
    assert table.splitlines()[1].endswith("…")


def test_how_a_program_ended_is_said() -> None:
    assert ended_text(ProcessState(state="exited", exit_code=3)) == "exited 3"
    assert ended_text(ProcessState(state="exited", signal=signal.SIGTERM)) == "killed by SIGTERM"
    assert ended_text(ProcessState(state="exited", signal=77)) == "killed by signal 77"
    assert ended_text(ProcessState(state="exited")) == "exited ?"


def test_event_lines_label_the_phase_and_show_a_reason_inert() -> None:
    line = event_text(
        {
            "type": "activity",
            "at": 0,
            "phase": "needs_input",
            "reason": "approve \x1b]0;pwned\x07 rm?",
        }
    )
    assert "Needs input" in line and "\x1b" not in line and "\\x1b" in line
    assert event_text({"type": "closed", "at": 0}).endswith("session closed")


def test_capture_drops_blank_lines_at_the_end_only() -> None:
    captured = Captured.model_validate(
        {
            "session": "s1",
            "size": {"cols": 10, "rows": 4},
            "rows": ["a", "", "b", ""],
            "scrollback": ["old"],
            "cursor_row": 0,
            "cursor_col": 0,
            "title": "t",
            "modes": {
                "alternate_screen": False,
                "application_cursor_keys": False,
                "application_keypad": False,
                "bracketed_paste": False,
                "mouse_tracking": "off",
                "mouse_encoding": "default",
                "focus_events": False,
                "auto_wrap": True,
                "cursor_visible": True,
            },
        }
    )
    assert format_capture(captured, json_output=False) == "old\na\n\nb\n"
    assert '"cursor": {\n    "row": 0' in format_capture(captured, json_output=True)
