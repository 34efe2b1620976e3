// The forms: start a session, confirm kill/close, queue a message for a working
// agent. Dialogs are native <dialog> elements opened with showModal(): focus moves
// in and is trapped there, Esc cancels, and focus returns where it was.

import { byId, h, replaceChildren } from "./dom.js";
import { ServerError } from "./client/connection.js";
import { MAX_MESSAGE_CHARS } from "./client/protocol.js";
import { splitCommand } from "./format.js";

/**
 * @typedef {import("./client/connection.js").Connection} Connection
 * @typedef {import("./store.js").SessionStore} SessionStore
 * @typedef {import("./client/protocol.js").SessionSummary} SessionSummary
 * @typedef {import("./client/protocol.js").Spawned} Spawned
 * @typedef {import("./client/protocol.js").TermSize} TermSize
 */

/**
 * @param {unknown} error
 * @returns {string}
 */
export function describeError(error) {
  if (error instanceof ServerError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * "New session": an agent (from hello.agents) or a plain command, a working
 * directory, a name, and perhaps a git worktree of its own (spawn's `worktree`).
 * Events: `spawned` (detail: SessionSummary).
 */
export class NewSessionDialog extends EventTarget {
  /**
   * @param {Connection} connection
   * @param {() => TermSize} sizeForNewSession the pane's size, so the program starts right
   */
  constructor(connection, sizeForNewSession) {
    super();
    this.connection = connection;
    this.sizeForNewSession = sizeForNewSession;
    this.dialog = /** @type {HTMLDialogElement} */ (byId("new-session-dialog"));
    this.form = /** @type {HTMLFormElement} */ (byId("new-session-form"));
    this.kind = /** @type {HTMLSelectElement} */ (byId("new-session-kind"));
    this.command = /** @type {HTMLInputElement} */ (byId("new-session-command"));
    this.commandLabel = byId("new-session-command-label");
    this.commandHint = byId("new-session-command-hint");
    this.cwd = /** @type {HTMLInputElement} */ (byId("new-session-cwd"));
    this.name = /** @type {HTMLInputElement} */ (byId("new-session-name"));
    this.worktree = /** @type {HTMLInputElement} */ (byId("new-session-worktree"));
    this.worktreeName = /** @type {HTMLInputElement} */ (byId("new-session-worktree-name"));
    this.error = byId("new-session-error");
    this.submit = /** @type {HTMLButtonElement} */ (byId("new-session-submit"));
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this._spawn();
    });
    byId("new-session-cancel").addEventListener("click", () => this.dialog.close());
    this.kind.addEventListener("change", () => this._kindChanged());
    this.setAgents([]);
  }

  /**
   * The agents the server can start (hello.agents).
   * @param {string[]} agents
   */
  setAgents(agents) {
    const current = this.kind.value;
    replaceChildren(
      this.kind,
      h("option", { value: "", text: "Command" }),
      agents.map((agent) => h("option", { value: agent, text: `Agent: ${agent}` })),
    );
    if ([...this.kind.options].some((o) => o.value === current)) this.kind.value = current;
    this._kindChanged();
  }

  open() {
    this.error.textContent = "";
    this.submit.disabled = false;
    this.dialog.showModal();
    this.kind.focus();
  }

  _kindChanged() {
    const agent = this.kind.value;
    this.commandLabel.textContent = agent ? `Arguments for ${agent} (optional)` : "Command";
    this.command.required = !agent;
    this.command.placeholder = agent ? "" : "e.g. bash, or sh -c 'make test'";
    this.commandHint.textContent =
      "Split into words like a shell does ('quotes' and \"quotes\" work) but nothing " +
      "is expanded: use sh -c '…' for pipes and variables.";
  }

  async _spawn() {
    this.error.textContent = "";
    const agent = this.kind.value;
    /** @type {string[]} */
    let argv;
    try {
      argv = splitCommand(this.command.value);
    } catch (error) {
      this._fail(`The command line has an ${describeError(error)}.`, this.command);
      return;
    }
    if (!agent && argv.length === 0) {
      this._fail("Give a command to run, or pick an agent.", this.command);
      return;
    }
    const size = this.sizeForNewSession();
    /** @type {Record<string, unknown>} */
    const request = { type: "spawn", argv, cols: size.cols, rows: size.rows };
    if (agent) request.agent = agent;
    if (this.cwd.value.trim()) request.cwd = this.cwd.value.trim();
    if (this.name.value.trim()) request.name = this.name.value.trim();
    if (this.worktree.checked) request.worktree = this.worktreeName.value.trim();
    this.submit.disabled = true;
    try {
      const reply = /** @type {Spawned} */ (await this.connection.request(request));
      this.dialog.close();
      this.command.value = "";
      this.name.value = "";
      this.worktree.checked = false;
      this.worktreeName.value = "";
      this.dispatchEvent(new CustomEvent("spawned", { detail: reply.session }));
    } catch (error) {
      this._fail(`Could not start it: ${describeError(error)}`, this.command);
    } finally {
      this.submit.disabled = false;
    }
  }

  /**
   * @param {string} text
   * @param {HTMLElement} focus
   */
  _fail(text, focus) {
    this.error.textContent = text;
    focus.focus();
  }
}

/** An in-page confirmation (not window.confirm: tests and keyboards can drive it). */
export class ConfirmDialog {
  constructor() {
    this.dialog = /** @type {HTMLDialogElement} */ (byId("confirm-dialog"));
    this.title = byId("confirm-title");
    this.text = byId("confirm-text");
    this.ok = /** @type {HTMLButtonElement} */ (byId("confirm-ok"));
    this.cancel = /** @type {HTMLButtonElement} */ (byId("confirm-cancel"));
    /** @type {((ok: boolean) => void) | null} */
    this._resolve = null;
    this.ok.addEventListener("click", () => this.dialog.close("ok"));
    this.cancel.addEventListener("click", () => this.dialog.close("cancel"));
    this.dialog.addEventListener("close", () => {
      this._resolve?.(this.dialog.returnValue === "ok");
      this._resolve = null;
    });
  }

  /**
   * @param {string} title
   * @param {string} text
   * @param {string} action the confirming button's label
   * @returns {Promise<boolean>}
   */
  ask(title, text, action) {
    this.title.textContent = title;
    this.text.textContent = text;
    this.ok.textContent = action;
    this.dialog.returnValue = "";
    this.dialog.showModal();
    // The harmless choice has the focus: Enter right away does not destroy anything.
    this.cancel.focus();
    return new Promise((resolve) => {
      this._resolve = resolve;
    });
  }
}

/**
 * The queued-message box: while an agent works on a turn, one message waits for
 * its next Stop; a newer one replaces it, Remove deletes it.
 */
export class QueueBox {
  /**
   * @param {Connection} connection
   * @param {SessionStore} store
   */
  constructor(connection, store) {
    this.connection = connection;
    this.store = store;
    /** @type {string | null} */
    this.sessionId = null;
    this.root = byId("queue-box");
    this.form = /** @type {HTMLFormElement} */ (byId("queue-form"));
    this.input = /** @type {HTMLTextAreaElement} */ (byId("queue-input"));
    this.current = byId("queue-current");
    this.currentText = byId("queue-current-text");
    this.remove = /** @type {HTMLButtonElement} */ (byId("queue-remove"));
    this.status = byId("queue-status");
    this.input.maxLength = MAX_MESSAGE_CHARS;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this._send();
    });
    // Enter sends, Shift+Enter is a new line — as in chat boxes.
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.form.requestSubmit();
      }
    });
    this.remove.addEventListener("click", () => this._unsend());
    store.addEventListener("change", () => this.render());
  }

  /** @param {string | null} id */
  show(id) {
    if (id !== this.sessionId) {
      this.input.value = "";
      this.status.textContent = "";
    }
    this.sessionId = id;
    this.render();
  }

  render() {
    const session = this.store.get(this.sessionId);
    const queued = session?.queued_message ?? null;
    // Only an agent working on a turn takes a message (the server says
    // not_running otherwise), and only one whose extension can hand it over
    // (takes_messages; not_supported otherwise); a queued one stays visible
    // until it is delivered.
    const working =
      Boolean(session?.agent) &&
      session?.takes_messages !== false &&
      session?.activity.phase === "working" &&
      session?.process.state !== "exited";
    this.root.hidden = !session || (!working && queued === null);
    this.form.hidden = !working;
    this.current.hidden = queued === null;
    if (queued !== null && this.currentText.textContent !== queued) {
      this.currentText.textContent = queued;
    }
  }

  async _send() {
    const text = this.input.value;
    if (!text.trim() || this.sessionId === null) {
      this.status.textContent = "Write a message first.";
      return;
    }
    this.status.textContent = "Queueing…";
    try {
      await this.connection.request({ type: "send", session: this.sessionId, message: text });
      this.input.value = "";
      this.status.textContent = "Queued: the agent gets it when it finishes this step.";
    } catch (error) {
      this.status.textContent =
        error instanceof ServerError && error.code === "not_running"
          ? "Not queued: the agent is not working on a turn any more."
          : `Not queued: ${describeError(error)}`;
    }
  }

  async _unsend() {
    if (this.sessionId === null) return;
    try {
      await this.connection.request({ type: "unsend", session: this.sessionId });
      this.status.textContent = "Removed.";
    } catch (error) {
      this.status.textContent = `Not removed: ${describeError(error)}`;
    }
  }
}
