// ptyvisor activity extension for Pi (pi --extension <this file>).
//
// Runs inside Pi's interactive TUI and reports activity frames to the
// session's terminal. Silent outside a ptyvisor session; handlers never
// throw. Load it for the TUI only: in JSON/RPC modes stdout is machine-read.
// See README.md beside this file for the mapping.
//
// The turn's outcome (waiting / failed) is published at the *settled*
// boundary, not at a premature agent_end: Pi can retry a failed request or
// compact an overflowing context and carry on after agent_end. Newer Pi emits
// `agent_settled` for exactly that boundary (1.x); Pi versions without it
// (0.73.1) get an equivalent below, built from the events an extension can see.
//
// Pi 1.x also says when it blocks on a dialog another extension opened (a
// permission gate's confirm, a select): `ui_prompt_start` / `ui_prompt_end`.
// That is needs_input while it lasts; changes meanwhile are kept and shown
// once the last dialog closes.
//
// oh-my-pi (a Pi fork, 18.x) has neither agent_settled nor ui_prompt_*, but says
// more about the same things: `agent_end.willContinue` (a retry or continuation
// is already scheduled), `auto_retry_start` / `auto_retry_end` around its
// retries, and `tool_approval_requested` / `tool_approval_resolved` around its
// approval prompt, which count as a dialog here.

import { promptDigest } from "../shared/digest.mjs";
import { agentName, writeFrame } from "../shared/frame.mjs";
import { clip, MAX_ID, text } from "../shared/mask.mjs";

const AGENT = agentName("pi"); // or "oh-my-pi", a Pi fork that loads this extension too

// Pi's own test for errors it retries (AgentSession._isRetryableError, 0.73.1;
// only used where agent_settled is missing).
const RETRYABLE =
  /overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay/i;
// Pi's default retry settings (retry.maxRetries, retry.baseDelayMs); a user
// who changed them only shifts when a failure shows, never what it says.
const MAX_RETRIES = 3;
const BASE_DELAY_MS = 2000;
const SLACK_MS = 3000; // beyond Pi's retry delay before a retry counts as not coming
const COMPACTION_GRACE_MS = 1000; // agent_end -> session_before_compact is immediate
const COMPACTION_MS = 180_000; // an LLM summary; a failed compaction sends no event
const AFTER_COMPACTION_MS = 3000; // Pi continues 100 ms after an overflow compaction

const isText = (value) => typeof value === "string" && value.length > 0;

function lastAssistant(messages) {
  if (!Array.isArray(messages)) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i] && messages[i].role === "assistant") return messages[i];
  }
  return undefined;
}

/** The turn's outcome from its last assistant message: [phase, reason]. */
function outcomeOf(message) {
  if (message?.stopReason === "error") {
    return ["failed", isText(message.errorMessage) ? message.errorMessage : "error"];
  }
  if (message?.stopReason === "aborted") return ["waiting", "interrupted"];
  return ["waiting", undefined];
}

function sessionIdOf(ctx) {
  try {
    const id = ctx?.sessionManager?.getSessionId?.();
    return isText(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Wrap a handler so nothing it does can reach Pi; it always resolves to undefined. */
const safe =
  (handler) =>
  async (...args) => {
    try {
      handler(...args);
    } catch {
      // never break Pi
    }
    return undefined; // before-events treat a returned object as a decision
  };

export default function ptyvisor(pi) {
  let nativeId;
  let outcome = ["waiting", undefined]; // of the last agent_end
  let hasSettled = false; // this Pi emits agent_settled
  let retries = 0; // consecutive retryable failures, as Pi counts them
  let timer;
  let dialogs = 0; // blocking dialogs open (Pi 1.x ui_prompt_*, oh-my-pi approvals)
  let announced = false; // this run's retries were announced (oh-my-pi auto_retry_*)
  let underneath = ["waiting", undefined]; // what shows again when they close

  let submitted; // the digest of the prompt the next run starts from (input)

  const write = (phase, reason) => {
    const payload = { type: "activity", phase, at: Date.now(), agent: AGENT };
    if (isText(reason)) payload.reason = text(reason);
    if (phase === "working" && submitted !== undefined) {
      payload.prompt = submitted; // a client that typed it learns it was taken
      submitted = undefined;
    }
    if (isText(nativeId)) payload.native_session_id = clip(nativeId, MAX_ID);
    writeFrame(payload);
  };

  /** Report a phase; while a dialog is open only `stopped` shows, the rest waits. */
  const publish = (phase, reason) => {
    underneath = [phase, reason];
    if (dialogs === 0 || phase === "stopped") write(phase, reason);
  };

  const dialogOpened = (reason) => {
    dialogs += 1;
    write("needs_input", reason);
  };

  /** The last dialog closed: what changed meanwhile, or what was there before. */
  const dialogClosed = () => {
    if (dialogs === 0) return;
    dialogs -= 1;
    if (dialogs === 0) write(...underneath);
  };

  const cancel = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };

  /** Publish the recorded outcome unless the agent starts again within `ms`. */
  const settleAfter = (ms) => {
    cancel();
    timer = setTimeout(() => {
      timer = undefined;
      publish(...outcome);
    }, ms);
    timer.unref?.(); // never keep Pi alive on our account
  };

  pi.on(
    "session_start",
    safe((_event, ctx) => {
      cancel();
      nativeId = sessionIdOf(ctx) ?? nativeId;
      publish("waiting");
    }),
  );

  pi.on(
    "input",
    safe((event) => {
      // What the user submitted; a slash command starts no run and is replaced by
      // the next input.
      submitted = isText(event?.text) && event.text.trim() ? promptDigest(event.text) : undefined;
    }),
  );

  pi.on(
    "before_agent_start",
    safe(() => {
      announced = false; // a new prompt: its own run
    }),
  );

  pi.on(
    "agent_start",
    safe((_event, ctx) => {
      cancel();
      nativeId = sessionIdOf(ctx) ?? nativeId;
      publish("working");
    }),
  );

  pi.on(
    "message_end",
    safe((event) => {
      // Pi resets its retry counter on any assistant reply that is not an error.
      if (event?.message?.role === "assistant" && event.message.stopReason !== "error") retries = 0;
    }),
  );

  pi.on(
    "agent_end",
    safe((event) => {
      const message = lastAssistant(event?.messages);
      outcome = outcomeOf(message);
      if (hasSettled) return; // agent_settled publishes it
      if (event?.willRetry === true || event?.willContinue === true) {
        settleAfter(COMPACTION_MS); // newer Pi says a retry follows; agent_start cancels this
        return;
      }
      if (outcome[0] !== "failed" || announced) {
        // Nothing can follow a success; after announced retries, Pi has said it
        // continues (willContinue above) whenever it does.
        announced = false;
        publish(...outcome);
        return;
      }
      if (event?.willRetry === undefined && RETRYABLE.test(message?.errorMessage ?? "")) {
        retries += 1;
        if (retries <= MAX_RETRIES) {
          // Pi waits baseDelay * 2^(n-1), then continues: agent_start cancels this.
          settleAfter(BASE_DELAY_MS * 2 ** (retries - 1) + SLACK_MS);
          return;
        }
        retries = 0;
        publish(...outcome);
        return;
      }
      // A context overflow is compacted and retried: session_before_compact
      // arrives right after this handler returns and extends the wait.
      settleAfter(COMPACTION_GRACE_MS);
    }),
  );

  pi.on(
    "session_before_compact",
    safe(() => {
      if (timer !== undefined) settleAfter(COMPACTION_MS);
    }),
  );

  pi.on(
    "session_compact",
    safe(() => {
      if (timer !== undefined) settleAfter(AFTER_COMPACTION_MS);
    }),
  );

  // oh-my-pi: its retries, announced (before the agent_end of the failed attempt).
  pi.on(
    "auto_retry_start",
    safe(() => {
      announced = true;
      cancel();
    }),
  );

  pi.on(
    "auto_retry_end",
    safe(() => {
      announced = true; // a failure's agent_end follows: publish it at once
    }),
  );

  // oh-my-pi's approval prompt (its own select): a dialog like any other.
  pi.on(
    "tool_approval_requested",
    safe((event) => {
      dialogOpened(`approval: ${isText(event?.toolName) ? event.toolName : "a tool"}`);
    }),
  );
  pi.on("tool_approval_resolved", safe(dialogClosed));

  // Newer Pi: the boundary after retries and compaction.
  pi.on(
    "agent_settled",
    safe(() => {
      hasSettled = true;
      cancel();
      publish(...outcome);
    }),
  );

  pi.on(
    "ui_prompt_start",
    safe((event) => {
      const kind = isText(event?.kind) ? event.kind : "dialog";
      dialogOpened(isText(event?.title) ? event.title : kind);
    }),
  );
  pi.on("ui_prompt_end", safe(dialogClosed));

  pi.on(
    "session_shutdown",
    safe((event) => {
      cancel();
      // Only quitting ends the agent; reload / new / resume / fork replace the
      // session and a new session_start follows.
      if (event?.reason === undefined || event.reason === "quit") publish("stopped");
    }),
  );
}
