"""The JavaScript agent extensions (``agent-extensions/``), run by node as real subprocesses.

* ``shared/frame.mjs`` must build the very bytes ``ptyvisor.wire.frames.encode_frame`` builds,
  and ``shared/mask.mjs`` must mask exactly as ``ptyvisor.agents.masking`` does (the shared
  vectors, plus thousands of generated strings compared side by side).
* The OpenCode plugin and the Pi extension are loaded from their files, fed the event
  sequences the real agents emit (shapes taken from OpenCode 1.18.33's, Pi 0.73.1's and
  Pi 1.6.0's own schemas and from their logs), and must write the expected frames to a
  real PTY slave given as ``PTYVISOR_TTY``. Every frame is split off the master by
  :class:`~ptyvisor.wire.scanner.FrameScanner`, authenticated by
  :func:`~ptyvisor.wire.frames.decode_frame` and validated by ptyvisor's own payload model.
* Outside a session they write nothing and never throw; an oversized interaction is
  shortened to fit one frame, never dropped.

Node.js 20+ is required (the agent end-to-end tests need it too): without it these
tests fail rather than skip.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ptyvisor.agents.activity import FRAME_PAYLOAD
from ptyvisor.agents.digest import prompt_digest
from ptyvisor.agents.hooks.normalise import text as py_text
from ptyvisor.agents.masking import mask
from ptyvisor.wire.frames import MAX_FRAME_BYTES, Rejected, decode_frame, encode_frame
from ptyvisor.wire.scanner import FrameScanner

from ..conftest import Pty, env_without_ptyvisor, extension_session_env

ROOT = Path(__file__).resolve().parents[2]
EXTENSIONS = ROOT / "agent-extensions"
OPENCODE_PLUGIN = EXTENSIONS / "opencode" / "ptyvisor.js"
OPENCODE_TUI_PLUGIN = EXTENSIONS / "opencode" / "ptyvisor-tui.js"
PI_EXTENSION = EXTENSIONS / "pi" / "ptyvisor.js"
VECTORS: list[dict[str, str]] = json.loads((EXTENSIONS / "masking-vectors.json").read_text())[
    "cases"
]

SID = "js-ext_1"
NONCE = "0123456789abcdef0123456789abcdef"

Payload = dict[str, Any]


# -- running node --------------------------------------------------------------------


def node_path() -> str:
    found = shutil.which("node")
    assert found is not None, "node (Node.js 20+) is not on PATH; the JS extension tests need it"
    return found


def session_env(tty_path: str) -> dict[str, str]:
    return extension_session_env(SID, NONCE, tty_path)


def run_node(
    script: str, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run an inline ES module. start_new_session: no controlling terminal, so the
    ``/dev/tty`` fallback can never reach the developer's terminal."""
    result = subprocess.run(
        [node_path(), "--input-type=module", "-e", script, *args],
        cwd=ROOT,
        env=env if env is not None else env_without_ptyvisor(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


READ_STDIN = """
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
"""


# -- a real PTY ------------------------------------------------------------------------


def frames_on(pair: Pty) -> list[Payload]:
    """Every frame written so far: authenticated, decoded and schema-checked.
    Nothing but frames may reach the terminal."""
    scanner = FrameScanner()
    result = scanner.feed(pair.read_available())
    tail = scanner.flush()
    assert result.output == b"" and tail.output == b"", "non-frame bytes on the terminal"
    assert result.dropped == 0 and tail.dropped == 0, "a frame was torn or oversized"
    payloads: list[Payload] = []
    for body in result.frames:
        assert len(body) + len(b"\x1b]7733;") + 1 <= MAX_FRAME_BYTES
        decoded = decode_frame(body, SID, NONCE)
        assert not isinstance(decoded, Rejected), decoded
        FRAME_PAYLOAD.validate_python(decoded)  # ptyvisor would accept it
        payloads.append(decoded)
    ats = [p["at"] for p in payloads]
    assert ats == sorted(ats), "frames must carry non-decreasing times"
    return payloads


def summary(payloads: list[Payload]) -> list[tuple[str, ...]]:
    """Each frame as a short tuple: ("activity", phase, reason), ("interaction", kind,
    id) or ("cleared", id, reason)."""
    out: list[tuple[str, ...]] = []
    for p in payloads:
        if p["type"] == "activity":
            out.append(("activity", p["phase"], p.get("reason", "")))
        elif p["type"] == "interaction":
            out.append(("interaction", p["interaction"]["kind"], p["interaction"]["id"]))
        else:
            out.append(("cleared", p.get("id", ""), p.get("reason", "")))
    return out


# -- (a) frame encoding ---------------------------------------------------------------

ENCODE = (
    READ_STDIN
    + """
import { encodeFrame } from "./agent-extensions/shared/frame.mjs";
const out = input.map(([payload, terminator]) => {
  try {
    return encodeFrame(process.argv[1], process.argv[2], payload, terminator).toString("base64");
  } catch (error) {
    return null;
  }
});
process.stdout.write(JSON.stringify(out));
"""
)

ENCODE_PAYLOADS: list[Payload] = [
    {"type": "activity", "phase": "working", "at": 1_795_986_405_505, "agent": "opencode"},
    {
        "type": "activity",
        "phase": "failed",
        "at": 0,
        "agent": "pi",
        "reason": 'é 日本語 🙂 \u2028\u2029 \x00\x01\x1f\x7f "quoted" \\ / </script> \t\n\r\b\f',
        "native_session_id": "ses_dd6ddd28cffeNT08q0YXIWbIEx",
    },
    {
        "type": "interaction",
        "at": 42,
        "interaction": {
            "id": "per_1",
            "kind": "approval",
            "agent": "opencode",
            "rows": [{"label": "Diff", "value": "界" * 15_000, "monospace": True}],
            "suggestions": [],
            "questions": [],
            "accepts_free_form": False,
            "created_at": 41,
        },
    },
    {"type": "interaction_cleared", "at": 7, "id": "que_1", "reason": "answered"},
    {"nested": {"list": [1, -2, True, False, None, "x"], "empty": {}, "e": []}, "z": "ok"},
    {"long": "a" * 40_000},
]


def js_encode(items: list[tuple[Payload, str]], sid: str = SID, nonce: str = NONCE) -> list[Any]:
    result = run_node(ENCODE, sid, nonce, stdin=json.dumps(items, ensure_ascii=False))
    encoded: list[Any] = json.loads(result.stdout)
    return encoded


@pytest.mark.parametrize("terminator", ["\x07", "\x1b\\"])
def test_encode_frame_is_byte_identical_to_python(terminator: str) -> None:
    encoded = js_encode([(payload, terminator) for payload in ENCODE_PAYLOADS])
    for payload, b64 in zip(ENCODE_PAYLOADS, encoded, strict=True):
        frame = base64.b64decode(b64)
        assert frame == encode_frame(SID, NONCE, payload, terminator=terminator.encode())
        body = frame[len(b"\x1b]7733;") : -len(terminator)]
        assert decode_frame(body, SID, NONCE) == payload


def test_encode_frame_refuses_what_python_refuses() -> None:
    oversized: Payload = {"long": "a" * 50_000}
    assert js_encode([(oversized, "\x07")]) == [None]
    with pytest.raises(ValueError):
        encode_frame(SID, NONCE, oversized)
    for sid, nonce in [("bad id!", NONCE), (SID, NONCE.upper()), (SID, "abc"), ("x" * 65, NONCE)]:
        assert js_encode([({"a": 1}, "\x07")], sid, nonce) == [None]
        with pytest.raises(ValueError):
            encode_frame(sid, nonce, {"a": 1})


# -- (b) masking ----------------------------------------------------------------------

MASK_ALL = (
    READ_STDIN
    + """
import { mask, text } from "./agent-extensions/shared/mask.mjs";
process.stdout.write(JSON.stringify({
  masked: input.masked.map((s) => mask(s)),
  texts: input.texts.map(([s, limit]) => text(s, limit)),
}));
"""
)


def js_mask(strings: list[str], texts: list[tuple[str, int]] | None = None) -> Payload:
    stdin = json.dumps({"masked": strings, "texts": texts or []}, ensure_ascii=False)
    out: Payload = json.loads(run_node(MASK_ALL, stdin=stdin).stdout)
    return out


@pytest.fixture(scope="module")
def js_vector_outputs() -> dict[str, str]:
    masked = js_mask([case["input"] for case in VECTORS])["masked"]
    return {case["name"]: out for case, out in zip(VECTORS, masked, strict=True)}


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_mask_vector(case: dict[str, str], js_vector_outputs: dict[str, str]) -> None:
    assert js_vector_outputs[case["name"]] == case["output"]


# Pieces that exercise every rule and the places where Python's `re` and JavaScript's
# RegExp differ (Unicode \b and \s, IGNORECASE's dotted/dotless i, long s and Kelvin K,
# `.` and line separators), and the bounded repetitions.
FRAGMENTS = [
    "sk-", "sk-ant-", "sk-proj-", "AIza", "ghp_", "gho_", "github_pat_", "glpat-", "xoxb-",
    "npm_", "AKIA", "ASIA", "Bearer", "bearer", "BASIC", "Basic", "://", "postgres://u:", "@",
    ":", "/", "=", "--", "--token", "--api-key", "--pass", "--Auth=", "-p", '"api_key"',
    '"secret"', '": "', '"', "'", "\\", '\\"', "API_KEY", "export ", "GITHUB_TOKEN",
    "password", "PASSWD", "credentials", "Credential", "auth", "key", " ", "  ", "\t", "\n",
    "\r", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", "\ufeff",
    "\u0130", "\u0131", "\u017f", "\u212a", "é", "日本", "٣", "_", "ABCDEFGHIJKLMNOP",
    "abcdefghijklmnopqrstuvwxyz0123456789", "0123456789", "x", "X", "-", ".", "+", "~", "==",
    "tok", "en", "ey", "🙂", "\x00", "\x1b",
    "a" * 70, "B_" * 40, "u" * 260, "x-" * 20, "p:" * 3,
]  # fmt: skip


def test_mask_matches_python_on_generated_text() -> None:
    rng = random.Random(7733)
    cases = ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 12))) for _ in range(6000)]
    masked = js_mask(cases)["masked"]
    differ = [(c, mask(c), js) for c, js in zip(cases, masked, strict=True) if mask(c) != js]
    assert differ == []
    assert sum(mask(c) != c for c in cases) > 500, "the generator must exercise the rules"


DIGEST_ALL = (
    READ_STDIN
    + """
import { promptDigest } from "./agent-extensions/shared/digest.mjs";
process.stdout.write(JSON.stringify(input.map((s) => promptDigest(s))));
"""
)


def test_prompt_digest_matches_python_on_generated_text() -> None:
    """The JS extensions (OpenCode, Pi) and the Python hooks name a prompt alike, so a
    prompt request is confirmed whichever reports it (lone surrogates aside)."""
    rng = random.Random(2004)
    cases = ["", "   ", "x", " a\r\n b\t", *(
        "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 12))) for _ in range(3000)
    )]  # fmt: skip
    stdin = json.dumps(cases, ensure_ascii=False)
    js = json.loads(run_node(DIGEST_ALL, stdin=stdin).stdout)
    assert js == [prompt_digest(case) for case in cases]
    assert prompt_digest("Fix it\r\n  now ") == prompt_digest("Fix it now")
    assert prompt_digest("Fix it now") != prompt_digest("Fix it not")


def test_text_masks_before_cutting_like_python() -> None:
    secret = "ghp_" + "a" * 36
    texts = [
        ("x" * 3990 + " " + secret + " tail", 4000),  # the secret straddles the cut
        ("🙂" * 5000, 4000),  # code points, not UTF-16 units
        ("日本" * 3000 + " API_KEY=abc", 4000),
        ("short " + secret, 4000),
        ("y" * 100, 64),
        ("", 4000),
    ]
    out = js_mask([], texts)["texts"]
    assert out == [py_text(value, limit) for value, limit in texts]
    assert "aaaa" not in out[0] and out[0].endswith("…") and len(out[0]) == 4000


# -- driving the extensions -----------------------------------------------------------

OPENCODE_DRIVER = (
    READ_STDIN
    + """
import { pathToFileURL } from "node:url";
const mod = await import(pathToFileURL(process.argv[1]).href);
// OpenCode calls every export of a plugin module as a plugin.
const exported = Object.values(mod);
if (exported.length === 0 || !exported.every((f) => typeof f === "function")) {
  throw new Error("a plugin module must export only functions");
}
const hooks = await exported[0]({ client: {}, project: { id: "global" }, directory: process.cwd(),
  worktree: process.cwd(), serverUrl: new URL("http://localhost:4096"), $: undefined });
for (const step of input) {
  if (step.sleep) await new Promise((resolve) => setTimeout(resolve, step.sleep));
  else if (step.hook) await hooks[step.hook](step.input, step.output ?? {});
  else await hooks.event({ event: step });
}
process.stdout.write("ok");
"""
)

OPENCODE_TUI_DRIVER = (
    READ_STDIN
    + """
import { pathToFileURL } from "node:url";
// Timers the steps fire by hand: the plugin's wait is seconds long.
const timers = new Map();
let nextTimer = 1;
globalThis.setTimeout = (fn, ms) => { timers.set(nextTimer, { fn, ms }); return nextTimer++; };
globalThis.clearTimeout = (id) => { timers.delete(id); };
const mod = await import(pathToFileURL(process.argv[1]).href);
const plugin = mod.default;
if (Object.keys(mod).length !== 1 || typeof plugin?.tui !== "function" || !plugin.id) {
  throw new Error("a TUI plugin module exports one default { id, tui }");
}
const listeners = { dispatch: [], events: new Map() };
const api = {
  keymap: { on: (name, fn) => { if (name === "dispatch") listeners.dispatch.push(fn); } },
  event: {
    on: (type, fn) => listeners.events.set(type, [...(listeners.events.get(type) ?? []), fn]),
  },
};
await plugin.tui(api, {}, { id: plugin.id, state: "first" });
for (const step of input) {
  if (step.submit !== undefined) {
    const event = { phase: "binding-execute", command: step.command ?? "input.submit",
      focused: { plainText: step.submit } };
    for (const fn of listeners.dispatch) fn(event);
  } else if (step.event) {
    for (const fn of listeners.events.get(step.event) ?? []) fn({ type: step.event });
  } else if (step.fire) {
    for (const [id, { fn, ms }] of [...timers]) {
      if (ms !== step.fire) throw new Error(`a timer of ${ms} ms, not ${step.fire}`);
      timers.delete(id);
      fn();
    }
  }
}
process.stdout.write("ok");
"""
)

PI_DRIVER = (
    READ_STDIN
    + """
import { pathToFileURL } from "node:url";
const mod = await import(pathToFileURL(process.argv[1]).href);
const handlers = new Map();
const pi = { on: (name, handler) => handlers.set(name, [...(handlers.get(name) ?? []), handler]) };
mod.default(pi);
for (const step of input) {
  if (step.sleep) {
    await new Promise((resolve) => setTimeout(resolve, step.sleep));
    continue;
  }
  const session = step.session ?? "01a22924-371b-76ad-bba3-504a32817fac";
  const ctx = { hasUI: true, cwd: process.cwd(), isIdle: () => true,
    sessionManager: { getSessionId: () => session } };
  for (const handler of handlers.get(step.event.type) ?? []) {
    // Pi treats a value returned from a before-event as a decision (e.g. cancel).
    const returned = await handler(step.event, ctx);
    if (returned !== undefined) throw new Error(`handler for ${step.event.type} returned a value`);
  }
}
process.stdout.write("ok");
"""
)


def drive(driver: str, extension: Path, steps: list[Payload], env: dict[str, str]) -> None:
    result = run_node(driver, str(extension), stdin=json.dumps(steps), env=env)
    assert result.stdout == "ok" and result.stderr == "", result


# -- OpenCode: events as OpenCode 1.18.33 publishes them (bus event {id, type, properties})

MAIN = "ses_dd6ddd28cffeNT08q0YXIWbIEx"
CHILD = "ses_dd6dc1d6bffeiiHyuB8ALFlP1e"
TOKEN_COMMAND = "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 git push origin main"


def oc(kind: str, **properties: Any) -> Payload:
    return {"id": f"evt_{kind}", "type": kind, "properties": properties}


def session_info(session_id: str, parent: str | None = None) -> Payload:
    info: Payload = {
        "id": session_id,
        "slug": "proud-eagle",
        "version": "1.18.33",
        "projectID": "global",
        "directory": "/tmp/project",
        "title": "New session",
        "time": {"created": 1795986493016, "updated": 1795986493016},
    }
    if parent:
        info["parentID"] = parent
    return info


def chat_message(session_id: str) -> Payload:
    """OpenCode's ``chat.message`` hook (a step the driver calls as a hook), as
    1.18.33 triggers it for the user's new message."""
    return {
        "hook": "chat.message",
        "input": {"sessionID": session_id, "agent": "build", "messageID": "msg_0"},
        "output": {"message": {"id": "msg_0", "role": "user"}, "parts": []},
    }


def status(session_id: str, kind: str, **extra: Any) -> Payload:
    return oc("session.status", sessionID=session_id, status={"type": kind, **extra})


def api_error(session_id: str, name: str, message: str) -> Payload:
    data: Payload = {"message": message}
    if name == "APIError":
        data.update(statusCode=400, isRetryable=False)
    return oc("session.error", sessionID=session_id, error={"name": name, "data": data})


def bash_permission(perm_id: str, session_id: str, command: str) -> Payload:
    return oc(
        "permission.asked",
        id=perm_id,
        sessionID=session_id,
        permission="bash",
        patterns=[command],
        metadata={"command": command},
        always=["git push *"],
        tool={"messageID": "msg_1", "callID": "call_1"},
    )


COLOUR_QUESTION = {
    "question": "Which colour?",
    "header": "Colour",
    "options": [
        {"label": "Red", "description": "Pick Red"},
        {"label": "Blue", "description": "Pick Blue"},
    ],
}


def test_opencode_plugin_reports_a_session(pty_pair: Pty) -> None:
    steps = [
        oc("session.created", sessionID=MAIN, info=session_info(MAIN)),
        chat_message(MAIN),  # the user's prompt: working before OpenCode says busy
        oc("session.updated", sessionID=MAIN, info=session_info(MAIN)),
        status(MAIN, "busy"),
        status(MAIN, "busy"),  # every step says busy again: sent again (see the plugin)
        # A subagent: its session, prompt and status never touch the main turn.
        oc("session.created", sessionID=CHILD, info=session_info(CHILD, MAIN)),
        chat_message(CHILD),
        status(CHILD, "busy"),
        status(CHILD, "idle"),
        api_error(CHILD, "APIError", "child failed"),
        # An approval, with a token in the command; answered once.
        bash_permission("per_1", MAIN, TOKEN_COMMAND),
        oc("permission.replied", sessionID=MAIN, requestID="per_1", reply="once"),
        status(MAIN, "retry", attempt=1, message="Rate limited", next=2000),
        # A question; dismissed.
        oc(
            "question.asked",
            id="que_1",
            sessionID=MAIN,
            questions=[COLOUR_QUESTION],
            tool={"messageID": "msg_2", "callID": "call_2"},
        ),
        oc("question.rejected", sessionID=MAIN, requestID="que_1"),
        oc("question.replied", sessionID=MAIN, requestID="que_unknown", answers=[["Red"]]),
        # A subagent's approval blocks the main turn too; the turn end clears it.
        bash_permission("per_2", CHILD, "rm -rf build"),
        status(MAIN, "idle"),
        oc("session.idle", sessionID=MAIN),
    ]
    drive(OPENCODE_DRIVER, OPENCODE_PLUGIN, steps, session_env(pty_pair.path))
    frames = frames_on(pty_pair)
    # Nothing as the plugin loads (ptyvisor sees OpenCode's prompt drawn instead).
    assert summary(frames) == [
        # The new main session: nothing (its prompt's turn came from the TUI plugin).
        ("activity", "working", ""),  # its prompt
        ("activity", "working", ""),
        ("activity", "working", ""),
        ("interaction", "approval", "per_1"),
        ("cleared", "per_1", "answered"),
        ("activity", "working", "Rate limited"),
        ("interaction", "question", "que_1"),
        ("cleared", "que_1", "rejected"),
        ("interaction", "approval", "per_2"),
        ("cleared", "per_2", "turn_end"),
        ("activity", "waiting", ""),
    ]
    activities = [f for f in frames if f["type"] == "activity"]
    assert all(f["agent"] == "opencode" for f in activities)
    assert {f["native_session_id"] for f in activities} == {MAIN}

    approval = frames[3]["interaction"]
    assert approval == {
        "id": "per_1",
        "kind": "approval",
        "agent": "opencode",
        "tool": "bash",
        "title": "Run a shell command",
        "rows": [{"label": "Command", "value": mask(TOKEN_COMMAND), "monospace": True}],
        "suggestions": ["Always allow git push *"],
        "questions": [],
        "accepts_free_form": False,
        "created_at": approval["created_at"],
    }
    assert approval["rows"][0]["value"] == "GITHUB_TOKEN=*** git push origin main"
    question = frames[6]["interaction"]
    assert question["kind"] == "question" and question["accepts_free_form"] is True
    assert question["questions"] == [
        {
            "id": "q0",
            "header": "Colour",
            "question": "Which colour?",
            "options": COLOUR_QUESTION["options"],
            "multi_select": False,
        }
    ]


def test_pi_extension_under_oh_my_pi(pty_pair: Pty) -> None:
    """oh-my-pi 18.2.3 (its declared event shapes): no agent_settled; a retry is
    announced (auto_retry_start, then agent_end with willContinue) and never shows as
    failed; the failure after its last retry shows at once; its approval prompt is
    needs_input until resolved."""
    error = "503 Service unavailable"
    retry = {"maxAttempts": 10, "delayMs": 2000, "errorMessage": error}
    steps = [
        pi("session_start"),
        pi("before_agent_start"),
        pi("agent_start"),
        pi("tool_approval_requested", sessionId="s", toolCallId="c1", toolName="bash",
           approvalMode="always-ask"),
        pi("tool_approval_resolved", sessionId="s", toolCallId="c1", toolName="bash",
           approved=True),
        *turn_end("stop"),
        pi("before_agent_start"),
        pi("agent_start"),
        pi("message_end", message=assistant("error", error)),
        pi("auto_retry_start", attempt=1, **retry),
        pi("agent_end", messages=[assistant("error", error)], willContinue=True),
        pi("agent_start"),
        pi("message_end", message=assistant("error", error)),
        pi("auto_retry_end", success=False, attempt=2, finalError=error),
        pi("agent_end", messages=[assistant("error", error)]),
        pi("session_shutdown", reason="quit"),
    ]  # fmt: skip
    env = {**session_env(pty_pair.path), "PTYVISOR_AGENT": "oh-my-pi"}
    drive(PI_DRIVER, PI_EXTENSION, steps, env)
    frames = frames_on(pty_pair)
    assert all(f["agent"] == "oh-my-pi" for f in frames), "it speaks for the agent ptyvisor named"
    assert summary(frames) == [
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "needs_input", "approval: bash"),
        ("activity", "working", ""),
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "working", ""),  # the retry: no failed before it
        ("activity", "failed", error),  # at once, no backoff guessed
        ("activity", "stopped", ""),
    ]


@pytest.mark.parametrize(
    ("named", "speaks_for"),
    [("kilo", "kilo"), (None, "opencode"), ("\x1b[31mred", "opencode"), ("A" * 65, "opencode")],
)
def test_opencode_plugin_speaks_for_the_agent_ptyvisor_named(
    pty_pair: Pty, named: str | None, speaks_for: str
) -> None:
    """Kilo runs OpenCode's plugin: its frames name the agent from PTYVISOR_AGENT, and
    a value no agent name looks like is ignored."""
    env = session_env(pty_pair.path)
    if named is not None:
        env["PTYVISOR_AGENT"] = named
    steps = [oc("session.created", sessionID=MAIN, info=session_info(MAIN)), status(MAIN, "busy")]
    drive(OPENCODE_DRIVER, OPENCODE_PLUGIN, steps, env)
    frames = frames_on(pty_pair)
    assert frames and all(f["agent"] == speaks_for for f in frames), frames


def test_opencode_plugin_turn_outcomes(pty_pair: Pty) -> None:
    steps = [
        oc("session.created", sessionID=MAIN, info=session_info(MAIN)),
        # A provider error: failed with its message (masked); OpenCode then reports
        # idle twice, which must not turn it into "waiting".
        status(MAIN, "busy"),
        api_error(MAIN, "APIError", "Bad request for key sk-ant-api03-AbCdEf0123456789_abcdefgh"),
        status(MAIN, "idle"),
        oc("session.idle", sessionID=MAIN),
        status(MAIN, "idle"),
        # Esc: MessageAbortedError, then idle -> ready, "interrupted".
        status(MAIN, "busy"),
        api_error(MAIN, "MessageAbortedError", "The operation was aborted."),
        status(MAIN, "idle"),
        # A context overflow that compaction recovers from is not a failure...
        status(MAIN, "busy"),
        api_error(MAIN, "ContextOverflowError", "prompt is too long"),
        status(MAIN, "busy"),
        status(MAIN, "idle"),
        # ... one that it does not recover from is, at the idle.
        status(MAIN, "busy"),
        api_error(MAIN, "ContextOverflowError", "prompt is too long"),
        status(MAIN, "idle"),
        # An error without a session (a plugin failed to load) is not a turn.
        oc("session.error", error={"name": "UnknownError", "data": {"message": "plugin"}}),
    ]
    drive(OPENCODE_DRIVER, OPENCODE_PLUGIN, steps, session_env(pty_pair.path))
    assert summary(frames_on(pty_pair)) == [
        ("activity", "working", ""),
        ("activity", "failed", "Bad request for key sk-ant-***"),
        ("activity", "working", ""),
        ("activity", "waiting", "interrupted"),
        ("activity", "working", ""),
        ("activity", "working", ""),  # compaction carries on: busy again
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "failed", "prompt is too long"),
    ]


def test_opencode_question_without_custom_answers(pty_pair: Pty) -> None:
    questions = [
        {**COLOUR_QUESTION, "multiple": True, "custom": False},
        {"question": "Sure?", "header": "Confirm", "options": [], "custom": False},
    ]
    steps = [oc("question.asked", id="que_2", sessionID=MAIN, questions=questions)]
    drive(OPENCODE_DRIVER, OPENCODE_PLUGIN, steps, session_env(pty_pair.path))
    interaction = frames_on(pty_pair)[-1]["interaction"]
    assert interaction["accepts_free_form"] is False
    assert [q["multi_select"] for q in interaction["questions"]] == [True, False]
    assert [q["id"] for q in interaction["questions"]] == ["q0", "q1"]


# -- Pi: events as Pi 0.73.1 emits them to extensions ---------------------------------

PI_SESSION = "01a22924-371b-76ad-bba3-504a32817fac"
PI_NEW_SESSION = "01a22924-aaaa-bbbb-cccc-000000000002"


def assistant(stop: str, error: str | None = None) -> Payload:
    message: Payload = {
        "role": "assistant",
        "content": [] if error else [{"type": "text", "text": "PONG"}],
        "api": "openai-completions",
        "provider": "fake",
        "model": "fake-model",
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
        "stopReason": stop,
        "timestamp": 1795986493016,
    }
    if error:
        message["errorMessage"] = error
    return message


def pi(event_type: str, /, **fields: Any) -> Payload:
    return {"event": {"type": event_type, **fields}}


def turn_end(stop: str, error: str | None = None, **fields: Any) -> list[Payload]:
    """message_end of the last assistant message, then agent_end with the messages."""
    message = assistant(stop, error)
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}
    return [pi("message_end", message=message), pi("agent_end", messages=[user, message], **fields)]


def test_pi_extension_without_agent_settled(pty_pair: Pty) -> None:
    """Pi 0.73.1 has no agent_settled: the outcome is published when no retry or
    compaction can follow any more."""
    retryable = "503 Service unavailable, try later"
    steps = [
        pi("session_start", reason="startup"),
        pi("agent_start"),
        *turn_end("stop"),
        # Esc: aborted -> ready, "interrupted".
        pi("agent_start"),
        *turn_end("aborted", "Request was aborted"),
        # A retryable error Pi retries (agent_start again): no "failed" in between.
        pi("agent_start"),
        *turn_end("error", retryable),
        pi("agent_start"),
        *turn_end("stop"),
        # A context overflow compacted and continued: no "failed" either.
        pi("agent_start"),
        *turn_end("error", "400 prompt is too long: 300000 tokens > 200000 maximum"),
        pi("session_before_compact", reason="overflow"),
        pi("session_compact", fromExtension=False),
        pi("agent_start"),
        *turn_end("stop"),
        # A request error nothing follows: failed (masked) once the grace has passed.
        pi("agent_start"),
        *turn_end("error", "400 Bad request: model sk-ant-api03-AbCdEf0123456789_abcdefgh"),
        {"sleep": 1500},
        # Retries exhausted (Pi's default is 3): failed at once on the fourth.
        *[step for _ in range(3) for step in [pi("agent_start"), *turn_end("error", retryable)]],
        pi("agent_start"),
        *turn_end("error", retryable),
        # /new replaces the session (a new id); quitting stops.
        pi("session_shutdown", reason="new"),
        {**pi("session_start", reason="new"), "session": PI_NEW_SESSION},
        {**pi("session_shutdown", reason="quit"), "session": PI_NEW_SESSION},
    ]  # fmt: skip
    drive(PI_DRIVER, PI_EXTENSION, steps, session_env(pty_pair.path))
    frames = frames_on(pty_pair)
    assert summary(frames) == [
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "waiting", "interrupted"),
        ("activity", "working", ""),
        ("activity", "working", ""),  # the retry
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "working", ""),  # continued after compaction
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "failed", "400 Bad request: model sk-ant-***"),
        ("activity", "working", ""),
        ("activity", "working", ""),
        ("activity", "working", ""),
        ("activity", "working", ""),
        ("activity", "failed", retryable),
        ("activity", "waiting", ""),
        ("activity", "stopped", ""),
    ]
    assert all(f["agent"] == "pi" for f in frames)
    ids = [f["native_session_id"] for f in frames]
    assert ids == [PI_SESSION] * 18 + [PI_NEW_SESSION] * 2


def test_pi_extension_with_agent_settled(pty_pair: Pty) -> None:
    """Newer Pi: agent_end says willRetry, and agent_settled is the boundary."""
    steps = [
        pi("session_start", reason="startup"),
        pi("agent_start"),
        *turn_end("error", "503 overloaded", willRetry=True),
        pi("agent_start"),
        *turn_end("error", "400 invalid request", willRetry=False),
        pi("agent_settled"),
        pi("agent_start"),
        *turn_end("stop", willRetry=False),
        {"sleep": 1200},  # nothing is published before agent_settled once it is known
        pi("agent_settled"),
    ]
    drive(PI_DRIVER, PI_EXTENSION, steps, session_env(pty_pair.path))
    assert summary(frames_on(pty_pair)) == [
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "working", ""),
        ("activity", "failed", "400 invalid request"),
        ("activity", "working", ""),
        ("activity", "waiting", ""),
    ]


def test_pi_extension_reports_dialogs_as_needs_input(pty_pair: Pty) -> None:
    """Pi 1.x: another extension's blocking dialog (a permission gate's confirm) is
    needs_input with its title (masked) until the last one closes; what changed
    meanwhile shows then, and quitting shows at once."""
    command = "curl -H 'Authorization: Bearer sk-ant-api03-AbCdEf0123456789_abcdefgh' x"
    steps = [
        pi("session_start", reason="startup"),
        pi("agent_start"),
        pi("ui_prompt_start", reason="ui_prompt", kind="confirm", title=f"Allow? {command}"),
        pi("ui_prompt_end", reason="ui_prompt", kind="confirm", title=f"Allow? {command}"),
        # Two at once (nested); the turn ends while they are open.
        pi("ui_prompt_start", reason="ui_prompt", kind="select"),
        pi("ui_prompt_start", reason="ui_prompt", kind="input", title="Branch name"),
        *turn_end("stop", willRetry=False),
        pi("agent_settled"),
        pi("ui_prompt_end", reason="ui_prompt", kind="input"),
        pi("ui_prompt_end", reason="ui_prompt", kind="select"),
        pi("ui_prompt_end", reason="ui_prompt", kind="select"),  # one too many: ignored
        # Quitting from inside a dialog.
        pi("ui_prompt_start", reason="ui_prompt", kind="confirm", title="Quit?"),
        pi("session_shutdown", reason="quit"),
    ]
    drive(PI_DRIVER, PI_EXTENSION, steps, session_env(pty_pair.path))
    assert summary(frames_on(pty_pair)) == [
        ("activity", "waiting", ""),
        ("activity", "working", ""),
        ("activity", "needs_input", "Allow? curl -H 'Authorization: Bearer ******' x"),
        ("activity", "working", ""),
        ("activity", "needs_input", "select"),
        ("activity", "needs_input", "Branch name"),
        ("activity", "waiting", ""),
        ("activity", "needs_input", "Quit?"),
        ("activity", "stopped", ""),
    ]


def test_opencode_tui_plugin_reports_a_submitted_prompt_at_once(pty_pair: Pty) -> None:
    """The TUI plugin: `working` as the prompt box submits a prompt, before OpenCode's
    server has the session; `waiting` again if the server then says nothing of any
    session's status (OpenCode refused the prompt); nothing for slash commands, an
    empty box or other key bindings."""
    steps: list[Payload] = [
        {"submit": "   "},
        {"submit": "/models"},
        {"submit": "hello", "command": "session.new"},
        {"submit": "first prompt"},  # working
        {"event": "session.status"},  # the server has the turn: no fallback
        {"fire": 10000},
        {"submit": "second prompt"},  # working
        {"fire": 10000},  # nothing from the server in 10 s: waiting
    ]
    drive(OPENCODE_TUI_DRIVER, OPENCODE_TUI_PLUGIN, steps, session_env(pty_pair.path))
    frames = frames_on(pty_pair)
    assert summary(frames) == [
        ("activity", "working", ""),
        ("activity", "working", ""),
        ("activity", "waiting", ""),
    ]
    assert all(f["agent"] == "opencode" for f in frames)


# -- (d) outside a session ------------------------------------------------------------

SOME_EVENTS_OPENCODE = [
    oc("session.created", sessionID=MAIN, info=session_info(MAIN)),
    status(MAIN, "busy"),
    bash_permission("per_1", MAIN, "ls"),
    status(MAIN, "idle"),
]
SOME_EVENTS_PI = [pi("session_start", reason="startup"), pi("agent_start"), *turn_end("stop")]


def test_outside_a_session_nothing_is_written(pty_pair: Pty) -> None:
    no_session = env_without_ptyvisor(PTYVISOR_TTY=pty_pair.path)  # a terminal, but no session
    drive(OPENCODE_DRIVER, OPENCODE_PLUGIN, SOME_EVENTS_OPENCODE, no_session)
    drive(OPENCODE_TUI_DRIVER, OPENCODE_TUI_PLUGIN, [{"submit": "hi"}], no_session)
    drive(PI_DRIVER, PI_EXTENSION, SOME_EVENTS_PI, no_session)
    wrong_nonce = {**session_env(pty_pair.path), "PTYVISOR_NONCE": "not-a-nonce"}
    drive(PI_DRIVER, PI_EXTENSION, SOME_EVENTS_PI, wrong_nonce)
    assert pty_pair.read_available() == b""


def test_an_unusable_terminal_never_throws_or_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening a FIFO without a reader would block: it must not be opened
    regular = tmp_path / "file"
    regular.write_text("")
    for path in [str(tmp_path / "missing"), str(fifo), str(regular), str(tmp_path)]:
        env = session_env(path)
        drive(OPENCODE_DRIVER, OPENCODE_PLUGIN, SOME_EVENTS_OPENCODE, env)
        drive(PI_DRIVER, PI_EXTENSION, SOME_EVENTS_PI, env)
    assert regular.read_text() == ""


WRITE_FRAME = """
import { writeFrame } from "./agent-extensions/shared/frame.mjs";
process.stdout.write(JSON.stringify(writeFrame({ type: "activity", phase: "working", at: 1 })));
"""


def test_write_frame_reports_whether_it_wrote(pty_pair: Pty) -> None:
    assert run_node(WRITE_FRAME, env=session_env(pty_pair.path)).stdout == "true"
    assert frames_on(pty_pair) == [{"type": "activity", "phase": "working", "at": 1}]
    outside = env_without_ptyvisor(PTYVISOR_TTY=pty_pair.path)
    assert run_node(WRITE_FRAME, env=outside).stdout == "false"
    # No PTYVISOR_TTY and no controlling terminal for /dev/tty: nothing, no error.
    env = env_without_ptyvisor(PTYVISOR_SESSION=SID, PTYVISOR_NONCE=NONCE)
    assert run_node(WRITE_FRAME, env=env).stdout == "false"
    assert pty_pair.read_available() == b""


# -- (e) oversized interactions -------------------------------------------------------


def test_an_oversized_question_is_shortened_not_dropped(pty_pair: Pty) -> None:
    long = "界" * 5000  # 3 UTF-8 bytes each: 8 x 16 x 2 of these is ~3.8 MB of JSON
    questions = [
        {
            "question": f"Question {i}: {long}",
            "header": f"H{i}",
            "options": [{"label": f"L{j} {long}", "description": long} for j in range(20)],
        }
        for i in range(10)
    ]
    steps = [oc("question.asked", id="que_big", sessionID=MAIN, questions=questions)]
    drive(OPENCODE_DRIVER, OPENCODE_PLUGIN, steps, session_env(pty_pair.path))
    frames = frames_on(pty_pair)  # each frame within 64 KiB, valid for ptyvisor
    interaction = frames[-1]["interaction"]
    assert interaction["id"] == "que_big" and interaction["kind"] == "question"
    kept = interaction["questions"]
    assert 1 <= len(kept) <= 8
    assert kept[0]["header"] == "H0" and kept[0]["question"].startswith("Question 0: 界界")
    assert kept[0]["options"][0]["label"].startswith("L0 界")
    assert all(len(o["label"]) <= 4000 for q in kept for o in q["options"])


def test_an_oversized_approval_keeps_every_row(pty_pair: Pty) -> None:
    keys = ["command", "description", "filepath", "path", "pattern", "url", "query", "diff"]
    metadata = {key: "🙂" * 5000 for key in keys}  # 8 rows of 16 KB: only cutting fits
    steps = [
        oc(
            "permission.asked",
            id="per_big",
            sessionID=MAIN,
            permission="edit",
            patterns=["src/" + "x" * 5000],
            metadata=metadata,
            always=["*"],
        )
    ]
    drive(OPENCODE_DRIVER, OPENCODE_PLUGIN, steps, session_env(pty_pair.path))
    interaction = frames_on(pty_pair)[-1]["interaction"]
    assert interaction["id"] == "per_big" and interaction["title"] == "Edit a file"
    labels = ["Command", "Description", "File", "Path", "Pattern", "URL", "Query", "Diff"]
    assert [r["label"] for r in interaction["rows"]] == [*labels, "Patterns"]
    assert interaction["suggestions"] == ["Always allow *"]
    for row in interaction["rows"]:
        assert row["value"].startswith(("🙂🙂", "src/xx")) and row["value"].endswith("…")
        assert len(row["value"]) < 4000
