"""The real agent TUIs, offline, under real PTYs, against the fake model server.

Each test starts one agent's interactive TUI (120x40, TERM=xterm-256color) configured by
:func:`tests.agents.clis.offline.offline_env`, waits until it takes input, types a prompt,
checks the prompt reached the fake model and the scripted answer reached the screen,
then scripts a shell tool call that needs approval, approves it with the agent's keys,
checks the tool's output reached the model in the next request, and quits cleanly
(exit status 0). Nothing is skipped: when the CLIs cannot be installed the tests fail.

What was learned, per agent (pinned versions, this machine; times from spawn):

Claude Code 2.1.332 (``claude``, native binary)
    Ready: ~0.5 s; the prompt line ``❯`` with ``⏸ manual mode on`` in the status line
    (``--permission-mode default``; without it 2.1.332 starts in *auto* mode, whose
    model-backed classifier answers permission prompts itself). Type the text, Enter
    submits. Sends ``POST /v1/messages?beta=true`` (stream, model ``claude-opus-5-5``,
    13 tools, ``x-api-key``) and no side requests in these flows. Shell tool: ``Bash``
    ``{"command", "description"}`` (+ optional ``timeout``, ``run_in_background``).
    Approval: a "Bash command ... Do you want to proceed?" box with ``❯ 1. Yes``
    selected (2. always allow the project dir, 3. switch to auto mode, 4. No); Enter
    (or ``1``) approves once; Esc cancels. Keys arriving within ~0.1 s of the dialog's
    first frame are dropped (0.2 s later works; the test waits 0.6 s). The result
    comes back as a ``tool_result`` block (``"(Bash completed with no output)"`` when
    empty). Question: ``AskUserQuestion`` ``{"questions": [{"question", "header",
    "options": [{"label", "description"}], "multiSelect"}]}`` shows a chooser (the
    options, "Type something.", "Chat about this"); Down then Enter picks option 2 and,
    for a single question, submits at once; the result text is ``... "Which
    colour?"="Blue" ...``. Quit: Ctrl-C on an empty prompt shows "Press Ctrl-C again
    to exit"; a second Ctrl-C exits 0 (``/exit`` works too).

Codex 0.171.0 (``codex``, a Node wrapper spawning the native musl binary)
    Ready: ~0.5 s; composer ``› Ask Codex to do anything``, footer ``? for shortcuts``.
    Enter submits. Sends ``POST /v1/responses`` (stream, ``Authorization: Bearer``),
    plus one side request per thread with ``tools: []`` for its title, asking for JSON
    through ``text.format`` (``{"title": ...}``), which the fake server honours. Shell
    tool: ``exec_command`` ``{"cmd", "sandbox_permissions": "use_default" |
    "require_escalated", "justification", "workdir", "tty", "yield_time_ms", ...}``
    (``write_stdin`` feeds a running one). ``-a`` accepts only ``on-request``/``never``
    in this version; with ``on-request`` + ``workspace-write`` a command asks only when
    the model sets ``require_escalated``. Approval: "Would you like to run the following
    command?" (Reason: the justification) with ``› 1. Yes, proceed (y)``, ``2. ...
    don't ask again ... (p)``, ``3. No ... (esc)``; ``y`` approves at once. The output
    comes back as a ``function_call_output`` whose text starts with a header ("Chunk
    ID", "Wall time", "Process exited with code 0", "Output:"). Question:
    ``request_user_input`` ``{"questions": [{"id", "header", "question", "options":
    [{"label", "description"}]}]}``, offered outside Plan mode only with ``--enable
    default_mode_request_user_input``; shows "Question 1/1", Down + Enter answers;
    output ``{"answers": {"q0": {"answers": ["Blue"]}}}``. Quit: one Ctrl-C on an
    empty composer exits 0, printing the token usage and a ``codex resume`` hint.
    Startup warnings (F2 lists them): no system bubblewrap (it uses its bundled one),
    no model metadata for ``fake-model``.

OpenCode 1.18.33 (``opencode``, a Bun binary, alternate screen)
    Ready: slow, 4-9 s to the first frame. It sends OSC 10/11/4, XTVERSION, DECRQM,
    kitty keyboard and graphics queries, DA1 and CPR at once; only DA1/CPR are
    answered here, and answering the colour queries did not make it faster. The time
    goes into its start-up and a background ``npm install @opencode-ai/plugin``, which
    really reaches registry.npmjs.org when that is reachable unless
    ``npm_config_offline=true`` makes it fail from the empty cache. Keys typed before
    the first frame are lost. Marker: ``Ask anything``. Enter submits. Sends ``POST
    /v1/chat/completions`` (stream, ``stream_options.include_usage``, ``Authorization:
    Bearer``): first a title request without tools, then the turn (11 tools). Shell
    tool: ``bash`` ``{"command", "description"?, "timeout"?, "workdir"?}``. Approval
    (``"permission": {"bash": "ask"}``): "△ Permission required  # Shell command
    $ <cmd>" with "Allow once / Allow always / Reject", Allow once selected; Enter
    approves once. It appears ~3 s after the tool call has streamed. The result comes
    back as a ``role: "tool"`` message with the output (``"(no output)"`` when empty).
    Question: ``question`` ``{"questions": [{"question", "header", "options":
    [{"label", "description"}], "multiple"?}]}`` shows a chooser ("Type your own
    answer" added), also ~3-4 s late; Down + Enter answers; the result text is ``User
    has answered your questions: "Which colour?"="Blue". ...``. Quit: one Ctrl-C on an
    empty prompt exits 0, printing the session title and an ``opencode -s <id>`` hint.

Kilo Code CLI 7.7.7 (``kilo``, an OpenCode fork, a Bun binary)
    OpenCode's TUI and config under its own names (``~/.config/kilo/kilo.json``,
    ``KILO_*`` variables); the same ``Ask anything`` prompt, approval and question
    dialogs; Ctrl-C on an empty prompt does nothing, Ctrl-D quits with status 0.

Pi 1.6.0 (``pi`` from ``@earendil-works/pi-coding-agent``, Node ≥ 22.19, draws on the
alternate screen; 0.73.1 rendered inline)
    Ready: ~1-1.5 s; a logo with ``v1.6.0`` beside it (0.73.1: a header ``pi
    v0.73.1``), footer with the model id ``fake-model``. Each retry of a failed request
    is one request (0.73.1's OpenAI SDK retried a 503 twice more itself).
    Enter submits. Sends ``POST /v1/chat/completions`` here (``api:
    openai-completions`` in models.json; stream, ``max_completion_tokens``, 4 tools:
    read, bash, edit, write) and no side requests. Shell tool: ``bash`` ``{"command",
    "timeout"?}``; it runs at once (Pi has no approval and no ask tool); the result is
    a ``role: "tool"`` message with the output. Quit: Ctrl-D on an empty editor exits 0
    at once; two Ctrl-C exit only when close together (0.3 s apart did, 0.5 s did not).

Gemini CLI 0.61.0 (``gemini``, Node, relaunches itself as a child node process)
    Offline through ``GOOGLE_GEMINI_BASE_URL`` + ``GEMINI_API_KEY``; the settings must
    pick ``security.auth.selectedType`` (else a first-run auth dialog waits) and turn
    off folder trust, usage statistics and update checks. Ready: ~3-6 s; input box
    ``Type your message or @path/to/file``, footer with the model (``GEMINI_MODEL``;
    with the default "Auto" model each prompt first costs a side ``:generateContent``
    request to a router model). Enter submits. Sends ``POST
    /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`` (``x-goog-api-key``,
    the tools as ``functionDeclarations``). Shell tool: ``run_shell_command``
    ``{"command", "description"?, "dir_path"?, "is_background"?}``; a read-only command
    (``echo``) runs at once, a writing one asks: "Allow execution of [Shell]?" with
    ``● 1. Allow once`` selected (2. for this session, 3. no); Enter approves. The
    result comes back as a ``functionResponse`` part carrying the call's ``id``,
    ``{"output": ...}``. Quit: Ctrl-C on an empty prompt shows "Press Ctrl+C again to
    exit"; a second one exits 0.

Qwen Code 0.24.4 (``qwen``, Node; its package asks for Node 22 but runs on 20)
    Ready: 7-15 s here (loaded machine); a banner, then the input box ``> Type your
    message or @path/to/file``. It fires SessionStart 0.2-0.7 s before it draws that
    box, and keys typed in between are lost. Config: ``OPENAI_API_KEY`` /
    ``OPENAI_BASE_URL`` / ``OPENAI_MODEL`` select OpenAI-compatible auth without a
    dialog; the other switches live in the system settings file
    (``QWEN_CODE_SYSTEM_SETTINGS_PATH``): follow-up suggestions and the background
    memory agents off (each would ask the model *with tools* after a turn), no
    ripgrep (the npm tarball's ``rg`` lacks its execute bit), no auto-update or
    statistics. ``--approval-mode default``: 0.24.4 starts in *auto* mode, whose
    model-backed classifier (a request with one tool) judges tool calls. Enter
    submits. Sends ``POST /v1/chat/completions`` (stream, 20 tools). Shell tool:
    ``run_shell_command`` ``{"command", "description", ...}``. Approval: "Allow
    execution of: 'echo'?" with ``› 1. Yes, allow once``; Enter approves. The result
    is a ``role: "tool"`` message ("Command: ...", "Output: ..."). Question:
    ``ask_user_question`` (Claude's shape) shows a chooser ("Type something..." added);
    an Enter in the same read as a Down selects the option the Down left, so the
    test waits for ``❯ 2. Blue`` before Enter; the result text is ``User has provided
    the following answers: **Choice**: Blue``. A 403 fails the turn at once (5xx are
    retried 7 times). Quit: Ctrl-C on an empty prompt, then a second one, exits 0,
    printing a ``qwen --resume <id>`` hint.

GitHub Copilot CLI 1.0.102 (``copilot`` from ``@github/copilot``, a Node loader
starting the 197 MB native ``@github/copilot-linux-x64``)
    No GitHub login: ``COPILOT_OFFLINE=true`` with a BYOK provider
    (``COPILOT_PROVIDER_BASE_URL``/``_TYPE=openai``/``_API_KEY``, ``COPILOT_MODEL``;
    a model not in its catalog gets a one-line warning). Start-up: 5-15 s here to a
    "Confirm folder trust" dialog at every start (``1`` answers Yes for this session;
    ``trustedFolders`` in its settings did not skip it), then the prompt: ``❯`` between
    two rules over a footer with ``/ commands · ? help`` and the model (before the
    TUI takes commands the footer shows ``@ files · # issues``). Keys typed during
    start-up land in the prompt. Enter submits. Sends ``POST /v1/chat/completions``
    (stream, 18 tools). Shell tool: ``bash`` ``{"command", "description"}``; a
    read-only command (``echo``) runs unasked, a write asks: "Do you want to run this
    command?" with ``❯ 1. Yes`` selected; Enter approves. Question: ``ask_user``
    takes an elicitation form ``{"message", "requestedSchema": {"properties": {name:
    {"type": "string", "enum": [...]}}}}`` (the older ``question``/``choices`` shape is
    refused with an error result); Down + Enter picks; the result text is ``User
    responded: Blue``. A 403 fails the turn at once. Quit: Ctrl-D on an empty prompt
    exits 0, printing ``copilot --resume=<uuid>``.

Factory Droid 0.225.2 (``droid`` from ``@factory/cli`` 0.225.1 with
``@factory/cli-linux-x64`` 0.225.2: a 254 MB Bun binary, no Node at run time)
    No login: ``FACTORY_AIRGAP_ENABLED=true``, a custom model in its settings
    (``provider: generic-chat-completion-api``, ``baseUrl`` ending in ``/v1``) and
    ``FACTORY_API_BASE_URL`` at a closed port (a background sync calls
    api.factory.ai even in airgap mode). Start-up: about 2 s to its logo and an input
    box (``> Try "..."``) over a ``? for help`` footer; the project must be in the
    user settings' ``trustedFolders`` or a "Trust this folder?" dialog comes first.
    Sends ``POST /v1/chat/completions`` (stream; a title request without tools
    first). Shell tool: ``Execute`` ``{"command", "summary" (3-8 words, capitalised),
    "riskLevelReason", "riskLevel"}``; above its autonomy level ("Auto (Off)" by
    default) it asks "Command to approve" with "Yes, allow" selected; Enter approves.
    Question: ``AskUser`` takes one text (``1. [question] ...``, ``[topic]``,
    ``[option]`` lines); Down + Enter picks; the result text is ``1. [question] ...
    [answer] Blue``. A 403 fails the turn at once ("BYOK Error: 403 ..."). Quit:
    Ctrl-C on an empty prompt, then a second one.

Cline CLI 3.0.65 (``cline``: its bin is ``@cline/cli-linux-x64``'s 152 MB Bun binary,
no Node at run time)
    No login: an ``openai-compatible`` provider in
    ``<data>/settings/providers.json`` (its entry needs ``updatedAt``, or a provider
    picker shows), ``CLINE_DISABLE_CLINE_PASS_NOTICE=1`` (no start-up notices),
    ``CLINE_NO_AUTO_UPDATE=1``. Start-up: under a second to its logo and an input line
    (``❯ What can I do for you?``) between two rules over ``○ Plan ● Act (Tab)``.
    Sends ``POST /v1/chat/completions`` (stream, 25 tools, nothing else). Shell tool:
    ``run_commands`` ``{"commands": [...]}``; with ``--auto-approve false`` it asks
    "Cline needs permission" with ``[y] Approve [n] Deny``; ``y`` approves. Question:
    ``ask_question`` ``{"question", "options": [2-5 strings]}`` ("Cline is asking a
    question"); Down + Enter picks; the result is the chosen text. A 400 fails the
    turn at once. Quit: one Ctrl-C. Run without ptyvisor, ``--data-dir`` keeps it from
    starting its hub process (it would outlive the test).

All of them answer the fake server's SSE without complaint; none calls ``/models`` or
probes ``/``. Every TUI sends DA1 and/or CPR queries, answered here through
``HeadlessTerminal``'s ``on_reply``.
"""

# ruff: noqa: RUF002  (the TUIs draw their prompt marks with non-ASCII arrows)
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agents.clis.fake_model import FakeModelServer, Reply, Request
from tests.agents.clis.installed import AGENTS, agent_bin_dir, agent_command
from tests.agents.clis.offline import AgentTui, offline_env
from tests.agents.clis.ready import DIALOG_SETTLE, PROMPT_SHOWN, STARTUP_DIALOGS
from tests.agents.clis.scenarios import ENTER, KEYS

pytestmark = pytest.mark.anyio

COMMAND = "echo tool-ran > out.txt && cat out.txt"
"""Writes a file (so every agent with approvals asks) and prints what the model must see."""


@pytest.fixture(scope="session")
def agents_installed() -> Path:
    """Install the pinned CLIs once per session (fails, never skips, when it cannot)."""
    return agent_bin_dir()


async def submit(tui: AgentTui, text: str, enter_after: float = 0.0) -> None:
    """Type ``text``, wait until the input box shows it, then press Enter.

    Enter is sent on its own: sent with the text it could be taken as part of a paste.
    """
    tui.write(text)
    await tui.wait_for(text, what=f"typed prompt {text!r}")
    await asyncio.sleep(enter_after)
    tui.write(ENTER)


def scripted(since: int = 0) -> Callable[[Request], bool]:
    return lambda r: r.outcome == "scripted" and r.index >= since


async def model_request(
    server: FakeModelServer, tui: AgentTui, predicate: Callable[[Request], bool], what: str
) -> Request:
    """Wait for a request; a failure shows the agent's screen, which says why."""
    try:
        return await server.wait_for_request(predicate)
    except AssertionError as error:
        raise AssertionError(f"{what}: {error}\nscreen:\n{tui.screen}") from None


@pytest.mark.timeout(90, func_only=True)
@pytest.mark.parametrize("agent", list(AGENTS))
async def test_agent_tui_offline(agent: str, agents_installed: Path, tmp_path: Path) -> None:
    keys = KEYS[agent]
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    async with FakeModelServer() as server:
        env, extra = offline_env(agent, home, project, server.base_url)
        if agent == "cline":
            # Started without ptyvisor (which passes its own), Cline's first TUI on a data
            # folder starts a hub process that outlives it: its sandbox mode has none.
            extra = [*extra, f"--data-dir={home / '.cline' / 'data'}"]
        async with AgentTui(agent_command(agent) + extra, env=env, cwd=project) as tui:
            for dialog, key in STARTUP_DIALOGS.get(agent, ()):
                await tui.wait_for(dialog, wait=30, what=f"{agent}'s {dialog!r}")
                await asyncio.sleep(DIALOG_SETTLE)
                tui.write(key)
            await tui.wait_for(PROMPT_SHOWN[agent], wait=30, what=f"{agent} ready")
            started = time.monotonic() - tui.started_at

            # 1. A prompt reaches the model; the answer reaches the screen.
            server.script(Reply.text(f"Fake answer PONG-{agent}"))
            await submit(tui, "Say the magic word", keys.enter_after)
            first = await model_request(server, tui, scripted(), "the prompt")
            assert any("Say the magic word" in text for text in first.user_texts()), first.body
            await tui.wait_for(f"PONG-{agent}", what="the answer")
            await tui.settle(0.5)

            # 2. A shell command that needs approval; its output reaches the model.
            since = len(server.requests)
            server.script(
                Reply.shell(agent, COMMAND, description="Write the marker file"),
                Reply.text(f"Tool finished DONE-{agent}"),
            )
            await submit(tui, "Write the marker file", keys.enter_after)
            call = await model_request(server, tui, scripted(since), "the tool call")
            assert call.call_id is not None
            if keys.approval is not None:
                await tui.wait_for(keys.approval, what="the approval prompt")
                assert not (project / "out.txt").exists(), "ran before it was approved"
                await asyncio.sleep(keys.approve_after)
                tui.write(keys.approve)
            call_id = call.call_id
            answered = await model_request(
                server,
                tui,
                lambda r: scripted(call.index + 1)(r) and r.tool_result(call_id) is not None,
                "the tool result",
            )
            assert answered is next(r for r in server.scripted if r.index > call.index)
            result = answered.tool_result(call_id)
            assert result is not None and "tool-ran" in result.output, result
            assert (project / "out.txt").read_text().strip() == "tool-ran"
            await tui.wait_for(f"DONE-{agent}", what="the answer after the tool")
            await tui.settle(0.5)

            # 3. Quit cleanly.
            for key, then in keys.quit:
                tui.write(key)
                if then is not None:
                    await tui.wait_for(then, wait=10)
            assert await tui.wait_exit(15) == 0
        assert started < 30
    assert server.pending == 0, f"{server.pending} scripted replies left unused"
    server.assert_no_unexpected()
