// @ptyvisor/client: everything a frontend needs to drive ptyvisor sessions.

export { Attachment } from "./attachment.js";
export { PtyvisorClient } from "./client.js";
export { Connection, ConnectionLost, ServerError } from "./connection.js";
export { isAnswerable, MAX_MESSAGE_CHARS, SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from "./protocol.js";
export { shown, withoutQueries } from "./replay.js";
