// Browser notifications for a session that starts needing input while this page
// is in the background. Permission is asked once, and only from a click on the
// sidebar's "Notify me" button: browsers ignore (and penalise) unprompted asks.

/**
 * @typedef {import("./store.js").SessionStore} SessionStore
 * @typedef {import("./store.js").StoreChange} StoreChange
 * @typedef {import("./client/protocol.js").SessionSummary} SessionSummary
 */

const ASKED_KEY = "ptyvisor.notifications-asked";

export class Notifier {
  /**
   * @param {SessionStore} store
   * @param {HTMLButtonElement} button the one place permission is asked from
   * @param {(id: string) => void} openSession called when a notification is clicked
   */
  constructor(store, button, openSession) {
    this.store = store;
    this.button = button;
    this.openSession = openSession;
    this.supported = "Notification" in window;
    button.addEventListener("click", () => this._ask());
    this._syncButton();
    store.addEventListener("change", (event) =>
      this._changed(/** @type {CustomEvent<StoreChange>} */ (event).detail),
    );
  }

  async _ask() {
    localStorage.setItem(ASKED_KEY, "1");
    try {
      await Notification.requestPermission();
    } finally {
      this._syncButton();
    }
  }

  _syncButton() {
    this.button.hidden =
      !this.supported ||
      Notification.permission !== "default" ||
      localStorage.getItem(ASKED_KEY) === "1";
  }

  /** @param {StoreChange} change */
  _changed(change) {
    // The first list is the state we found, not news.
    if (change.initial || !this.supported || Notification.permission !== "granted") return;
    if (!document.hidden) return;
    for (const session of this.store.sessions.values()) {
      const before = change.previous.get(session.id);
      if (startedNeedingInput(before, session)) this._notify(session);
    }
  }

  /** @param {SessionSummary} session */
  _notify(session) {
    const pending = session.pending_interaction;
    const question = pending?.questions?.[0]?.question;
    const body = pending ? pending.title || question || pending.tool || "" : "";
    const notification = new Notification(`${session.name} needs input`, {
      body,
      tag: `ptyvisor-${session.id}`,
    });
    notification.addEventListener("click", () => {
      window.focus();
      this.openSession(session.id);
      notification.close();
    });
  }
}

/**
 * @param {SessionSummary | undefined} before
 * @param {SessionSummary} after
 * @returns {boolean}
 */
function startedNeedingInput(before, after) {
  if (after.activity.phase !== "needs_input") return false;
  if (before === undefined) return true; // a new session, straight into needs_input
  if (before.activity.phase !== "needs_input") return true;
  // Still needs_input, but a different question or approval.
  const was = before.pending_interaction?.id;
  const now = after.pending_interaction?.id;
  return now !== undefined && now !== was;
}
