// One client's view of one session's terminal stream, exact across reconnects.
//
// The stream is addressed by seq (the count of output bytes since the session
// began): our position is the seq of the last `attached` or `snapshot` plus the
// binary bytes received since. After a reconnect — the network, a restart of the
// server, a crash of it — attaching again with `since` = position makes the server
// send exactly the bytes we missed (or a snapshot, if its log no longer holds them):
// nothing is lost or shown twice.

import { shown } from "./replay.js";

/**
 * @typedef {import("./connection.js").Connection} Connection
 * @typedef {import("./protocol.js").ServerMessage} ServerMessage
 * @typedef {import("./protocol.js").Attached} Attached
 * @typedef {import("./protocol.js").Snapshot} Snapshot
 * @typedef {import("./protocol.js").TermSize} TermSize
 *
 * @typedef {object} AttachOptions
 * @property {boolean} [viewOnly] watch only: never type or resize
 * @property {boolean} [answersQueries] this client's terminal answers the program's
 *   queries (a terminal emulator does; a script reading output does not)
 * @property {() => TermSize | null} [size] the size this client would like, asked at
 *   every attach (it gets it if nobody else holds the size)
 * @property {boolean} [scrollback] a snapshot includes the scrollback (default true)
 */

/** Bytes typed before the attach completes that are kept to send once it has. */
const EARLY_INPUT_LIMIT = 16 * 1024;

/**
 * Events (CustomEvent):
 * - `attached` (detail: Attached): caught up, by exact replay or from a snapshot;
 * - `snapshot` (detail: Snapshot): draw this screen afresh (after an attach that
 *   could not replay exactly, or when the server redrew us because we fell behind);
 *   the stream continues right after it;
 * - `output` (detail: {seq: number, bytes: Uint8Array}): bytes for the terminal, in
 *   order; replayed queries are removed (they were answered when live);
 * - `resized` (detail: TermSize): the program's size from here on in the stream;
 * - `failed` (detail: {code: string, message: string}): the attach was refused (an
 *   `unknown_session`: the session is gone).
 */
export class Attachment extends EventTarget {
  /**
   * @param {Connection} connection
   * @param {string} sessionId
   * @param {AttachOptions} [options]
   */
  constructor(connection, sessionId, options = {}) {
    super();
    this.connection = connection;
    this.sessionId = sessionId;
    this.viewOnly = options.viewOnly ?? false;
    this._answersQueries = options.answersQueries ?? true;
    this._size = options.size ?? (() => null);
    this._scrollback = options.scrollback ?? true;
    /** Seq of the next byte expected; null until the first `attached`. */
    this.position = /** @type {number | null} */ (null);
    /** Output before this seq is replay: its queries were answered when live. */
    this.liveSeq = 0;
    /** req_id of an attach whose reply has not come: output until then is not ours. */
    this.pendingAttach = /** @type {string | null} */ (null);
    this.attached = false;
    /** How the last attach caught up: "exact" replay or a "snapshot" redraw. */
    this.lastReplay = /** @type {"exact" | "snapshot" | null} */ (null);
    /** How many times the server redrew us from a snapshot because we fell behind. */
    this.lagged = 0;
    this._early = new Uint8Array(0);
    this._closed = false;
    /** @param {Event} event */
    this._onMessage = (event) => this._message(/** @type {CustomEvent} */ (event).detail);
    /** @param {Event} event */
    this._onBinary = (event) => this._output(/** @type {CustomEvent} */ (event).detail);
    this._onOpen = () => this.attach(this.position);
    this._onState = () => {
      if (connection.state !== "open") {
        this.attached = false;
        this.pendingAttach = null;
      }
    };
    connection.addEventListener("message", this._onMessage);
    connection.addEventListener("binary", this._onBinary);
    connection.addEventListener("open", this._onOpen);
    connection.addEventListener("state", this._onState);
  }

  /**
   * Attach (again): from `since` if given (exact replay when the server still holds
   * it), else from a snapshot of the current screen. Done by itself after every
   * reconnect, from where the stream left off.
   * @param {number | null} [since]
   * @returns {boolean} false when not connected (it happens once the connection is back)
   */
  attach(since = null) {
    if (this._closed) return false;
    this.attached = false;
    /** @type {Record<string, unknown>} */
    const message = {
      type: "attach",
      session: this.sessionId,
      answers_queries: this._answersQueries,
      view_only: this.viewOnly,
      scrollback: this._scrollback,
    };
    if (since !== null) message.since = since;
    const wanted = this.viewOnly ? null : this._size();
    if (wanted !== null) {
      message.cols = wanted.cols;
      message.rows = wanted.rows;
    }
    this.pendingAttach = this.connection.sendTagged(message);
    return this.pendingAttach !== null;
  }

  /**
   * Watch only (true) or take part (false): attached again the new way.
   * @param {boolean} viewOnly
   */
  setViewOnly(viewOnly) {
    if (viewOnly === this.viewOnly) return;
    this.viewOnly = viewOnly;
    this.attach(this.position);
  }

  /**
   * Keys for the program. Typed before the attach completes (just opened, or while
   * reconnecting), they are kept and sent once it has (up to 16 KiB).
   * @param {Uint8Array | string} data
   */
  input(data) {
    if (this.viewOnly || this._closed) return;
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    if (this.attached && this.connection.sendBinary(bytes)) return;
    if (this._early.length + bytes.length <= EARLY_INPUT_LIMIT) {
      const joined = new Uint8Array(this._early.length + bytes.length);
      joined.set(this._early);
      joined.set(bytes, this._early.length);
      this._early = joined;
    }
  }

  /** Stop following the session (the connection stays open). */
  close() {
    if (this._closed) return;
    if (this.attached) this.connection.send({ type: "detach" });
    this._closed = true;
    this.attached = false;
    this.pendingAttach = null;
    this.connection.removeEventListener("message", this._onMessage);
    this.connection.removeEventListener("binary", this._onBinary);
    this.connection.removeEventListener("open", this._onOpen);
    this.connection.removeEventListener("state", this._onState);
  }

  /** @param {ServerMessage} message */
  _message(message) {
    switch (message.type) {
      case "attached": {
        if (message.req_id !== this.pendingAttach) return;
        this.pendingAttach = null;
        this.attached = true;
        this.lastReplay = message.replay;
        this.liveSeq = message.live_seq;
        const early = this._early;
        this._early = new Uint8Array(0);
        if (message.replay === "snapshot" && message.snapshot) {
          this.position = message.snapshot.seq;
          this._emit("attached", message);
          this._emit("snapshot", message.snapshot);
        } else {
          this.position = message.seq;
          this._emit("attached", message);
        }
        if (early.length > 0) this.input(early);
        break;
      }
      case "snapshot":
        // `lagging`: we fell too far behind; the stream continues after this screen.
        if (message.reason === "lagging" && this.attached) {
          if (message.snapshot.session.id === this.sessionId) {
            this.lagged += 1;
            this.position = message.snapshot.seq;
            this._emit("snapshot", message.snapshot);
          }
        }
        break;
      case "resized":
        if (message.session === this.sessionId) this._emit("resized", message.size);
        break;
      case "error":
        if (message.req_id !== null && message.req_id === this.pendingAttach) {
          this.pendingAttach = null;
          this._emit("failed", { code: message.code, message: message.message });
        }
        break;
      default:
        break;
    }
  }

  /** @param {ArrayBuffer} data */
  _output(data) {
    // Bytes before our `attached` belong to a previous attach (another session).
    if (!this.attached || this.pendingAttach !== null) return;
    const bytes = new Uint8Array(data);
    const seq = this.position;
    if (seq === null) return;
    this.position = seq + bytes.length;
    this._emit("output", { seq, bytes: shown(seq, bytes, this.liveSeq) });
  }

  /**
   * @param {string} type
   * @param {unknown} detail
   */
  _emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}
