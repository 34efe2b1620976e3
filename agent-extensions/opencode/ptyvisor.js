// ptyvisor activity plugin for OpenCode.
//
// Runs inside the OpenCode process (under Bun) and turns OpenCode's bus events
// into ptyvisor activity frames written to the session's terminal. Silent
// outside a ptyvisor session, and it never throws into OpenCode: every
// handler is wrapped. See README.md beside this file for the mapping.
//
// OpenCode calls every export of a plugin module as a plugin, so this module
// exports the plugin function and nothing else.

import { promptDigest } from "../shared/digest.mjs";
import { agentName, writeFrame } from "../shared/frame.mjs";
import { boundInteraction, clip, MAX_ID, text } from "../shared/mask.mjs";

const AGENT = agentName("opencode"); // or "kilo": Kilo Code CLI is an OpenCode fork

// Short titles for approval cards, by OpenCode permission name.
const TITLES = {
  bash: "Run a shell command",
  edit: "Edit a file",
  read: "Read a file",
  glob: "Find files",
  grep: "Search file contents",
  list: "List a directory",
  webfetch: "Fetch a URL",
  websearch: "Search the web",
  codesearch: "Search code",
  external_directory: "Access a directory outside the project",
  task: "Start a subagent",
  skill: "Load a skill",
  lsp: "Query the language server",
  todowrite: "Update the todo list",
  doom_loop: "Repeat the same tool call again",
};

// permission.asked metadata keys shown as rows, in this order: [key, label, monospace].
const METADATA_ROWS = [
  ["command", "Command", true],
  ["description", "Description", false],
  ["filepath", "File", true],
  ["path", "Path", true],
  ["pattern", "Pattern", true],
  ["include", "Include", true],
  ["url", "URL", true],
  ["query", "Query", false],
  ["directories", "Directories", true],
  ["tool", "Tool", true],
  ["input", "Input", true],
  ["diff", "Diff", true],
];

/** Metadata values as row text: strings as they are, lists one per line, objects as JSON. */
function rowValue(value) {
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join("\n");
  return value;
}

const isText = (value) => typeof value === "string" && value.length > 0;

export default async function PtyvisorPlugin() {
  // Sessions OpenCode created as children of another (subagents, via `task`),
  // child id -> parent id. Their status and errors are not the user's turn.
  const parents = new Map();
  // Main session id -> the turn end to publish at its next idle, recorded at
  // session.error (OpenCode publishes the error, then sets the session idle).
  const turnEnds = new Map();
  // Pending interaction id -> the main session whose turn it belongs to.
  const pending = new Map();
  // Last activity published, to skip repeats. "working" is always sent again:
  // OpenCode says "busy" on every step, and ptyvisor may have ended the turn
  // meanwhile on its own (an Esc it saw typed), so a repeat is news to it.
  let last = "";

  const rootOf = (sessionId) => {
    let id = sessionId;
    for (let hops = 0; parents.has(id) && hops < 64; hops++) id = parents.get(id);
    return id;
  };

  const activity = (phase, sessionId, reason, prompt) => {
    const payload = { type: "activity", phase, at: Date.now(), agent: AGENT };
    if (isText(reason)) payload.reason = text(reason);
    if (isText(sessionId)) payload.native_session_id = clip(sessionId, MAX_ID);
    if (isText(prompt)) payload.prompt = prompt;
    const key = JSON.stringify([phase, payload.reason, payload.native_session_id]);
    if (key === last && phase !== "working") return;
    last = key;
    writeFrame(payload);
  };

  const interaction = (fields, sessionId) => {
    const bounded = boundInteraction({ ...fields, agent: AGENT, created_at: Date.now() });
    pending.set(bounded.id, rootOf(sessionId));
    last = "";
    writeFrame({ type: "interaction", at: Date.now(), interaction: bounded });
  };

  const cleared = (id, reason) => {
    const key = clip(id, MAX_ID);
    if (!pending.delete(key)) return; // never asked in this process, or already cleared
    last = "";
    writeFrame({ type: "interaction_cleared", at: Date.now(), id: key, reason });
  };

  /** The turn of `sessionId` ended: whatever it was still asking is moot. */
  const clearTurn = (sessionId) => {
    for (const [id, root] of pending) if (root === sessionId) cleared(id, "turn_end");
  };

  const learnSession = (info) => {
    if (info && isText(info.id) && isText(info.parentID)) parents.set(info.id, info.parentID);
  };

  const handlers = {
    // A new main session reports nothing: a prompt's turn is reported by the TUI
    // plugin (ptyvisor-tui.js) at Enter and confirmed by chat.message below; a
    // "waiting" here would come between the two.
    "session.created": (p) => learnSession(p.info ?? {}),
    "session.updated": (p) => learnSession(p.info),
    "session.status": (p) => {
      const id = p.sessionID;
      if (!isText(id) || parents.has(id)) return;
      const status = p.status ?? {};
      if (status.type === "busy" || status.type === "retry") {
        turnEnds.delete(id); // a new step (or compaction after an overflow) supersedes it
        activity("working", id, status.type === "retry" ? status.message : undefined);
      } else if (status.type === "idle") {
        // Kept until the next busy: OpenCode reports idle twice after an error
        // (once from the failed step, once from the session's runner).
        clearTurn(id);
        const end = turnEnds.get(id) ?? { phase: "waiting" };
        activity(end.phase, id, end.reason);
      }
    },
    "session.error": (p) => {
      const id = p.sessionID;
      // No session: a plugin or config error, not a turn. Children: their
      // failure reaches the parent as a failed tool call.
      if (!isText(id) || parents.has(id)) return;
      const error = p.error ?? {};
      const name = isText(error.name) ? error.name : "";
      const message = isText(error.data?.message) ? error.data.message : "";
      if (name === "MessageAbortedError") {
        turnEnds.set(id, { phase: "waiting", reason: "interrupted" });
        return;
      }
      const reason = message || name || "unknown error";
      turnEnds.set(id, { phase: "failed", reason });
      // A context overflow may be followed by compaction and more work (a new
      // "busy"), so that one waits for the idle; any other error is final now.
      if (name !== "ContextOverflowError") {
        clearTurn(id);
        activity("failed", id, reason);
      }
    },
    // Subagents' requests are surfaced too: the main turn is blocked on them.
    "permission.asked": (p) => {
      if (!isText(p.id)) return;
      const metadata = p.metadata && typeof p.metadata === "object" ? p.metadata : {};
      const permission = isText(p.permission) ? p.permission : "permission";
      const patterns = Array.isArray(p.patterns) ? p.patterns.filter(isText) : [];
      const always = Array.isArray(p.always) ? p.always.filter(isText) : [];
      const rows = METADATA_ROWS.filter(([key]) => metadata[key] !== undefined && metadata[key] !== "").map(
        ([key, label, monospace]) => ({ label, value: rowValue(metadata[key]), monospace }),
      );
      // The command is already shown; patterns add something only when they differ.
      if (patterns.length > 0 && !(patterns.length === 1 && patterns[0] === metadata.command)) {
        rows.push({ label: "Patterns", value: patterns.join("\n"), monospace: true });
      }
      interaction(
        {
          id: p.id,
          kind: "approval",
          tool: permission,
          title: TITLES[permission] ?? `Allow ${permission}`,
          rows,
          // OpenCode's "always" answer approves these patterns for the rest of the session.
          suggestions: always.length > 0 ? [`Always allow ${always.join(", ")}`] : [],
          accepts_free_form: false,
        },
        p.sessionID,
      );
    },
    "permission.replied": (p) => cleared(p.requestID, p.reply === "reject" ? "rejected" : "answered"),
    "question.asked": (p) => {
      if (!isText(p.id)) return;
      const questions = Array.isArray(p.questions) ? p.questions.filter((q) => q && typeof q === "object") : [];
      interaction(
        {
          id: p.id,
          kind: "question",
          tool: "question",
          questions: questions.map((q, index) => ({
            id: `q${index}`,
            header: q.header,
            question: q.question,
            options: q.options,
            multi_select: q.multiple === true,
          })),
          // OpenCode offers "type your own answer" unless a question sets custom: false.
          accepts_free_form: questions.some((q) => q.custom !== false),
        },
        p.sessionID,
      );
    },
    "question.replied": (p) => cleared(p.requestID, "answered"),
    "question.rejected": (p) => cleared(p.requestID, "rejected"),
  };

  // Nothing is reported as the plugin loads: that is seconds before the TUI draws
  // its prompt and reads keys. ptyvisor itself calls the session Ready when its
  // headless terminal shows OpenCode's prompt (agents.READY_SCREEN).

  return {
    // The user's prompt, as OpenCode stores it: the turn has begun. Its "busy"
    // status comes only once the model and tools are resolved (seconds on a first
    // prompt). Subagents' prompts (the task tool) are their parent's turn already.
    "chat.message": async (input, output) => {
      try {
        const id = input?.sessionID;
        if (!isText(id) || parents.has(id)) return;
        turnEnds.delete(id);
        // The prompt's digest: a client that typed it learns it was taken.
        const parts = Array.isArray(output?.parts) ? output.parts : [];
        const typed = parts
          .filter((part) => part?.type === "text" && isText(part.text) && !part.synthetic)
          .map((part) => part.text)
          .join("\n");
        activity("working", id, undefined, typed ? promptDigest(typed) : undefined);
      } catch {
        // never break OpenCode
      }
    },
    event: async ({ event }) => {
      try {
        const handler = event && Object.hasOwn(handlers, event.type) ? handlers[event.type] : undefined;
        if (handler) handler(event.properties ?? {});
      } catch {
        // never break OpenCode
      }
    },
  };
}
