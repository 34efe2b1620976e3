// The open session's activity timeline (Starting 2s → Ready 5m → Working 40s …),
// as the server recorded it: fetched with `timeline`, fetched again when the
// session's activity changes. The page never reconstructs it from events.

import { byId, h } from "./dom.js";
import { duration, phaseLabel } from "./format.js";

/**
 * @typedef {import("./client/protocol.js").Timeline} TimelineMessage
 * @typedef {import("./client/protocol.js").Transition} Transition
 * @typedef {(message: Record<string, unknown>) => Promise<any>} Request
 */

/** Transitions the collapsed strip shows; the list under it shows them all. */
const STRIP_LENGTH = 5;

export class TimelineView {
  /** @param {Request} request */
  constructor(request) {
    this.request = request;
    this.details = /** @type {HTMLDetailsElement} */ (byId("timeline"));
    this.strip = byId("timeline-strip");
    this.list = byId("timeline-list");
    /** @type {string | null} */
    this.sessionId = null;
    /** @type {TimelineMessage | null} */
    this.timeline = null;
    this._generation = 0;
    /** @type {number | undefined} */
    this._refetch = undefined;
  }

  /**
   * Show `id`'s timeline (null: none).
   * @param {string | null} id
   */
  show(id) {
    if (id === this.sessionId) return;
    this.sessionId = id;
    this.timeline = null;
    this.details.open = false;
    this._render();
    if (id !== null) void this._fetch();
  }

  /** The session's activity or process changed: the server has a new transition. */
  changed() {
    if (this.sessionId === null) return;
    clearTimeout(this._refetch);
    this._refetch = setTimeout(() => void this._fetch(), 150);
  }

  /** Durations of the current phase grow: called every second or so. */
  tick() {
    if (this.timeline !== null) this._render();
  }

  async _fetch() {
    const id = this.sessionId;
    const generation = ++this._generation;
    if (id === null) return;
    try {
      /** @type {TimelineMessage} */
      const reply = await this.request({ type: "timeline", session: id });
      if (generation !== this._generation || id !== this.sessionId) return;
      this.timeline = reply;
    } catch {
      if (generation !== this._generation) return;
      this.timeline = null; // older server, or no records: nothing to show
    }
    this._render();
  }

  _render() {
    const timeline = this.timeline;
    const transitions = timeline?.transitions ?? [];
    // Always one line, so the header keeps its height (and the terminal its size).
    this.details.hidden = this.sessionId === null;
    if (transitions.length === 0) {
      this.strip.replaceChildren("No activity recorded yet");
      this.list.replaceChildren();
      return;
    }
    const end = timeline?.ended_at ?? Date.now();
    /** @param {number} i */
    const lasted = (i) =>
      (i + 1 < transitions.length ? transitions[i + 1].at : end) - transitions[i].at;
    const first = Math.max(0, transitions.length - STRIP_LENGTH);
    const strip = transitions.slice(first).map((t, k) => {
      const i = first + k;
      return h(
        "span",
        { class: "timeline-step", dataset: { phase: t.phase } },
        `${phaseLabel(t.phase)} ${duration(lasted(i))}`,
      );
    });
    const arrows = strip.flatMap((step, i) =>
      i === 0 ? [step] : [h("span", { class: "timeline-arrow", "aria-hidden": "true" }, "→"), step],
    );
    this.strip.replaceChildren(...(first > 0 ? ["… "] : []), ...arrows);
    this.list.replaceChildren(
      ...transitions.map((t, i) =>
        h(
          "li",
          { class: "timeline-item" },
          h("time", { datetime: new Date(t.at).toISOString() }, clock(t.at)),
          h("span", { class: `badge phase-${t.phase}` }, phaseLabel(t.phase)),
          h("span", { class: "timeline-duration" }, duration(lasted(i))),
          h("span", { class: "timeline-reason" }, t.reason ?? ""),
        ),
      ),
    );
  }
}

/**
 * "14:03:07" in the browser's time zone.
 * @param {number} ms
 */
function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}
