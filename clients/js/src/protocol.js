// JSDoc types of the public wire protocol (docs/protocol.md; `ptyvisor schema`
// prints the authoritative JSON Schema). The page uses nothing beyond these.

/**
 * @typedef {"unavailable" | "starting" | "working" | "needs_input" | "waiting" | "failed" | "stopped"} Phase
 *
 * @typedef {object} Activity
 * @property {Phase} phase
 * @property {number} since unix ms when this phase began
 * @property {string | null} [agent]
 * @property {string | null} [reason]
 * @property {string | null} [native_session_id]
 * @property {"extension" | "terminal" | "process"} source where it came from:
 *   an extension's frame, inferred from the terminal, or the process (start, exit)
 *
 * @typedef {object} ProcessState
 * @property {"starting" | "running" | "exited"} state
 * @property {number | null} [pid]
 * @property {number | null} [exit_code]
 * @property {number | null} [signal]
 * @property {number | null} [exited_at]
 * @property {"exited" | "killed" | "server" | "lost" | null} [ended]
 *
 * @typedef {{cols: number, rows: number}} TermSize
 *
 * @typedef {object} Row
 * @property {string} label
 * @property {string} value
 * @property {boolean} [monospace]
 *
 * @typedef {{label: string, description?: string}} Option
 *
 * @typedef {object} Question
 * @property {string} id
 * @property {string} [header]
 * @property {string} question
 * @property {Option[]} [options]
 * @property {boolean} [multi_select]
 *
 * @typedef {object} Interaction
 * @property {string} id
 * @property {"approval" | "question"} kind
 * @property {string} agent
 * @property {string} [tool]
 * @property {string} [title]
 * @property {Row[]} [rows]
 * @property {string[]} [suggestions]
 * @property {Question[]} [questions]
 * @property {boolean} [accepts_free_form]
 * @property {number} created_at
 *
 * @typedef {object} SessionSummary
 * @property {string} id
 * @property {string} name
 * @property {string[]} argv
 * @property {string[]} [command] what was asked for (an agent without its extension flags)
 * @property {string} cwd
 * @property {string | null} [agent]
 * @property {ProcessState} process
 * @property {Activity} activity
 * @property {Interaction | null} [pending_interaction]
 * @property {boolean} [answerable] false: the pending interaction can only be answered in the terminal
 * @property {string | null} [queued_message]
 * @property {number} clients
 * @property {number} created_at
 * @property {TermSize} size
 * @property {boolean} [past] from the records: nothing runs; it can be resumed
 * @property {string | null} [resumed_from]
 *
 * @typedef {object} Snapshot
 * @property {SessionSummary} session
 * @property {number} seq
 * @property {TermSize} size
 * @property {{ansi: string, title: string}} screen
 *
 * @typedef {{type: "hello", protocol: number, server_version: string, agents?: string[], started_at?: number, scrollback?: number}} Hello
 * @typedef {{type: "sessions", req_id?: ReqId, sessions: SessionSummary[]}} SessionsMessage
 * @typedef {{type: "spawned", req_id?: ReqId, session: SessionSummary}} Spawned
 * @typedef {{type: "attached", req_id?: ReqId, session: SessionSummary, seq: number, live_seq: number, replay: "exact" | "snapshot", truncated: boolean, snapshot?: Snapshot | null}} Attached
 * @typedef {{type: "snapshot", req_id?: ReqId, reason: "requested" | "lagging", snapshot: Snapshot}} SnapshotMessage
 * @typedef {{type: "activity", session: string, activity: Activity, pending_interaction?: Interaction | null, answerable?: boolean}} ActivityChanged
 * @typedef {{type: "process", session: string, process: ProcessState}} ProcessChanged
 * @typedef {{type: "resized", session: string, size: TermSize}} Resized
 * @typedef {{type: "closed", session: string}} Closed
 * @typedef {{type: "ok", req_id?: ReqId}} Ok
 * @typedef {{type: "error", req_id?: ReqId, code: string, message: string}} ErrorMessage
 * @typedef {{type: "stats", req_id?: ReqId}} Stats
 * @typedef {{at: number, phase: Phase, reason?: string | null}} Transition
 * @typedef {{type: "timeline", req_id?: ReqId, session: string, transitions: Transition[], ended_at?: number | null}} Timeline
 *
 * @typedef {Hello | SessionsMessage | Spawned | Attached | SnapshotMessage | ActivityChanged | ProcessChanged | Resized | Closed | Ok | ErrorMessage | Stats | Timeline} ServerMessage
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
