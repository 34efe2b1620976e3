"""The activity state machine, driven by payloads only (no PTY, no event loop)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ptyvisor.agents.activity import (
    AWAY_BEFORE_TURN_MS,
    FRAME_PAYLOAD,
    TOOL_RESULTS,
    UNCONFIRMED_SECONDS,
    ActivityPhase,
    ActivityRules,
    ActivityTracker,
    Changed,
    DropQueuedMessage,
    FrameApplied,
    KeyTyped,
    MessageQueued,
    ProgramExited,
    ScreenShown,
    Tick,
    Withdraw,
    frame_ends,
)
from ptyvisor.terminal import TerminalSignal


def phase(t: ActivityTracker) -> ActivityPhase:
    """Read through a function so mypy does not narrow the phase across calls."""
    return t.activity.phase


def tracker() -> ActivityTracker:
    return ActivityTracker(now_ms=1000)


def apply(t: ActivityTracker, **payload: Any) -> bool:
    return t.apply(FRAME_PAYLOAD.validate_python(payload))


def activity(t: ActivityTracker, phase: str, at: int, **extra: Any) -> bool:
    return apply(t, type="activity", phase=phase, at=at, **extra)


def ask(
    t: ActivityTracker, at: int, ident: str = "req-1", kind: str = "approval", **extra: Any
) -> bool:
    interaction = {
        "id": ident,
        "kind": kind,
        "agent": "claude-code",
        "tool": "Bash",
        "title": "Run a command",
        "rows": [{"label": "Command", "value": "npm test", "monospace": True}],
        "created_at": at,
    }
    return apply(t, type="interaction", at=at, interaction=interaction, **extra)


def cleared(t: ActivityTracker, at: int, ident: str | None = None) -> bool:
    return apply(t, type="interaction_cleared", at=at, id=ident)


def test_starts_unavailable() -> None:
    t = tracker()
    assert phase(t) is ActivityPhase.UNAVAILABLE
    assert t.activity.since == 1000
    assert t.pending is None


def test_older_reports_are_ignored_and_equal_ones_applied() -> None:
    t = tracker()
    assert activity(t, "working", 2000)
    assert not activity(t, "waiting", 1999)
    assert phase(t) is ActivityPhase.WORKING
    assert activity(t, "waiting", 2000)
    assert phase(t) is ActivityPhase.WAITING


def test_agent_and_native_id_are_sticky_reason_is_not() -> None:
    t = tracker()
    activity(t, "starting", 10, agent="codex", native_session_id="n-1", reason="boot")
    activity(t, "working", 11)
    assert t.activity.agent == "codex"
    assert t.activity.native_session_id == "n-1"
    assert t.activity.reason is None
    assert t.activity.since == 11


def test_same_phase_keeps_since() -> None:
    t = tracker()
    activity(t, "working", 10)
    activity(t, "working", 20, reason="tool")
    assert t.activity.since == 10


def test_exit_is_final() -> None:
    t = tracker()
    activity(t, "working", 10)
    assert t.process_exited(exit_code=0, signal=None, now_ms=20)
    assert phase(t) is ActivityPhase.STOPPED
    assert not activity(t, "working", 30)
    assert not ask(t, 40)
    assert phase(t) is ActivityPhase.STOPPED
    assert not t.process_exited(exit_code=1, signal=None, now_ms=50)


def test_a_stop_the_agent_reported_is_not_reported_again_at_exit() -> None:
    t = tracker()
    activity(t, "working", 10)
    assert activity(t, "stopped", 20, reason="logout")
    assert not t.process_exited(exit_code=0, signal=None, now_ms=30)
    assert (t.activity.phase, t.activity.since, t.activity.reason) == ("stopped", 20, "logout")
    # A failure after it is news, and so is a kill someone asked for.
    failed = tracker()
    activity(failed, "stopped", 20)
    assert failed.process_exited(exit_code=3, signal=None, now_ms=30)
    assert phase(failed) is ActivityPhase.FAILED
    killed = tracker()
    activity(killed, "stopped", 20)
    assert killed.process_exited(exit_code=None, signal=1, now_ms=30, killed=True)
    assert killed.activity.reason == "killed"


def test_failed_exit_reasons() -> None:
    code = tracker()
    code.process_exited(exit_code=2, signal=None, now_ms=5)
    assert phase(code) is ActivityPhase.FAILED
    assert code.activity.reason == "exited with status 2"
    killed = tracker()
    killed.process_exited(exit_code=None, signal=9, now_ms=5)
    assert phase(killed) is ActivityPhase.FAILED
    assert killed.activity.reason == "killed by SIGKILL"
    unnamed = tracker()
    unnamed.process_exited(exit_code=None, signal=99, now_ms=5)
    assert unnamed.activity.reason == "killed by signal 99"


def test_a_kill_someone_asked_for_is_not_a_failure() -> None:
    t = tracker()
    activity(t, "working", 10)
    assert t.process_exited(exit_code=None, signal=1, now_ms=20, killed=True)
    assert phase(t) is ActivityPhase.STOPPED
    assert t.activity.reason == "killed"


def test_interaction_sets_needs_input_and_clear_returns_to_working() -> None:
    t = tracker()
    activity(t, "working", 10)
    assert ask(t, 20)
    assert phase(t) is ActivityPhase.NEEDS_INPUT
    assert t.pending is not None and t.pending.rows[0].value == "npm test"
    assert cleared(t, 30, "req-1")
    assert t.pending is None
    assert phase(t) is ActivityPhase.WORKING


def test_clear_of_another_id_keeps_the_pending_one() -> None:
    t = tracker()
    ask(t, 20, "req-2")
    assert not cleared(t, 30, "req-1")
    assert t.pending is not None and t.pending.id == "req-2"


def test_turn_end_clears_and_late_frames_never_resurrect() -> None:
    t = tracker()
    ask(t, 20, "req-1")
    assert activity(t, "waiting", 30)
    assert t.pending is None
    # A straggling copy of the same request, stamped before the turn ended.
    assert not ask(t, 25, "req-1")
    assert not ask(t, 30, "req-1")
    assert t.pending is None
    assert phase(t) is ActivityPhase.WAITING


def test_cleared_before_its_interaction_arrived() -> None:
    t = tracker()
    cleared(t, 10, "req-9")
    assert not ask(t, 10, "req-9"), "stamped no later than its answer: stale"
    assert t.pending is None


def test_weak_needs_input_keeps_richer_interaction() -> None:
    t = tracker()
    ask(t, 20, "req-1", kind="question")
    activity(t, "needs_input", 30, reason="permission_prompt")  # Claude's Notification
    assert t.pending is not None and t.pending.kind == "question"
    # Other hooks reporting work while still blocked do not hide the question.
    activity(t, "working", 40)
    assert phase(t) is ActivityPhase.NEEDS_INPUT
    assert t.pending is not None


def test_exit_clears_pending() -> None:
    t = tracker()
    ask(t, 20)
    t.process_exited(exit_code=1, signal=None, now_ms=30)
    assert t.pending is None
    assert phase(t) is ActivityPhase.FAILED


def test_agent_sessions_start_in_starting() -> None:
    t = ActivityTracker(now_ms=5, agent="pi")
    assert phase(t) is ActivityPhase.STARTING
    assert t.activity.agent == "pi"


def test_interrupt_keystroke_ends_the_turn_and_answers_the_prompt() -> None:
    t = tracker()
    assert not t.interrupted(5), "nothing to interrupt while idle"
    activity(t, "working", 10)
    ask(t, 20)
    assert t.interrupted(30)
    assert phase(t) is ActivityPhase.WAITING
    assert t.activity.reason == "interrupted"
    assert t.pending is None
    # Hook frames written before the keystroke arrive late and change nothing.
    assert not activity(t, "working", 25)
    assert not ask(t, 26, "req-2")


def test_the_same_request_asked_again_later_is_shown_again() -> None:
    # Digest ids make identical commands share an id: only *stale* frames are refused.
    t = tracker()
    ask(t, 20, "req-same")
    cleared(t, 30, "req-same")
    assert ask(t, 40, "req-same")
    assert t.pending is not None and t.pending.id == "req-same"


def test_started_up_only_leaves_starting() -> None:
    t = ActivityTracker(now_ms=5, agent="codex")
    assert t.started_up(10)
    assert phase(t) is ActivityPhase.WAITING
    activity(t, "working", 20)
    assert not t.started_up(30), "only ever the first step"
    assert phase(t) is ActivityPhase.WORKING


def subagent_stopped(t: ActivityTracker, at: int, agent_id: str) -> bool:
    return apply(t, type="subagent_stopped", at=at, agent_id=agent_id)


def test_a_subagents_stop_clears_only_its_own_interaction() -> None:
    t = tracker()
    activity(t, "working", 10)
    ask(t, 20, "req-a", agent_id="sub-a")
    assert not subagent_stopped(t, 30, "sub-b"), "another subagent's stop"
    assert t.pending is not None and phase(t) is ActivityPhase.NEEDS_INPUT
    assert subagent_stopped(t, 40, "sub-a")
    assert t.pending is None
    assert phase(t) is ActivityPhase.WORKING, "the main turn goes on"
    assert not ask(t, 35, "req-a", agent_id="sub-a"), "a late copy stays cleared"
    # The main thread's own interaction is never a subagent's to clear.
    ask(t, 50, "req-main")
    assert not subagent_stopped(t, 60, "sub-a")
    assert t.pending is not None and t.pending.id == "req-main"


def test_a_subagent_stop_older_than_the_interaction_keeps_it() -> None:
    t = tracker()
    # created_at is what counts (a hook stamps it; the frame may arrive a bit later).
    interaction = {"id": "req-a", "kind": "approval", "agent": "claude-code", "created_at": 50}
    apply(t, type="interaction", at=40, interaction=interaction, agent_id="sub-a")
    assert not subagent_stopped(t, 45, "sub-a")
    assert t.pending is not None
    assert subagent_stopped(t, 50, "sub-a")
    assert t.pending is None


def test_subagent_stop_frames_are_validated() -> None:
    for bad in ({"agent_id": ""}, {"agent_id": "x" * 257}, {}, {"agent_id": "a", "extra": 1}):
        with pytest.raises(ValidationError):
            FRAME_PAYLOAD.validate_python({"type": "subagent_stopped", "at": 1, **bad})


def test_a_subagents_question_outlives_the_main_turn() -> None:
    # Claude Code runs subagents in the background: the main turn ends, the subagent asks.
    t = tracker()
    activity(t, "working", 10)
    ask(t, 20, "req-a", agent_id="sub-a")
    assert not cleared(t, 30)  # a prompt submitted is the main thread's
    activity(t, "waiting", 40)  # the main turn's Stop
    assert t.pending is not None and phase(t) is ActivityPhase.NEEDS_INPUT
    activity(t, "failed", 50)
    assert t.pending is not None and phase(t) is ActivityPhase.FAILED
    activity(t, "stopped", 60)  # the session's end clears everything
    assert t.pending is None and phase(t) is ActivityPhase.STOPPED


def test_a_failed_reason_is_one_short_line() -> None:
    t = tracker()
    raw = 'unexpected status 429 Too Many Requests: {"error": {"message": "slow down"}}'
    assert activity(t, "failed", 10, reason=raw)
    assert t.activity.reason == "429 Too Many Requests: slow down"
    assert activity(t, "waiting", 20, reason='{"kept": "as is"}')  # only failures
    assert t.activity.reason == '{"kept": "as is"}'


# ---------------------------------------------------------------------- sources and
# inferred activity from terminal signals


def signals(t: ActivityTracker, at: int, *sent: TerminalSignal) -> bool:
    return t.terminal_signals(sent, at)


def seen(t: ActivityTracker) -> tuple[str, str | None, str, int]:
    """(phase, reason, source, since)."""
    a = t.activity
    return a.phase.value, a.reason, a.source, a.since


PROMPT = TerminalSignal("prompt")
COMMAND = TerminalSignal("command")


def test_every_activity_says_where_it_came_from() -> None:
    t = tracker()
    assert seen(t)[2] == "process", "the start is the process's"
    activity(t, "working", 2000)
    assert seen(t)[2] == "extension"
    t.process_exited(exit_code=1, signal=None, now_ms=3000)
    assert seen(t)[2] == "process"

    agent = ActivityTracker(now_ms=1000, agent="codex")
    assert agent.started_up(2000)
    assert seen(agent)[2] == "terminal", "inferred from quiet output"
    activity(agent, "working", 3000)
    assert seen(agent)[2] == "extension"
    assert agent.interrupted(4000)
    assert seen(agent)[2] == "terminal", "inferred from a keystroke"


def test_shell_marks_give_inferred_activity() -> None:
    t = tracker()
    assert signals(t, 2000, PROMPT)
    assert seen(t) == ("waiting", "prompt", "terminal", 2000)
    assert not signals(t, 2100, TerminalSignal("prompt")), "133;B after A changes nothing"
    assert signals(t, 3000, COMMAND)
    assert seen(t) == ("working", "command", "terminal", 3000)
    assert signals(t, 4000, TerminalSignal("done", value=2), PROMPT)
    assert seen(t)[:2] == ("waiting", "exited 2"), "the prompt keeps it"
    assert signals(t, 5000, COMMAND, TerminalSignal("done", value=0), PROMPT)
    assert seen(t) == ("waiting", "prompt", "terminal", 5000)
    assert t.pending is None


def test_progress_and_notifications_give_inferred_activity() -> None:
    t = tracker()
    assert signals(t, 2000, TerminalSignal("progress", state=1, value=42))
    assert seen(t) == ("working", "42%", "terminal", 2000)
    assert signals(t, 2100, TerminalSignal("progress", state=2, value=50))
    assert t.activity.reason == "error 50%"
    assert signals(t, 2200, TerminalSignal("progress", state=3))
    assert seen(t) == ("working", None, "terminal", 2000)
    assert signals(t, 2300, TerminalSignal("progress", state=0))
    assert seen(t)[:2] == ("waiting", None)
    assert signals(t, 3000, TerminalSignal("notification", text="Build done"))
    assert seen(t)[:2] == ("needs_input", "Build done")
    assert t.pending is None, "a notification is never an interaction"
    assert signals(t, 3100, TerminalSignal("bell"))
    assert seen(t)[:3] == ("needs_input", "bell", "terminal")
    assert t.pending is None
    assert signals(t, 3200, TerminalSignal("notification"))
    assert t.activity.reason == "notification"


def test_the_extension_wins_over_terminal_signals() -> None:
    t = tracker()
    assert signals(t, 2000, COMMAND)
    assert activity(t, "waiting", 2500, agent="script")
    assert t.activity.source == "extension"
    for signal in (PROMPT, COMMAND, TerminalSignal("bell"), TerminalSignal("notification")):
        assert not signals(t, 3000, signal)
    assert not signals(t, 3000, TerminalSignal("progress", state=1, value=5))
    assert seen(t) == ("waiting", None, "extension", 2500)

    # A session spawned with an agent expects its extension from the start.
    agent = ActivityTracker(now_ms=1000, agent="claude-code")
    assert not signals(agent, 2000, TerminalSignal("notification", text="hi"), COMMAND)
    assert seen(agent) == ("starting", None, "process", 1000)

    # A stale frame after an applied one is ignored, and signals still are.
    t2 = tracker()
    assert activity(t2, "working", 5000)
    assert not activity(t2, "waiting", 4000)
    assert not signals(t2, 6000, PROMPT)


def test_terminal_signals_after_the_exit_change_nothing() -> None:
    t = tracker()
    assert signals(t, 2000, COMMAND)
    assert t.process_exited(exit_code=0, signal=None, now_ms=3000)
    assert seen(t) == ("stopped", None, "process", 3000)
    assert not signals(t, 4000, PROMPT, TerminalSignal("bell"))
    assert seen(t) == ("stopped", None, "process", 3000)


def test_the_extension_rule_survives_a_planned_restart() -> None:
    t = tracker()
    activity(t, "working", 2000)
    restored = tracker()
    restored.restore(t.export())
    assert not signals(restored, 3000, PROMPT)
    assert restored.activity.source == "extension"

    inferred = tracker()
    signals(inferred, 2000, COMMAND)
    again = tracker()
    again.restore(inferred.export())
    assert signals(again, 3000, PROMPT)


def test_attention_outlasts_the_prompt_and_ends_with_a_command_or_a_key() -> None:
    t = tracker()
    signals(t, 2000, COMMAND)
    # `make; notify`: the notification, then the shell's prompt after the command.
    assert signals(t, 3000, TerminalSignal("notification", text="built"))
    assert not signals(t, 3000, TerminalSignal("done", value=0), PROMPT)
    assert seen(t) == ("needs_input", "built", "terminal", 3000)
    assert signals(t, 4000, TerminalSignal("bell"))
    assert t.attended(5000), "the user typed: back to the prompt that came meanwhile"
    assert seen(t) == ("waiting", "prompt", "terminal", 5000)
    assert not t.attended(5100), "nothing to attend to"

    assert signals(t, 5500, COMMAND, TerminalSignal("bell"))
    assert t.attended(5600), "back to what it was before"
    assert seen(t) == ("working", "command", "terminal", 5600)
    assert signals(t, 6000, TerminalSignal("bell"))
    assert signals(t, 6100, COMMAND), "a command ends it too"
    assert seen(t) == ("working", "command", "terminal", 6100)

    fresh = tracker()
    assert signals(fresh, 2000, TerminalSignal("bell"))
    assert fresh.attended(3000)
    assert seen(fresh) == ("unavailable", None, "process", 3000)

    reported = tracker()
    activity(reported, "needs_input", 2000)
    assert not reported.attended(3000), "an extension's needs_input is the extension's"
    assert reported.process_exited(exit_code=0, signal=None, now_ms=4000)
    assert not reported.attended(5000)


# ---------------------------------------------------------------------- the rules, by events

CODEX_PROMPT = ["", "\u203a Ask Codex to do anything", "", "  ? for shortcuts"]
CODEX_BUSY = ["\u2022 Working (0s \u2022 esc to interrupt)", *CODEX_PROMPT]
QWEN_PROMPT = ["> Type your message or @path/to/file"]
UUID = "5f1c2a8e-8b1e-4a56-9a0e-3c6d9f1b2a77"


def frame(**payload: Any) -> FrameApplied:
    return FrameApplied(FRAME_PAYLOAD.validate_python(payload))


def kinds(effects: list[Any]) -> list[str]:
    return [type(effect).__name__ for effect in effects]


def test_a_reported_ready_is_held_until_the_prompt_shows() -> None:
    """Qwen Code reports SessionStart before it reads keys: held, applied when drawn."""
    rules = ActivityRules(1000, agent="qwen-code")
    assert rules.handle(frame(type="activity", phase="waiting", at=2000)) == []
    assert rules.activity.phase is ActivityPhase.STARTING
    assert rules.watches_screen()
    assert rules.handle(ScreenShown(["loading"], 2500)) == []
    assert kinds(rules.handle(ScreenShown(QWEN_PROMPT, 3000))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.since) == (ActivityPhase.WAITING, 3000)
    assert rules.activity.source == "extension"


def test_a_reported_ready_waits_for_the_prompt_drawn_after_it() -> None:
    """A resumed Gemini CLI reports SessionStart as it swaps its drawn prompt for
    "Resuming session..." (dropping keys): the prompt on a screen rendered from before
    the report is not its Ready; the one drawn again is."""
    gemini_prompt = [" >   Type your message or @path/to/file"]
    rules = ActivityRules(1000, agent="gemini-cli")
    rules.handle(ScreenShown(gemini_prompt, 1500, seq=100))
    assert rules.handle(FrameApplied(report_waiting(2000), seq=180)) == []  # drawn since
    assert rules.activity.phase is ActivityPhase.STARTING
    assert rules.handle(ScreenShown(gemini_prompt, 2010, seq=150)) == []  # the renderer lags
    assert rules.handle(ScreenShown(["Resuming session..."], 2020, seq=200)) == []
    assert kinds(rules.handle(ScreenShown(gemini_prompt, 2500, seq=300))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.since) == (ActivityPhase.WAITING, 2500)

    # The prompt on a screen rendered past the report: Ready at once.
    rules = ActivityRules(1000, agent="gemini-cli")
    rules.handle(ScreenShown(gemini_prompt, 1500, seq=200))
    assert "Changed" in kinds(rules.handle(FrameApplied(report_waiting(2000), seq=200)))


def test_a_resumed_gemini_is_ready_once_it_has_loaded_the_conversation() -> None:
    """Its prompt, drawn before and after its SessionStart, is Ready only once
    "Resuming session..." has come and gone (keys typed before it are dropped)."""
    gemini_prompt = [" >   Type your message or @path/to/file"]
    for resumed, args in ((True, []), (False, ["--resume=latest"]), (False, ["-r", "3"])):
        rules = ActivityRules(1000, agent="gemini-cli", args=args, resumed=resumed)
        rules.handle(ScreenShown(gemini_prompt, 1500, seq=100))
        assert rules.handle(FrameApplied(report_waiting(2000), seq=100)) == []
        assert rules.handle(ScreenShown(gemini_prompt, 2100, seq=300)) == []  # redrawn
        assert rules.handle(ScreenShown(["Resuming session..."], 2200, seq=400)) == []
        assert kinds(rules.handle(ScreenShown(gemini_prompt, 2300, seq=500))) == ["Changed"]
    # Not resumed: the prompt drawn before its report is Ready.
    rules = ActivityRules(1000, agent="gemini-cli", args=["--model", "x"])
    rules.handle(ScreenShown(gemini_prompt, 1500, seq=100))
    assert "Changed" in kinds(rules.handle(FrameApplied(report_waiting(2000), seq=100)))


def report_waiting(at: int) -> Any:
    return FRAME_PAYLOAD.validate_python({"type": "activity", "phase": "waiting", "at": at})


def test_an_agent_that_cannot_report_ready_is_ready_when_its_prompt_shows() -> None:
    rules = ActivityRules(1000, agent="codex")
    assert rules.wants_ticks()  # start-up quiet may end it too
    assert kinds(rules.handle(ScreenShown(CODEX_PROMPT, 1500))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.source) == (ActivityPhase.WAITING, "terminal")


def test_start_up_quiet_is_ready_only_once_something_was_drawn() -> None:
    """OpenCode is quiet for seconds before its first frame, reading no keys."""
    rules = ActivityRules(1000, agent="opencode")
    assert rules.handle(Tick(5000, quiet_ms=4000, output_seen=True)) == []
    rules.handle(ScreenShown(["a dialog of its own"], 5100))
    assert rules.handle(Tick(5200, quiet_ms=500, output_seen=True)) == []
    assert kinds(rules.handle(Tick(6200, quiet_ms=1500, output_seen=True))) == ["Changed"]
    assert rules.activity.phase is ActivityPhase.WAITING
    assert not rules.wants_ticks()


def test_a_turn_shows_from_the_busy_line_and_a_guess_ends_unconfirmed() -> None:
    rules = ActivityRules(1000, agent="codex")
    rules.handle(ScreenShown(CODEX_PROMPT, 1100))  # Ready: that screen showed no line
    assert kinds(rules.handle(ScreenShown(CODEX_BUSY, 2000))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.source) == (ActivityPhase.WORKING, "terminal")
    assert rules.handle(ScreenShown(CODEX_PROMPT, 2100)) == []  # gone: not at once
    assert rules.wants_ticks()
    gone_for = int(UNCONFIRMED_SECONDS * 1000)
    assert rules.handle(Tick(2100 + gone_for - 1, 0, True)) == []
    assert kinds(rules.handle(Tick(2100 + gone_for, 0, True))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.since) == (ActivityPhase.WAITING, 2100)


def test_the_line_must_have_stayed_away_before_its_return_is_a_turn() -> None:
    """A redraw caught half done (the old turn's line erased, not yet drawn again) just
    after the Stop hook reported is no new turn; the line back after a real pause is.
    The same when the first screen of the ``waiting`` is the half-done redraw (Qwen
    Code redraws its spinner after its Stop hook), and for a line typed in at once:
    its hook reports that turn."""
    rules = ActivityRules(1000, agent="codex")
    rules.handle(ScreenShown(CODEX_PROMPT, 1100))  # Ready
    assert rules.handle(ScreenShown(CODEX_BUSY, 1100 + AWAY_BEFORE_TURN_MS - 1)) == []
    rules.handle(frame(type="activity", phase="working", at=1400, agent="codex"))
    rules.handle(frame(type="activity", phase="waiting", at=2000, agent="codex"))
    assert rules.handle(ScreenShown(CODEX_PROMPT, 2005)) == []  # mid-redraw, first
    assert rules.handle(ScreenShown(CODEX_BUSY, 2010)) == []  # the old line, drawn again
    rules.handle(frame(type="activity", phase="working", at=2500, agent="codex"))
    rules.handle(frame(type="activity", phase="waiting", at=3000, agent="codex"))
    assert rules.handle(ScreenShown(CODEX_BUSY, 3005)) == []  # the old line, still drawn
    assert rules.handle(ScreenShown(CODEX_PROMPT, 3010)) == []  # mid-redraw
    assert rules.handle(ScreenShown(CODEX_BUSY, 3010 + AWAY_BEFORE_TURN_MS - 1)) == []
    assert (rules.activity.phase, rules.activity.source) == (ActivityPhase.WAITING, "extension")
    assert rules.handle(ScreenShown(CODEX_PROMPT, 4000)) == []  # the turn's end drawn
    began = rules.handle(ScreenShown(CODEX_BUSY, 4000 + AWAY_BEFORE_TURN_MS))
    assert kinds(began) == ["Changed"]
    assert (rules.activity.phase, rules.activity.source) == (ActivityPhase.WORKING, "terminal")


def test_the_extension_confirms_a_guessed_turn() -> None:
    rules = ActivityRules(1000, agent="codex")
    rules.handle(ScreenShown(CODEX_PROMPT, 1100))
    rules.handle(ScreenShown(CODEX_BUSY, 2000))
    confirmed = rules.handle(frame(type="activity", phase="working", at=2400, agent="codex"))
    assert kinds(confirmed) == ["Changed"]
    assert (rules.activity.since, rules.activity.source) == (2000, "extension")


@pytest.mark.parametrize(
    ("payload", "withdraws", "drops"),
    [
        ({"type": "interaction_cleared", "at": 5, "id": "req-1"}, ("interaction", "req-1"), False),
        ({"type": "interaction_cleared", "at": 5}, "main", True),
        ({"type": "interaction_cleared", "at": 5, "reason": TOOL_RESULTS}, "main", False),
        ({"type": "subagent_stopped", "at": 5, "agent_id": "a1"}, ("subagent", "a1"), False),
        ({"type": "activity", "phase": "stopped", "at": 5}, "all", True),
        ({"type": "activity", "phase": "waiting", "at": 5}, "main", False),
        ({"type": "activity", "phase": "failed", "at": 5}, "main", False),
        ({"type": "activity", "phase": "working", "at": 5}, None, False),
    ],
)
def test_what_each_frame_ends(payload: dict[str, Any], withdraws: Any, drops: bool) -> None:
    assert frame_ends(FRAME_PAYLOAD.validate_python(payload)) == (withdraws, drops)
    rules = ActivityRules(1)
    effects = rules.handle(FrameApplied(FRAME_PAYLOAD.validate_python(payload)))
    assert (Withdraw(5, withdraws) in effects) == (withdraws is not None)
    assert (DropQueuedMessage() in effects) == drops


def test_a_message_queued_in_a_turn_shown_from_the_busy_line_stays() -> None:
    """Its hook's prompt, when it comes, is that turn's, not a new one."""
    rules = ActivityRules(1000, agent="codex")
    rules.handle(ScreenShown(CODEX_PROMPT, 1100))
    rules.handle(ScreenShown(CODEX_BUSY, 2000))
    rules.handle(MessageQueued(2100))
    assert DropQueuedMessage() not in rules.handle(frame(type="interaction_cleared", at=2300))
    rules.handle(frame(type="activity", phase="waiting", at=3000))
    assert DropQueuedMessage() in rules.handle(frame(type="interaction_cleared", at=4000))


def test_a_key_interrupts_a_turn_and_the_exit_is_final() -> None:
    rules = ActivityRules(1000, agent="claude-code")
    rules.handle(frame(type="activity", phase="working", at=2000))
    assert rules.handle(KeyTyped(b"x", 2500)) == []
    assert kinds(rules.handle(KeyTyped(b"\x1b", 3000))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.reason) == (ActivityPhase.WAITING, "interrupted")
    assert kinds(rules.handle(ProgramExited(0, None, False, 4000))) == [
        "Changed",
        "DropQueuedMessage",
    ]
    assert kinds(rules.handle(frame(type="activity", phase="working", at=5000))) == ["Stale"]


def test_ctrl_c_does_not_end_a_turn_of_an_agent_that_works_on_after_it() -> None:
    """Droid takes Ctrl-C in a turn as the first of two to exit; Esc ends the turn."""
    rules = ActivityRules(1000, agent="droid")
    rules.handle(frame(type="activity", phase="working", at=2000))
    assert rules.handle(KeyTyped(b"\x03", 2500)) == []
    assert rules.activity.phase is ActivityPhase.WORKING
    assert kinds(rules.handle(KeyTyped(b"\x1b", 3000))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.reason) == (ActivityPhase.WAITING, "interrupted")


def test_a_conversation_id_not_of_the_agents_kind_is_refused_not_the_frame() -> None:
    rules = ActivityRules(1000, agent="claude-code")
    effects = rules.handle(
        frame(type="activity", phase="working", at=2000, native_session_id="--yolo")
    )
    assert kinds(effects) == ["IdRefused", "Changed"]
    assert rules.activity.native_session_id is None
    rules.handle(frame(type="activity", phase="waiting", at=3000, native_session_id=UUID))
    assert rules.activity.native_session_id == UUID


def test_the_docs_show_what_each_frame_ends_as_the_code_does() -> None:
    """The table in `frame_ends`'s docstring, pinned by the test above, is the one in
    the documentation's *Activity states* page."""
    page = (Path(__file__).parents[2] / "docs" / "activity.md").read_text()
    doc = frame_ends.__doc__ or ""
    rows = [line.strip() for line in doc.splitlines() if line.strip().startswith("``")]
    table = page.split("What a frame ends is a", 1)[1].split("## Signals", 1)[0]
    for row in rows:
        frame_kind, _, rest = row.partition("  ")
        cells = [cell for cell in re.split(r"\s{2,}", rest.strip()) if cell]
        name = frame_kind.replace("``", "`")
        assert any(
            line.startswith(f"| {name}") and all(cell.split(" (")[0] in line for cell in cells)
            for line in table.splitlines()
        ), row


COPILOT_TRUST = [
    "│ Confirm folder trust │",
    "│ Do you trust the files in this folder? │",
    "│ \u276f 1. Yes │",
]
COPILOT_PROMPT = [
    " /tmp/project",
    "─" * 40,
    "\u276f",
    "─" * 40,
    " ← open sidebar · Interactive · Manual Approval · / commands · ? help · tab next tab",
]


def test_a_start_up_dialog_needs_input_until_the_prompt_shows() -> None:
    """Copilot asks whether to trust the folder before its prompt shows: the session
    needs input, with the dialog's title (a client, a notification can say what it
    waits on); keys typed then answer the dialog, so neither quiet nor a key makes it
    Ready; the prompt, once the dialog is answered, does."""
    rules = ActivityRules(1000, agent="copilot")
    assert kinds(rules.handle(ScreenShown(COPILOT_TRUST, 2000))) == ["Changed"]
    asked = rules.activity
    assert (asked.phase, asked.reason, asked.source, asked.since) == (
        ActivityPhase.NEEDS_INPUT,
        "Confirm folder trust",
        "terminal",
        2000,
    )
    assert rules.handle(ScreenShown(COPILOT_TRUST, 2500)) == [], "the same dialog: no change"
    assert rules.handle(Tick(9000, quiet_ms=7000, output_seen=True)) == []
    assert rules.handle(KeyTyped(b"\x1b[B", 9100)) == [], "a key moves in the dialog"
    assert rules.handle(KeyTyped(b"\x1b", 9150)) == [], "not an interrupt of a turn"
    assert rules.activity == asked
    assert rules.watches_screen() and rules.wants_ticks()
    # Answered: the dialog goes; quiet before the prompt is drawn is Ready as ever.
    assert rules.handle(ScreenShown(["", "loading"], 9300)) == []
    assert kinds(rules.handle(ScreenShown(COPILOT_PROMPT, 9500))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.source) == (ActivityPhase.WAITING, "terminal")
    assert rules.activity.reason is None


def test_the_prompt_behind_a_start_up_dialog_is_not_ready() -> None:
    """The dialog is drawn over a screen that may already show the prompt's frame."""
    rules = ActivityRules(1000, agent="copilot")
    rules.handle(ScreenShown([*COPILOT_PROMPT, *COPILOT_TRUST], 2000))
    assert rules.activity.phase is ActivityPhase.NEEDS_INPUT


def test_quiet_after_a_start_up_dialog_is_ready() -> None:
    """A dialog answered and gone, a prompt never recognised (a changed layout): quiet
    ends the start-up, as it does without a dialog."""
    rules = ActivityRules(1000, agent="copilot")
    rules.handle(ScreenShown(COPILOT_TRUST, 2000))
    rules.handle(ScreenShown(["a layout of its own"], 3000))
    assert kinds(rules.handle(Tick(5000, quiet_ms=1500, output_seen=True))) == ["Changed"]
    assert rules.activity.phase is ActivityPhase.WAITING


def test_a_start_up_dialog_survives_a_planned_restart() -> None:
    """Handed to the next server (export/restore), it is still not answered by a key."""
    rules = ActivityRules(1000, agent="copilot")
    rules.handle(ScreenShown(COPILOT_TRUST, 2000))
    state = rules.tracker.export()
    restored = ActivityTracker(5000, agent="copilot")
    restored.restore(state)
    assert restored.in_startup_dialog
    assert not restored.attended(6000) and not restored.interrupted(6000)
    assert restored.started_up(7000)
    assert restored.activity.phase is ActivityPhase.WAITING


OMP_WIZARD = ["", "    Set up your providers", "                  Setup step 1 of 5"]
OMP_PROMPT = [
    "",
    " \u03c0 > \u2b22 Fake model > project \u25b6\u2500\u2500 12%\u2500\u2500",
    "\u2570\u2500",
]


def test_a_reported_ready_waits_out_a_start_up_dialog() -> None:
    """oh-my-pi reports session_start, then shows its first-run wizard: the report is
    held, the wizard needs input with its step as the reason, and the prompt drawn
    after it applies the held report (the extension's Ready, stamped then)."""
    rules = ActivityRules(1000, agent="oh-my-pi")
    held = frame(type="activity", phase="waiting", at=1500, native_session_id=UUID)
    assert rules.handle(held) == []
    assert kinds(rules.handle(ScreenShown(OMP_WIZARD, 2000))) == ["Changed"]
    asked = rules.activity
    assert (asked.phase, asked.reason, asked.source) == (
        ActivityPhase.NEEDS_INPUT,
        "Setup step 1 of 5",
        "terminal",
    )
    assert rules.handle(Tick(9000, quiet_ms=7000, output_seen=True)) == [], "quiet in it"
    assert kinds(rules.handle(ScreenShown(OMP_PROMPT, 9500))) == ["Changed"]
    ready = rules.activity
    assert (ready.phase, ready.source, ready.since) == (ActivityPhase.WAITING, "extension", 9500)
    assert not rules.tracker.in_startup_dialog


def test_a_report_during_a_start_up_dialog_is_held_too() -> None:
    """A Ready that arrives while the dialog shows is not the end of it either."""
    rules = ActivityRules(1000, agent="oh-my-pi")
    rules.handle(ScreenShown(OMP_WIZARD, 2000))
    assert rules.handle(frame(type="activity", phase="waiting", at=2500)) == []
    assert rules.activity.phase is ActivityPhase.NEEDS_INPUT
    assert kinds(rules.handle(ScreenShown(OMP_PROMPT, 4000))) == ["Changed"]
    assert rules.tracker.activity.phase is ActivityPhase.WAITING


def test_a_start_up_dialog_after_ready_takes_it_back() -> None:
    """oh-my-pi draws its editor and reports Ready, then shows its first-run wizard
    over it: needs input until the prompt shows again, the extension's Ready then.
    Once a turn has begun, nothing on screen is a start-up dialog any more."""
    rules = ActivityRules(1000, agent="oh-my-pi")
    rules.handle(ScreenShown(OMP_PROMPT, 1500, seq=10))
    assert "Changed" in kinds(rules.handle(frame(type="activity", phase="waiting", at=1600)))
    assert rules.activity.phase is ActivityPhase.WAITING
    assert rules.watches_screen(), "until the first turn"
    splash = ["", "  press enter to skip  "]
    assert kinds(rules.handle(ScreenShown(splash, 1700, seq=20))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.reason) == (
        ActivityPhase.NEEDS_INPUT,
        "press enter to skip",
    )
    assert kinds(rules.handle(ScreenShown(OMP_WIZARD, 2000, seq=30))) == ["Changed"]
    assert rules.activity.reason == "Setup step 1 of 5"
    assert kinds(rules.handle(ScreenShown(OMP_PROMPT, 5000, seq=40))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.source, rules.activity.since) == (
        ActivityPhase.WAITING,
        "extension",
        5000,
    )
    rules.handle(frame(type="activity", phase="working", at=6000))
    assert not rules.watches_screen()
    assert rules.handle(ScreenShown(OMP_WIZARD, 6500, seq=50)) == []
    assert rules.tracker.activity.phase is ActivityPhase.WORKING


CLINE_ASKS = [" Cline needs permission", " Approve tool call?", "  [y] Approve   [n] Deny"]
CLINE_RUNS = [" * run_commands(echo hi)", "   \u23bf hi"]


def approval(at: int, *, on_screen: bool = True, ident: str = "req-1") -> FrameApplied:
    shown = {"id": ident, "kind": "approval", "agent": "cline", "created_at": at}
    return frame(type="interaction", at=at, interaction=shown, on_screen=on_screen)


def with_seq(applied: FrameApplied, seq: int) -> FrameApplied:
    return FrameApplied(applied.payload, seq)


def test_an_approval_the_agent_may_skip_is_pending_only_once_its_dialog_shows() -> None:
    """Cline's PreToolUse comes before it decides whether to ask: its approval waits
    for Cline's dialog on a screen drawn after the frame; the call's end, when Cline
    ran it by itself, drops it unseen."""
    rules = ActivityRules(1000, agent="cline")
    rules.handle(frame(type="activity", phase="working", at=2000))
    assert rules.handle(with_seq(approval(3000), 50)) == []
    assert rules.watches_screen() and rules.tracker.pending is None
    assert rules.handle(ScreenShown(CLINE_RUNS, 3100, seq=60)) == []
    assert rules.handle(ScreenShown(CLINE_ASKS, 3200, seq=40)) == []  # drawn before it
    (changed,) = rules.handle(ScreenShown(CLINE_ASKS, 3300, seq=70))
    assert isinstance(changed, Changed) and changed.pending is not None
    assert changed.activity.phase is ActivityPhase.NEEDS_INPUT
    assert changed.activity.since == 3300 and changed.pending.created_at == 3000
    rules.handle(frame(type="interaction_cleared", at=4000, id="req-1"))
    assert rules.activity.phase is ActivityPhase.WORKING and not rules.watches_screen()
    # Run without asking: its end comes first, and the dialog of another call later
    # does not show this one.
    rules.handle(with_seq(approval(5000, ident="req-2"), 80))
    rules.handle(frame(type="interaction_cleared", at=5100, id="req-2"))
    rules.handle(frame(type="activity", phase="working", at=5100))
    assert not rules.watches_screen()
    assert rules.handle(ScreenShown(CLINE_ASKS, 5200, seq=90)) == []
    assert rules.activity.phase is ActivityPhase.WORKING


def test_a_held_approval_ends_with_the_turn_and_the_exit() -> None:
    rules = ActivityRules(1000, agent="cline")
    rules.handle(frame(type="activity", phase="working", at=2000))
    rules.handle(approval(3000))
    rules.handle(frame(type="activity", phase="waiting", at=3500))
    assert not rules.watches_screen()
    rules.handle(frame(type="activity", phase="working", at=4000))
    rules.handle(approval(4500))
    rules.handle(ProgramExited(0, None, False, 5000))
    assert not rules.watches_screen() and rules.tracker.pending is None
    # A stale one is not held.
    rules = ActivityRules(1000, agent="cline")
    rules.handle(frame(type="activity", phase="working", at=2000))
    assert kinds(rules.handle(approval(1500))) == ["Stale"]
    assert not rules.watches_screen()


def test_an_on_screen_approval_of_an_agent_whose_dialog_is_not_known_shows_at_once() -> None:
    """Nothing would ever show it: it is an approval like any other."""
    rules = ActivityRules(1000, agent="claude-code")
    rules.handle(frame(type="activity", phase="working", at=2000))
    (changed,) = rules.handle(approval(3000))
    assert isinstance(changed, Changed) and changed.pending is not None


def test_esc_at_an_approval_of_an_agent_that_goes_on_is_no_interrupt() -> None:
    """Cline takes Esc at its approval dialog for Deny and works on: the call's end
    takes the session back to ``working``; during the turn Esc still ends it."""
    rules = ActivityRules(1000, agent="cline")
    rules.handle(frame(type="activity", phase="working", at=2000))
    rules.handle(approval(3000, on_screen=False))
    assert phase(rules.tracker) is ActivityPhase.NEEDS_INPUT
    rules.handle(KeyTyped(b"\x1b", 3500))
    assert phase(rules.tracker) is ActivityPhase.NEEDS_INPUT
    rules.handle(frame(type="interaction_cleared", at=3600, id="req-1"))
    assert phase(rules.tracker) is ActivityPhase.WORKING
    assert kinds(rules.handle(KeyTyped(b"\x1b", 4000))) == ["Changed"]
    assert (rules.activity.phase, rules.activity.reason) == (ActivityPhase.WAITING, "interrupted")
