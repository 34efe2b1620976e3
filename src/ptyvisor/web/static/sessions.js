// The sidebar: one entry per session with its activity badge, time in state and
// exit status. Entries are kept and updated in place (never rebuilt), so focus,
// hover and scroll position survive the list pushes that arrive every second.

import { h } from "./dom.js";
import { badgeOf, commandText, duration, exitText, reasonText } from "./format.js";

/**
 * @typedef {import("./client/protocol.js").SessionSummary} SessionSummary
 * @typedef {import("./store.js").SessionStore} SessionStore
 *
 * @typedef {object} Entry
 * @property {HTMLLIElement} item
 * @property {HTMLButtonElement} button
 * @property {HTMLElement} name
 * @property {HTMLElement} badge
 * @property {HTMLElement} command
 * @property {HTMLElement} time
 * @property {HTMLElement} detail
 */

/**
 * Events: `select` (detail: {id: string}) when the user opens an entry.
 */
export class SessionList extends EventTarget {
  /**
   * @param {HTMLUListElement} list
   * @param {HTMLElement} emptyNote shown while there are no sessions
   * @param {SessionStore} store
   */
  constructor(list, emptyNote, store) {
    super();
    this.list = list;
    this.emptyNote = emptyNote;
    this.store = store;
    /** @type {Map<string, Entry>} */
    this.entries = new Map();
    /** @type {string | null} */
    this.selected = null;
    store.addEventListener("change", () => this.render());
    list.addEventListener("keydown", (event) => this._arrowKeys(event));
    // Time in state ticks by itself; one timer for all entries.
    setInterval(() => this._tick(), 1000);
  }

  render() {
    const sessions = this.store.ordered();
    const seen = new Set();
    sessions.forEach((session, index) => {
      seen.add(session.id);
      let entry = this.entries.get(session.id);
      if (entry === undefined) {
        entry = this._create(session.id);
        this.entries.set(session.id, entry);
      }
      // Keep DOM order equal to model order without re-inserting unchanged nodes
      // (re-inserting a focused button would drop its focus).
      const atIndex = this.list.children[index];
      if (atIndex !== entry.item) this.list.insertBefore(entry.item, atIndex ?? null);
      this._fill(entry, session, index);
    });
    for (const [id, entry] of this.entries) {
      if (!seen.has(id)) {
        entry.item.remove();
        this.entries.delete(id);
      }
    }
    this.emptyNote.hidden = sessions.length > 0;
  }

  /** @param {string | null} id */
  select(id) {
    this.selected = id;
    for (const [entryId, entry] of this.entries) {
      if (entryId === id) entry.button.setAttribute("aria-current", "true");
      else entry.button.removeAttribute("aria-current");
    }
  }

  /** Move keyboard focus into the list: the selected entry, else the first. */
  focus() {
    const entry =
      (this.selected !== null && this.entries.get(this.selected)) ||
      this.entries.get(this.store.ordered()[0]?.id ?? "");
    if (entry) entry.button.focus();
    return Boolean(entry);
  }

  /**
   * @param {string} id
   * @returns {Entry}
   */
  _create(id) {
    const name = h("span", { class: "session-name" });
    const badge = h("span", { class: "badge" });
    const command = h("span", { class: "session-command" });
    const time = h("span", { class: "session-time" });
    const detail = h("span", { class: "session-detail" });
    const button = /** @type {HTMLButtonElement} */ (
      h(
        "button",
        { type: "button", class: "session-button", dataset: { session: id } },
        h("span", { class: "session-row" }, name, badge),
        h("span", { class: "session-row" }, command, time),
        h("span", { class: "session-row" }, detail),
      )
    );
    button.addEventListener("click", () => {
      this.dispatchEvent(new CustomEvent("select", { detail: { id } }));
    });
    const item = /** @type {HTMLLIElement} */ (h("li", { class: "session" }, button));
    return { item, button, name, badge, command, time, detail };
  }

  /**
   * @param {Entry} entry
   * @param {SessionSummary} session
   * @param {number} index
   */
  _fill(entry, session, index) {
    const badge = badgeOf(session);
    setText(entry.name, session.name);
    entry.name.title = session.name;
    setText(entry.badge, badge.label);
    entry.badge.className = `badge phase-${badge.phase}`;
    entry.badge.title = badge.title;
    const command = commandText(session);
    setText(entry.command, command);
    entry.command.title = `${command}\nin ${session.cwd}`;
    entry.time.dataset.since = String(session.activity.since);
    setText(entry.time, duration(Date.now() - session.activity.since));
    const parts = [];
    const exit = exitText(session);
    const reason = reasonText(session);
    // "killed" beside "killed by SIGHUP" says nothing new.
    if (reason && !(exit && exit.startsWith(reason))) parts.push(reason);
    if (exit) parts.push(exit);
    if (session.pending_interaction) parts.push(pendingText(session));
    if (session.queued_message) parts.push("message queued");
    if (session.clients > 0) {
      parts.push(session.clients === 1 ? "1 viewer" : `${session.clients} viewers`);
    }
    // A non-breaking space keeps the row's height when there is nothing to say.
    setText(entry.detail, parts.join(" · ") || "\u00a0");
    entry.detail.title = session.activity.reason ?? "";
    entry.item.dataset.phase = badge.phase;
    if (index < 9) entry.button.setAttribute("aria-keyshortcuts", `Alt+${index + 1}`);
    else entry.button.removeAttribute("aria-keyshortcuts");
  }

  _tick() {
    const now = Date.now();
    for (const entry of this.entries.values()) {
      const since = Number(entry.time.dataset.since);
      if (since) setText(entry.time, duration(now - since));
    }
  }

  /**
   * Up/Down/Home/End move between entries, as in a list box.
   * @param {KeyboardEvent} event
   */
  _arrowKeys(event) {
    const buttons = [...this.list.querySelectorAll("button.session-button")];
    const at = buttons.indexOf(/** @type {Element} */ (document.activeElement));
    if (at < 0) return;
    const target = {
      ArrowDown: Math.min(at + 1, buttons.length - 1),
      ArrowUp: Math.max(at - 1, 0),
      Home: 0,
      End: buttons.length - 1,
    }[event.key];
    if (target === undefined) return;
    event.preventDefault();
    /** @type {HTMLElement} */ (buttons[target]).focus();
  }
}

/**
 * @param {SessionSummary} session
 * @returns {string}
 */
function pendingText(session) {
  const pending = session.pending_interaction;
  if (!pending) return "";
  if (pending.kind === "question") return "question waiting";
  return pending.tool ? `approve ${pending.tool}?` : "approval waiting";
}

/**
 * Assign only when different: fewer mutations, no flicker for assistive tech.
 * @param {HTMLElement} el
 * @param {string} text
 */
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}
