// The one WebSocket to a server: connect, reconnect with backoff across a restart or
// a crash of the server, requests matched to replies by req_id. It knows the
// protocol's framing, not what a frontend does with it. Browsers and Node 22+ have
// a WebSocket of their own; an older Node passes one (the `ws` package's) in.

import { SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from "./protocol.js";

/**
 * @typedef {import("./protocol.js").ServerMessage} ServerMessage
 * @typedef {import("./protocol.js").Hello} Hello
 * @typedef {"connecting" | "open" | "down" | "unauthorised" | "closed"} ConnectionState
 * @typedef {new (url: string, protocols: string[]) => WebSocket} WebSocketClass
 *
 * @typedef {object} ConnectionOptions
 * @property {string} url the server's WebSocket endpoint (`ws://127.0.0.1:7733/ws`)
 * @property {string} token the access token (sent as a subprotocol, never in a URL)
 * @property {WebSocketClass} [WebSocket] default: the platform's own
 * @property {() => Promise<"ok" | "refused" | "unreachable">} [checkToken] asked after
 *   a failed handshake (a refused one looks like any other failure from a WebSocket):
 *   "refused" ends the retries in state `unauthorised`
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
   * @param {ConnectionOptions} options
   */
  constructor(options) {
    super();
    this.url = options.url;
    this.token = options.token;
    /** @type {WebSocketClass} */
    this._WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (this._WebSocket === undefined) {
      throw new TypeError("no WebSocket here: pass one (for example the `ws` package's)");
    }
    this._checkToken = options.checkToken ?? null;
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
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this._retryTimer = undefined;
    /**
     * The server said it is restarting (close code 1012): its sessions keep running
     * and the next server takes over in a moment.
     */
    this.restarting = false;
    this._closed = false;
  }

  start() {
    this._connect();
  }

  /** Close for good: no reconnecting; requests still waiting fail with ConnectionLost. */
  close() {
    this._closed = true;
    clearTimeout(this._retryTimer);
    const ws = this._ws;
    this._ws = null;
    this._failPending();
    ws?.close();
    this._setState("closed");
  }

  /**
   * Resolves once the connection is open (at once if it is).
   * @param {number} [ms] give up after this long: rejects with ConnectionLost
   * @returns {Promise<void>}
   */
  async opened(ms = CONNECT_TIMEOUT_MS) {
    if (this.state === "open") return;
    await this._opened(ms);
    // (`_opened` changed it meanwhile: the cast undoes the narrowing above.)
    if (/** @type {ConnectionState} */ (this.state) !== "open") throw new ConnectionLost();
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
    this._ws.send(/** @type {Uint8Array<ArrayBuffer>} */ (bytes));
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
    if (this._closed) return;
    this._setState("connecting");
    let ws;
    try {
      ws = new this._WebSocket(this.url, [SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX + this.token]);
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
      this._failPending();
      this._scheduleRetry(greeted);
    });
  }

  _failPending() {
    for (const pending of this._pending.values()) pending.reject(new ConnectionLost());
    this._pending.clear();
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
    if (!greeted && this._checkToken !== null) {
      const verdict = await this._checkToken();
      if (verdict === "refused") {
        this._setState("unauthorised");
        return;
      }
    }
    if (this._closed) return;
    // A restarting server is back within a second or two: keep the first tries quick.
    const first = this.restarting ? RESTART_RETRY_MS : BACKOFF_FIRST_MS;
    const base = Math.min(BACKOFF_MAX_MS, first * 2 ** this._attempt);
    const delay = base * (0.8 + Math.random() * 0.4); // jitter: tabs don't retry in step
    this._attempt += 1;
    this.retryAt = Date.now() + delay;
    this._setState("down");
    this._retryTimer = setTimeout(() => this._connect(), delay);
    // Node: a client waiting to reconnect does not keep the process alive by itself.
    /** @type {{unref?: () => void}} */ (this._retryTimer).unref?.();
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
