// A frontend's client of a ptyvisor server: typed requests over one Connection,
// the session list as it changes, and attachments to sessions' terminals.

import { Attachment } from "./attachment.js";
import { Connection } from "./connection.js";

/**
 * @typedef {import("./connection.js").ConnectionOptions} ConnectionOptions
 * @typedef {import("./attachment.js").AttachOptions} AttachOptions
 * @typedef {import("./protocol.js").ServerMessage} ServerMessage
 * @typedef {import("./protocol.js").SessionSummary} SessionSummary
 * @typedef {import("./protocol.js").Timeline} Timeline
 *
 * @typedef {object} SpawnOptions
 * @property {string[]} [argv] the program and its arguments (or `agent`)
 * @property {string} [agent] an agent by name (`claude-code`, `codex`, …)
 * @property {string} [cwd]
 * @property {Record<string, string>} [env] added to the program's environment
 * @property {string} [name]
 * @property {number} [cols]
 * @property {number} [rows]
 *
 * @typedef {object} AnswerOptions
 * @property {"allow" | "deny"} [behavior] an approval's answer
 * @property {string} [message] why, with a deny
 * @property {number} [suggestion] an approval's suggestion, by index
 * @property {Record<string, string | string[]>} [answers] a question's answers, by id
 */

/**
 * Events (CustomEvent), besides the connection's own (`state`, `open`, `message`):
 * `sessions` (detail: SessionSummary[], after `watchSessions`, on every change and
 * after every reconnect).
 */
export class PtyvisorClient extends EventTarget {
  /** @param {ConnectionOptions} options */
  constructor(options) {
    super();
    this.connection = new Connection(options);
    this._watching = false;
    this.connection.addEventListener("message", (event) => {
      const message = /** @type {CustomEvent<ServerMessage>} */ (event).detail;
      if (message.type === "sessions" && (message.req_id ?? null) === null) {
        this._emit("sessions", message.sessions);
      }
    });
    this.connection.addEventListener("open", () => {
      if (this._watching) this._watch();
    });
  }

  /**
   * Connect and wait until the server has said hello.
   * @param {ConnectionOptions} options
   * @returns {Promise<PtyvisorClient>}
   */
  static async connect(options) {
    const client = new PtyvisorClient(options);
    client.connection.start();
    await client.connection.opened();
    return client;
  }

  /** Close the connection for good. */
  close() {
    this.connection.close();
  }

  /**
   * @param {Record<string, unknown>} message
   * @returns {Promise<any>}
   */
  request(message) {
    return this.connection.request(message);
  }

  /**
   * The running sessions (`all`: and the past ones the records keep).
   * @param {{all?: boolean}} [options]
   * @returns {Promise<SessionSummary[]>}
   */
  async list(options = {}) {
    return (await this.request({ type: "list", all: options.all ?? false })).sessions;
  }

  /** Follow the session list: a `sessions` event on every change (and reconnect). */
  watchSessions() {
    this._watching = true;
    if (this.connection.state === "open") this._watch();
  }

  async _watch() {
    // The server then sends the list, and again on every change.
    await this.request({ type: "watch_sessions" }).catch(() => undefined);
  }

  /**
   * Start a program or an agent.
   * @param {SpawnOptions} options
   * @returns {Promise<SessionSummary>}
   */
  async spawn(options) {
    return (await this.request({ type: "spawn", ...options })).session;
  }

  /**
   * Start a past session's agent again where it left off.
   * @param {string} session
   * @returns {Promise<SessionSummary>}
   */
  async resume(session) {
    return (await this.request({ type: "resume", session })).session;
  }

  /**
   * Follow a session's terminal: see `Attachment` for its events. Attached at once
   * from a snapshot, and again from where it left off after every reconnect.
   * @param {string} session
   * @param {AttachOptions & {since?: number}} [options]
   * @returns {Attachment}
   */
  attach(session, options = {}) {
    const attachment = new Attachment(this.connection, session, options);
    if (this.connection.state === "open") attachment.attach(options.since ?? null);
    return attachment;
  }

  /**
   * Text or keys for a session, attached or not.
   * @param {string} session
   * @param {string} data
   */
  async input(session, data) {
    await this.request({ type: "input", session, data });
  }

  /**
   * Type `text` once the agent can take it, submit it, and resolve once the agent
   * itself reports that it took it (`prompt_accepted`); rejects with a typed error.
   * @param {string} session
   * @param {string} text
   */
  async prompt(session, text) {
    return this.request({ type: "prompt", session, text });
  }

  /**
   * Queue a message for the agent's next turn.
   * @param {string} session
   * @param {string} message
   */
  async send(session, message) {
    await this.request({ type: "send", session, message });
  }

  /**
   * Take back the queued message, unsent.
   * @param {string} session
   */
  async unsend(session) {
    await this.request({ type: "unsend", session });
  }

  /**
   * Named keys (`Enter`, `C-c`, `Up`, …) or text as the program's modes want them;
   * `paste`: as a bracketed paste where the program asked for one.
   * @param {string} session
   * @param {string[]} keys
   * @param {{literal?: boolean, paste?: boolean}} [options]
   */
  async sendKeys(session, keys, options = {}) {
    await this.request({ type: "send_keys", session, keys, ...options });
  }

  /**
   * The program's size. `claim` (default): this client now holds the size, as after
   * a user resized its window; false: only its layout moved, and the program follows
   * only if this client holds the size already.
   * @param {string} session
   * @param {number} cols
   * @param {number} rows
   * @param {{claim?: boolean}} [options]
   */
  async resize(session, cols, rows, options = {}) {
    await this.request({ type: "resize", session, cols, rows, claim: options.claim ?? true });
  }

  /**
   * Answer a session's pending interaction. The first answer from any client wins;
   * a later one is refused with a ServerError.
   * @param {string} session
   * @param {string} interaction its id
   * @param {AnswerOptions} answer
   */
  async answer(session, interaction, answer) {
    await this.request({ type: "answer", session, interaction, ...answer });
  }

  /**
   * Send a signal to the program (`INT`, `TERM`, …).
   * @param {string} session
   * @param {string} signal
   */
  async signal(session, signal) {
    await this.request({ type: "signal", session, signal });
  }

  /** @param {string} session */
  async kill(session) {
    await this.request({ type: "kill", session });
  }

  /** @param {string} session */
  async closeSession(session) {
    await this.request({ type: "close", session });
  }

  /**
   * The screen as text rows.
   * @param {string} session
   * @returns {Promise<{rows: string[], cursor_row: number, cursor_col: number}>}
   */
  async capture(session) {
    return this.request({ type: "capture", session });
  }

  /**
   * @param {string} session
   * @returns {Promise<Timeline>}
   */
  async timeline(session) {
    return this.request({ type: "timeline", session });
  }

  /**
   * @param {string} type
   * @param {unknown} detail
   */
  _emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}
