// The one WebSocket to the server: connect, reconnect with backoff, requests
// matched to replies by req_id. It knows the protocol's framing, not the page.

import { SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from "./protocol.js";
import { checkToken } from "./auth.js";

/**
 * @typedef {import("./protocol.js").ServerMessage} ServerMessage
 * @typedef {import("./protocol.js").Hello} Hello
 * @typedef {"connecting" | "open" | "down" | "unauthorised"} ConnectionState
 */

/** An `error` message in reply to a request. */
export class ServerError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   */
  constructor(code, message) {
    super(message);
    this.name = "ServerError";
    this.code = code;
  }
}

/** The connection dropped (or was not up) before the reply came. */
export class ConnectionLost extends Error {
  constructor() {
    super("not connected to the server");
    this.name = "ConnectionLost";
  }
}

const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 8000;
const RESTART_RETRY_MS = 100;
/** WebSocket close code the server sends before a planned restart. */
const SERVICE_RESTART = 1012;
const CONNECT_TIMEOUT_MS = 10000;

/**
 * Events (all CustomEvent): `state` (detail: ConnectionState), `open` (detail: Hello,
 * after every (re)connect), `message` (detail: ServerMessage, for every text
 * message, before the request it answers settles), `binary` (detail: ArrayBuffer).
 */
export class Connection extends EventTarget {
  /**
   * @param {string} token
   * @param {string | null} [context] a context's name: its server, through this one
   */
  constructor(token, context = null) {
    super();
    this.token = token;
    this.context = context;
    /** @type {ConnectionState} */
    this.state = "connecting";
    /** @type {Hello | null} */
    this.hello = null;
    /** When the next attempt starts (ms since epoch), while `down`. */
    this.retryAt = 0;
    /** @type {WebSocket | null} */
    this._ws = null;
    this._attempt = 0;
    this._nextReqId = 1;
    /** @type {Map<string, {resolve: (m: ServerMessage) => void, reject: (e: Error) => void}>} */
    this._pending = new Map();
    /** @type {number | undefined} */
    this._retryTimer = undefined;
    /**
     * The server said it is restarting (close code 1012): its sessions keep running
     * and the next server takes over in a moment.
     */
    this.restarting = false;
  }

  get url() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const path = this.context === null ? "/ws" : `/contexts/${encodeURIComponent(this.context)}`;
    return `${scheme}${location.host}${path}`;
  }

  start() {
    this._connect();
  }

  /** Skip the rest of the backoff wait (the banner's "Retry now"). */
  retryNow() {
    if (this.state !== "down") return;
    clearTimeout(this._retryTimer);
    this._connect();
  }

  /**
   * Send a message without waiting for a reply.
   * @param {object} message
   * @returns {boolean} false when not connected
   */
  send(message) {
    if (this._ws === null || this.state !== "open") return false;
    this._ws.send(JSON.stringify(message));
    return true;
  }

  /**
   * Terminal input for the attached session.
   * @param {Uint8Array} bytes
   * @returns {boolean}
   */
  sendBinary(bytes) {
    if (this._ws === null || this.state !== "open") return false;
    this._ws.send(bytes);
    return true;
  }

  /**
   * Send a request and wait for the reply that echoes its req_id. A request made
   * while the connection is still being made (a click right after the page loads,
   * or during a reconnect) waits for it rather than failing at once; it is sent
   * only once it is open, so it can never be sent twice.
   * @param {Record<string, unknown>} message
   * @returns {Promise<ServerMessage>} rejects with ServerError or ConnectionLost
   */
  async request(message) {
    if (this.state === "connecting") await this._opened(CONNECT_TIMEOUT_MS);
    const reqId = `p${this._nextReqId++}`;
    return new Promise((resolve, reject) => {
      if (!this.send({ ...message, req_id: reqId })) {
        reject(new ConnectionLost());
        return;
      }
      this._pending.set(reqId, { resolve, reject });
    });
  }

  /**
   * Resolves when the connection is open, or when it is given up (it went down or
   * `ms` passed): the caller then finds it not open and fails as usual.
   * @param {number} ms
   * @returns {Promise<void>}
   */
  _opened(ms) {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.removeEventListener("state", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.addEventListener("state", done);
    });
  }

  /**
   * Like `request`, returning the req_id at once so that the caller can recognise
   * the reply among the `message` events (attach needs that: binary output that
   * follows its reply must be handled in order, not after a promise settles).
   * @param {Record<string, unknown>} message
   * @returns {string | null} null when not connected
   */
  sendTagged(message) {
    const reqId = `p${this._nextReqId++}`;
    return this.send({ ...message, req_id: reqId }) ? reqId : null;
  }

  _connect() {
    this._setState("connecting");
    let ws;
    try {
      ws = new WebSocket(this.url, [SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX + this.token]);
    } catch {
      this._scheduleRetry(false);
      return;
    }
    ws.binaryType = "arraybuffer";
    this._ws = ws;
    let greeted = false;
    // A connection that hangs half-open (a proxy that accepts and forwards nothing)
    // would otherwise leave the page "connecting" for ever.
    const timeout = setTimeout(() => ws.close(), CONNECT_TIMEOUT_MS);
    ws.addEventListener("message", (event) => {
      if (typeof event.data !== "string") {
        this._emit("binary", event.data);
        return;
      }
      /** @type {ServerMessage} */
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        console.warn("ptyvisor: ignoring a text message that is not JSON");
        return;
      }
      if (message.type === "hello") {
        greeted = true;
        clearTimeout(timeout);
        this.hello = message;
        this.restarting = false;
        this._attempt = 0;
        this._setState("open");
        this._emit("open", message);
        return;
      }
      this._emit("message", message);
      this._settle(message);
    });
    ws.addEventListener("close", (event) => {
      clearTimeout(timeout);
      if (this._ws !== ws) return;
      this._ws = null;
      if (greeted) this.restarting = event.code === SERVICE_RESTART;
      for (const pending of this._pending.values()) pending.reject(new ConnectionLost());
      this._pending.clear();
      this._scheduleRetry(greeted);
    });
  }

  /** @param {ServerMessage} message */
  _settle(message) {
    if (!("req_id" in message) || message.req_id === null || message.req_id === undefined) {
      return;
    }
    const key = String(message.req_id);
    const pending = this._pending.get(key);
    if (pending === undefined) return;
    this._pending.delete(key);
    if (message.type === "error") pending.reject(new ServerError(message.code, message.message));
    else pending.resolve(message);
  }

  /** @param {boolean} greeted whether the dropped connection had got as far as hello */
  async _scheduleRetry(greeted) {
    // A WebSocket handshake refused with 401 looks like any other failure from
    // here, so ask the auth endpoint before trying again: a token that stopped
    // working (server restarted with a new one) should say so, not retry for ever.
    if (!greeted) {
      const verdict = await checkToken(this.token);
      if (verdict === "refused") {
        this._setState("unauthorised");
        return;
      }
    }
    // A restarting server is back within a second or two: keep the first tries quick.
    const first = this.restarting ? RESTART_RETRY_MS : BACKOFF_FIRST_MS;
    const base = Math.min(BACKOFF_MAX_MS, first * 2 ** this._attempt);
    const delay = base * (0.8 + Math.random() * 0.4); // jitter: tabs don't retry in step
    this._attempt += 1;
    this.retryAt = Date.now() + delay;
    this._setState("down");
    this._retryTimer = setTimeout(() => this._connect(), delay);
  }

  /** @param {ConnectionState} state */
  _setState(state) {
    if (this.state === state) return;
    this.state = state;
    this._emit("state", state);
  }

  /**
   * @param {string} type
   * @param {unknown} detail
   */
  _emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}
