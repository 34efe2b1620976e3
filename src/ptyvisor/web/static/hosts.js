// The other machines' sessions, beside this page's own: every ssh:// context the
// server relays (GET /api/contexts), and this machine when the page shows another.
// Each host has a connection of its own (`/contexts/NAME`, or `/ws` for this machine)
// that only watches its session list; opening one of its sessions opens the page on
// that host (`?context=NAME`), where everything works as it does locally, relayed.

import { pageConnection } from "./auth.js";
import { h } from "./dom.js";
import { badgeOf } from "./format.js";

/**
 * @typedef {import("./client/protocol.js").ServerMessage} ServerMessage
 * @typedef {import("./client/protocol.js").SessionSummary} SessionSummary
 * @typedef {{name: string, url: string}} Context
 */

/** What the page calls the machine its server runs on. */
export const THIS_MACHINE = "this machine";

/**
 * The host a page shows (`?context=NAME`), or null for this machine's server.
 * @returns {string | null}
 */
export function pageContext() {
  const name = new URL(location.href).searchParams.get("context");
  return name === null || name === "" ? null : name;
}

/**
 * The page's address on `context` (null: this machine).
 * @param {string | null} context
 */
export function pageOn(context) {
  const url = new URL(location.href);
  if (context === null) url.searchParams.delete("context");
  else url.searchParams.set("context", context);
  return url.pathname + url.search;
}

export class OtherHosts {
  /**
   * @param {HTMLElement} section where the hosts' lists go
   * @param {string} token this server's token (the relay's too)
   * @param {string | null} current the host this page shows
   * @param {(context: string | null, id: string) => void} open
   */
  constructor(section, token, current, open) {
    this.section = section;
    this.token = token;
    this.current = current;
    this.open = open;
  }

  async start() {
    /** @type {Context[]} */
    let contexts = [];
    try {
      const response = await fetch("/api/contexts", {
        headers: { Authorization: `Bearer ${this.token}` },
        cache: "no-store",
      });
      if (response.ok) contexts = await response.json();
    } catch {
      // No list of contexts: this page's host only.
    }
    /** @type {(string | null)[]} */
    const others = contexts.map((context) => context.name).filter((n) => n !== this.current);
    if (this.current !== null) others.unshift(null);
    for (const name of others) this._watch(name);
    this.section.hidden = others.length === 0;
  }

  /** @param {string | null} name */
  _watch(name) {
    const label = name ?? THIS_MACHINE;
    const note = h("p", { class: "muted host-note", text: "connecting…" });
    const list = /** @type {HTMLUListElement} */ (h("ul", { class: "host-sessions" }));
    this.section.append(
      h("div", { class: "host", dataset: { host: label } }, h("h3", { text: `On ${label}` }), note, list),
    );
    const connection = pageConnection(this.token, name);
    connection.addEventListener("open", () => {
      note.textContent = "";
      connection.send({ type: "watch_sessions" });
    });
    connection.addEventListener("state", () => {
      if (connection.state !== "open") note.textContent = `${label}: not reachable now (retrying)`;
    });
    connection.addEventListener("message", (event) => {
      const message = /** @type {CustomEvent<ServerMessage>} */ (event).detail;
      if (message.type === "sessions" && (message.req_id === undefined || message.req_id === null)) {
        this._show(name, list, note, message.sessions);
      }
    });
    connection.start();
  }

  /**
   * @param {string | null} name
   * @param {HTMLUListElement} list
   * @param {HTMLElement} note
   * @param {SessionSummary[]} sessions
   */
  _show(name, list, note, sessions) {
    note.textContent = sessions.length === 0 ? "no sessions" : "";
    list.replaceChildren(
      ...sessions.map((session) => {
        const badge = badgeOf(session);
        return h(
          "li",
          {},
          h(
            "button",
            {
              type: "button",
              class: "host-session",
              onclick: () => this.open(name, session.id),
            },
            h("span", { class: "session-name", text: session.name ?? session.id }),
            h("span", { class: "badge", dataset: { phase: badge.phase }, text: badge.label }),
          ),
        );
      }),
    );
  }
}
