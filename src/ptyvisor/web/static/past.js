// Past sessions (the server's records: exited, or from before a restart or reboot)
// and starting one again: `resume` — an agent on its own conversation, a plain
// command only when asked ("Run again", rerun).

import { h } from "./dom.js";
import { commandText, exitText } from "./format.js";

/** @typedef {import("./client/protocol.js").SessionSummary} SessionSummary */

/**
 * What resuming `session` means, for a button: "Resume" an agent that reported its
 * conversation, "Run again" anything else (a plain command, an agent that never said).
 * @param {SessionSummary} session
 * @returns {{label: string, rerun: boolean}}
 */
export function resumeAction(session) {
  const conversation = Boolean(session.agent && session.activity.native_session_id);
  return conversation ? { label: "Resume", rerun: false } : { label: "Run again", rerun: true };
}

/**
 * How a session ended, in words: "exit 3", "killed by SIGTERM", "lost".
 * @param {SessionSummary} session
 * @returns {string}
 */
export function endText(session) {
  const known = session.process.exit_code != null || session.process.signal != null;
  switch (session.process.ended) {
    case "lost":
      return "ended while no server ran";
    case "server":
      return known ? `stopped with the server (${exitText(session)})` : "stopped with the server";
    case "killed":
      return known ? `killed (${exitText(session)})` : "killed";
    default:
      return exitText(session);
  }
}

export class PastSessions {
  /**
   * @param {HTMLDetailsElement} details a <details> whose opening loads the list
   * @param {HTMLUListElement} list
   * @param {(message: Record<string, unknown>) => Promise<any>} request
   * @param {(session: SessionSummary) => void} resume what a Resume button does
   */
  constructor(details, list, request, resume) {
    this._details = details;
    this._list = list;
    this._request = request;
    this._resume = resume;
    details.addEventListener("toggle", () => {
      if (details.open) void this.refresh();
    });
  }

  /** Reload the list, if it is open (after the live list changed, say). */
  async refresh() {
    if (!this._details.open) return;
    /** @type {{sessions: SessionSummary[]}} */
    const reply = await this._request({ type: "list", all: true });
    const past = reply.sessions.filter((session) => session.past);
    const entries = past.map((session) => this._entry(session));
    if (!entries.length) entries.push(h("li", { class: "muted empty-note", text: "None kept." }));
    this._list.replaceChildren(...entries);
  }

  /** @param {SessionSummary} session */
  _entry(session) {
    const action = resumeAction(session);
    return h(
      "li",
      { class: "past-entry", dataset: { id: session.id } },
      h("span", { class: "session-name", text: session.name }),
      h("span", { class: "session-detail", text: `${commandText(session)} · ${endText(session)}` }),
      h("button", {
        type: "button",
        class: "button small",
        text: action.label,
        onclick: () => this._resume(session),
      }),
    );
  }
}
