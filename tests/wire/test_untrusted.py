"""The one piece of code that makes a session's strings inert (untrusted.py), fuzzed
at every boundary it guards: a terminal (every CLI printer, the log, an asciicast's
title and markers) and an argument vector (a resume's conversation id)."""

from __future__ import annotations

import io
import json
import logging
import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.agents.activity import Activity, ActivityPhase
from ptyvisor.agents.interaction import Interaction, Question
from ptyvisor.agents.launch import AGENTS, RESUME_OPTION, SEPARATE_VALUE, resume_args
from ptyvisor.cli.formatting import event_text, format_table, say
from ptyvisor.errors import BadNativeId, BadReference
from ptyvisor.keeper.logs import FORMAT, InertFormatter
from ptyvisor.server.recording import asciicast, header, marker_label
from ptyvisor.wire.jsontext import display
from ptyvisor.wire.protocol import ProcessState, SessionSummary, TermSize
from ptyvisor.wire.refs import resolve
from ptyvisor.wire.untrusted import (
    GENERIC_NATIVE_ID,
    NATIVE_ID_SHAPES,
    native_id_problem,
    printable,
)

HOSTILE = [
    "\x1b]52;c;cm0gLXJmIH4=\x07",  # a clipboard write
    "\x1b[2J\x1b[H",  # clear the screen
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # a hyperlink
    "\x9b31m",  # C1: a one-character CSI
    "\x9d0;title\x9c",  # C1 OSC ... ST
    "line\nforged 2026-01-01 INFO ptyvisor: all good",
    "\u202eexe.txt",  # right-to-left override
    "carriage\rreturn",
    "nul\x00byte",
    "del\x7f",
    "undecodable \udcff byte",
]
"""What a prompt-injected agent, a hostile program or a careless client puts in a
name, a reason, a title or a command."""

# Any text, weighted towards the characters that matter here.
texts = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(max_codepoint=0x2070)),
    st.lists(st.sampled_from(HOSTILE)).map("".join),
)


def acts_on_a_terminal(text: str, *, newlines: bool = False) -> list[str]:
    """The characters of ``text`` a terminal would act on (or that hide what follows)."""
    bad = []
    for char in text:
        if char == "\n" and newlines:
            continue
        category = unicodedata.category(char)
        if category in ("Cc", "Cs", "Zl", "Zp") or unicodedata.bidirectional(char) in (
            "LRE",
            "RLE",
            "LRO",
            "RLO",
            "PDF",
            "LRI",
            "RLI",
            "FSI",
            "PDI",
            "LRM",
            "RLM",
            "ALM",
        ):
            bad.append(char)
    return bad


# ---------------------------------------------------------------------- printable


@given(texts)
def test_printable_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    shown = printable(text)
    assert acts_on_a_terminal(shown) == []
    assert printable(shown) == shown  # idempotent: a second pass changes nothing
    kept = printable(text, newlines=True)
    assert acts_on_a_terminal(kept, newlines=True) == []
    assert kept.count("\n") == text.count("\n")


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Cf"))))
def test_printable_keeps_ordinary_text_as_it_is(text: str) -> None:
    assert printable(text) == text


def test_printable_shows_what_was_there() -> None:
    assert printable("\x1b[2J") == "\\x1b[2J"
    assert printable("\x9b31m") == "\\x9b31m"
    assert printable("a\nb\tc\r") == "a\\nb\\tc\\r"
    assert printable("\u202eabc") == "\\u202eabc"
    assert printable("bad \udcff name") == "bad \ufffd name"
    assert printable("two\nlines\x1b", newlines=True) == "two\nlines\\x1b"
    assert printable("émoji 👩‍💻 and 中文") == "émoji 👩‍💻 and 中文"


# ---------------------------------------------------------------------- every CLI printer

names = st.one_of(st.sampled_from(HOSTILE), st.text(min_size=1, max_size=40)).map(display)
"""As a summary carries them: an undecodable byte is U+FFFD there (jsontext.display)."""


@st.composite
def summaries(draw: st.DrawFn) -> SessionSummary:
    """A session summary whose every text a session or a client could set is hostile."""
    interaction = draw(
        st.one_of(
            st.none(),
            st.builds(
                Interaction,
                id=names,
                kind=st.just("approval"),
                agent=st.just("claude-code"),
                tool=names,
                title=names,
                created_at=st.just(1),
            ),
            st.builds(
                Interaction,
                id=names,
                kind=st.just("question"),
                agent=st.just("codex"),
                questions=st.lists(st.builds(Question, id=names, question=names), max_size=2),
                created_at=st.just(1),
            ),
        )
    )
    reason = draw(st.one_of(st.none(), names))
    return SessionSummary(
        id="s0badc0de",
        name=draw(names),
        argv=draw(st.lists(names, min_size=1, max_size=3)),
        command=draw(st.lists(names, max_size=3)),
        cwd=draw(names),
        agent=draw(st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9_.-]{1,20}", fullmatch=True))),
        process=ProcessState(state="running", pid=1),
        activity=Activity(
            phase=ActivityPhase.FAILED, since=0, reason=reason, agent="x", source="extension"
        ),
        pending_interaction=interaction,
        queued_message=draw(st.one_of(st.none(), names)),
        clients=0,
        created_at=0,
        size=TermSize(cols=80, rows=24),
    )


@given(st.lists(summaries(), max_size=3), st.one_of(st.none(), st.integers(1, 200)))
def test_ls_table_holds_no_control_character(
    sessions: list[SessionSummary], width: int | None
) -> None:
    table = format_table(sessions, width=width)
    assert acts_on_a_terminal(table, newlines=True) == []
    assert table.count("\n") == len(sessions)  # one line per session, whatever its names


@given(names, st.sampled_from(["working", "failed", "waiting"]))
def test_event_lines_hold_no_control_character(reason: str, phase: str) -> None:
    line = event_text({"type": "activity", "at": 0, "phase": phase, "reason": reason})
    assert acts_on_a_terminal(line) == []


@given(st.lists(summaries(), min_size=1, max_size=4), names)
def test_reference_errors_hold_no_control_character(
    sessions: list[SessionSummary], ref: str
) -> None:
    try:
        resolve(sessions, ref)
    except BadReference as bad:
        out = io.StringIO()
        say(f"ptyvisor: {bad.message}", file=out)
        assert acts_on_a_terminal(out.getvalue(), newlines=True) == []


@given(texts)
def test_say_shows_controls_and_keeps_lines(text: str) -> None:
    out = io.StringIO()
    say(text, file=out)
    assert acts_on_a_terminal(out.getvalue(), newlines=True) == []
    assert out.getvalue().count("\n") == text.count("\n") + 1


# ---------------------------------------------------------------------- the log and casts


@given(texts)
def test_a_log_line_is_one_printable_line(text: str) -> None:
    logger = logging.getLogger("ptyvisor.test.untrusted")
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(InertFormatter(FORMAT))
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("session %s started: %s", "s1", text)
        try:
            raise ValueError(text)
        except ValueError:
            logger.exception("session %s failed", text)
    finally:
        logger.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert acts_on_a_terminal(out.getvalue(), newlines=True) == []
    assert "started" in lines[0] and "failed" in lines[1]  # each message on its one line
    assert lines[2] == "Traceback (most recent call last):"  # a traceback keeps its lines


@given(texts, texts)
def test_asciicast_titles_and_markers_are_printable(title: str, reason: str) -> None:
    head = json.loads(header(80, 24, title=title, term="xterm", started=0))
    assert acts_on_a_terminal(head["title"]) == []
    assert acts_on_a_terminal(marker_label("failed", reason)) == []
    cast = asciicast(
        [(1.0, b"x")],
        [(1.0, marker_label("failed", reason))],
        cols=80,
        rows=24,
        title=title,
        term="xterm",
    )
    first, *events = (json.loads(line) for line in cast.splitlines())
    assert acts_on_a_terminal(first["title"]) == []
    assert all(acts_on_a_terminal(e[2]) == [] for e in events if e[1] == "m")


# ---------------------------------------------------------------------- argument vectors


@given(st.sampled_from([*AGENTS, None, "script"]), st.one_of(texts, st.uuids().map(str)))
def test_a_reported_id_is_refused_or_one_option_word(agent: str | None, value: str) -> None:
    problem = native_id_problem(agent, value)
    if agent not in AGENTS:
        assert (problem is None) == bool(GENERIC_NATIVE_ID.fullmatch(value))
        return
    if problem is not None:
        try:
            resume_args(agent, value)
        except BadNativeId:
            return
        raise AssertionError(f"{value!r} reached {agent}'s argv")
    assert not value.startswith("-") and value.strip() == value
    assert acts_on_a_terminal(value) == [] and " " not in value
    argv = resume_args(agent, value)
    if agent == "codex":
        assert argv == ["resume", value]
    elif agent in SEPARATE_VALUE:
        assert argv == [RESUME_OPTION[agent], value]
    else:
        assert argv == [f"{RESUME_OPTION[agent]}={value}"]  # one word: never an option


def test_the_options_a_frame_once_could_inject_are_refused() -> None:
    for agent in AGENTS:
        for value in (
            "--dangerously-skip-permissions",
            "--dangerously-bypass-approvals-and-sandbox",
            "-c",
            "x --yolo",
            "ses_ok\n--yolo",
        ):
            assert native_id_problem(agent, value) is not None, (agent, value)
            try:
                resume_args(agent, value)
            except BadNativeId as refused:
                assert agent in str(refused)
            else:
                raise AssertionError(f"{value!r} reached {agent}'s argv")


def test_each_agents_real_ids_are_accepted() -> None:
    real = {
        "claude-code": "5f1c2a8e-8b1e-4a56-9a0e-3c6d9f1b2a77",
        "codex": "019a3b2c-7d4e-7f10-8a9b-0c1d2e3f4a5b",
        "gemini-cli": "0b7e6a3c-1d2f-4e5a-8b9c-7d6e5f4a3b2c",
        "qwen-code": "c0ffee00-1234-4abc-8def-0123456789ab",
        "pi": "019a3b2c-7d4e-7f10-8a9b-0c1d2e3f4a5b",
        "opencode": "ses_dd6ddd28cffeNT08q0YXIWbIEx",
        "kilo": "ses_dbdd464f2ffeb7MPCQ3QNoc7ql",
        "copilot": "7c70be05-d2f2-46d2-a042-f558b1353317",
        "oh-my-pi": "01a244e2-ed18-70c8-b8be-763e53df8f6c",  # seen in a real run
        "droid": "a4525c8b-3450-4e7a-8127-8350f4d07ce6",  # seen in a real run
        "cline": "1796509832523_enbov",  # seen in a real run
    }
    assert set(real) == set(AGENTS) == set(NATIVE_ID_SHAPES)
    for agent, value in real.items():
        assert native_id_problem(agent, value) is None, agent
        assert value in "".join(resume_args(agent, value))  # type: ignore[arg-type]
    assert re.fullmatch(
        r"--resume=[-0-9a-f]{36}", resume_args("claude-code", real["claude-code"])[0]
    )
