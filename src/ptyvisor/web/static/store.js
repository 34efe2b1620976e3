// The page's model of every session: the latest `sessions` push, patched by the
// attached session's own `activity` / `process` / `resized` events (they can
// arrive before the next list push). Views render from here and nowhere else.

/**
 * @typedef {import("./client/protocol.js").SessionSummary} SessionSummary
 *
 * @typedef {object} StoreChange
 * @property {Map<string, SessionSummary>} previous the sessions before the change
 * @property {boolean} initial true for the first list after the page loaded
 */

export class SessionStore extends EventTarget {
  constructor() {
    super();
    /** @type {Map<string, SessionSummary>} */
    this.sessions = new Map();
    this.loaded = false;
  }

  /**
   * Sessions in a stable order: oldest first, so entries never move under the pointer.
   * @returns {SessionSummary[]}
   */
  ordered() {
    return [...this.sessions.values()].sort(
      (a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id),
    );
  }

  /** @param {string | null} id */
  get(id) {
    return id === null ? undefined : this.sessions.get(id);
  }

  /**
   * A full list from the session-list stream.
   * @param {SessionSummary[]} list
   */
  replaceAll(list) {
    const previous = this.sessions;
    this.sessions = new Map(list.map((s) => [s.id, s]));
    const initial = !this.loaded;
    this.loaded = true;
    this._changed({ previous, initial });
  }

  /**
   * Part of one session changed (an event of the attached session).
   * @param {string} id
   * @param {Partial<SessionSummary>} fields
   */
  patch(id, fields) {
    const current = this.sessions.get(id);
    if (current === undefined) return;
    const previous = new Map(this.sessions);
    this.sessions.set(id, { ...current, ...fields });
    this._changed({ previous, initial: false });
  }

  /**
   * Add a session we just spawned, before the list push that will carry it.
   * @param {SessionSummary} session
   */
  add(session) {
    if (this.sessions.has(session.id)) return;
    const previous = new Map(this.sessions);
    this.sessions.set(session.id, session);
    this._changed({ previous, initial: false });
  }

  /** @param {string} id */
  remove(id) {
    if (!this.sessions.has(id)) return;
    const previous = new Map(this.sessions);
    this.sessions.delete(id);
    this._changed({ previous, initial: false });
  }

  /** How many sessions are blocked on the user. */
  needingInput() {
    let count = 0;
    for (const s of this.sessions.values()) if (s.activity.phase === "needs_input") count += 1;
    return count;
  }

  /** @param {StoreChange} change */
  _changed(change) {
    this.dispatchEvent(new CustomEvent("change", { detail: change }));
  }
}
