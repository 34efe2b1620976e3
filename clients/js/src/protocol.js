// The public wire protocol's types: wire.d.ts is generated from the protocol's JSON
// Schema (`ptyvisor schema --typescript`; a test keeps it current), and named here
// for the JSDoc of the client and the page.

/**
 * @typedef {import("./wire.js").ActivityPhase} Phase
 * @typedef {import("./wire.js").Activity} Activity
 * @typedef {import("./wire.js").ProcessState} ProcessState
 * @typedef {import("./wire.js").TermSize} TermSize
 * @typedef {import("./wire.js").Row} Row
 * @typedef {import("./wire.js").Option} Option
 * @typedef {import("./wire.js").Question} Question
 * @typedef {import("./wire.js").Interaction} Interaction
 * @typedef {import("./wire.js").SessionSummary} SessionSummary
 * @typedef {import("./wire.js").Snapshot} Snapshot
 * @typedef {import("./wire.js").Hello} Hello
 * @typedef {import("./wire.js").Sessions} SessionsMessage
 * @typedef {import("./wire.js").Spawned} Spawned
 * @typedef {import("./wire.js").Attached} Attached
 * @typedef {import("./wire.js").SnapshotMessage} SnapshotMessage
 * @typedef {import("./wire.js").ActivityChanged} ActivityChanged
 * @typedef {import("./wire.js").ProcessChanged} ProcessChanged
 * @typedef {import("./wire.js").Resized} Resized
 * @typedef {import("./wire.js").SessionClosed} Closed
 * @typedef {import("./wire.js").Ok} Ok
 * @typedef {import("./wire.js").Error} ErrorMessage
 * @typedef {import("./wire.js").Stats} Stats
 * @typedef {import("./wire.js").Transition} Transition
 * @typedef {import("./wire.js").Timeline} Timeline
 * @typedef {import("./wire.js").Captured} Captured
 * @typedef {import("./wire.js").ServerMessage} ServerMessage
 * @typedef {import("./wire.js").ClientMessage} ClientMessage
 * @typedef {string | number | null} ReqId
 */

/** The subprotocol the server accepts; the token rides in a second one, never in a URL. */
export const SUBPROTOCOL = "ptyvisor";
export const TOKEN_SUBPROTOCOL_PREFIX = "ptyvisor.token.";

/** Server-side limit for queued messages and deny messages (characters). */
export const MAX_MESSAGE_CHARS = 4000;

/**
 * A session's pending interaction may be answered from here unless the server
 * says otherwise (older servers do not send the field at all).
 * @param {{answerable?: boolean}} holder
 * @returns {boolean}
 */
export function isAnswerable(holder) {
  return holder.answerable !== false;
}
