// Activity frames (wire format v1) for the in-process agent extensions.
//
// Byte-for-byte the same frames as src/ptyvisor/wire/frames.py `encode_frame`:
//   ESC ] 7733 ; ptyvisor ; 1 ; <session-id> ; <nonce> ; <payload> BEL
// where <payload> is unpadded base64url of the compact UTF-8 JSON text.
// JSON.stringify already produces what Python's
// json.dumps(payload, ensure_ascii=False, separators=(",", ":")) does for the
// payloads we send (strings, integers, booleans, null, arrays, objects with
// non-numeric keys, in insertion order).
//
// writeFrame() runs inside the agent's own process (OpenCode under Bun, Pi
// under Node), so it must never throw, never hang and never print anything.

import fs from "node:fs";
import tty from "node:tty";

import { shrinkToFit } from "./mask.mjs";

export const FRAME_PREFIX = "\x1b]7733;";
export const MAX_FRAME_BYTES = 65536;
const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const NONCE = /^[0-9a-f]{32}$/;
const FALLBACK_TTY = "/dev/tty";

function header(sessionId, nonce) {
  return `${FRAME_PREFIX}ptyvisor;1;${sessionId};${nonce};`;
}

function payloadText(payload) {
  const text = JSON.stringify(payload);
  if (typeof text !== "string" || text[0] !== "{") throw new Error("payload must be a JSON object");
  return text;
}

/** Size in bytes of the frame for `payload`, without building it. */
function frameBytes(sessionId, nonce, payload) {
  const raw = Buffer.byteLength(payloadText(payload), "utf8");
  // Unpadded base64: 4 characters per 3 bytes, rounded up.
  return header(sessionId, nonce).length + Math.ceil((raw * 4) / 3) + 1;
}

/**
 * Build a complete frame (prefix through terminator) as a Buffer.
 * Throws, like the Python encoder, on malformed ids, a bad terminator, a
 * non-object payload or a frame over MAX_FRAME_BYTES; messages never contain
 * the nonce.
 */
export function encodeFrame(sessionId, nonce, payload, terminator = "\x07") {
  if (typeof sessionId !== "string" || !SESSION_ID.test(sessionId)) {
    throw new Error("session id must match [A-Za-z0-9_-]{1,64}");
  }
  if (typeof nonce !== "string" || !NONCE.test(nonce)) {
    throw new Error("nonce must be 32 lowercase hex characters");
  }
  if (terminator !== "\x07" && terminator !== "\x1b\\") {
    throw new Error("terminator must be BEL or ESC \\");
  }
  // toString("base64url") never pads.
  const body = Buffer.from(payloadText(payload), "utf8").toString("base64url");
  const frame = Buffer.from(header(sessionId, nonce) + body + terminator, "ascii");
  if (frame.length > MAX_FRAME_BYTES) {
    throw new Error(`frame is ${frame.length} bytes, over the ${MAX_FRAME_BYTES} limit`);
  }
  return frame;
}

/**
 * Open `path` for writing if it is a terminal, else return null.
 * Only character devices are opened, so a FIFO planted in PTYVISOR_TTY can
 * never block the agent in open(). The descriptor stays blocking: a
 * momentarily full PTY then delays the write instead of tearing the frame.
 * O_NOCTTY: the agent must never acquire the terminal as its controlling tty.
 */
function openTty(path) {
  let fd = null;
  try {
    if (!fs.statSync(path).isCharacterDevice()) return null;
    fd = fs.openSync(path, fs.constants.O_WRONLY | (fs.constants.O_NOCTTY ?? 0));
    if (tty.isatty(fd)) return fd;
  } catch {
    // fall through: not writable, not a terminal, no controlling terminal (ENXIO) …
  }
  if (fd !== null) {
    try {
      fs.closeSync(fd);
    } catch {
      // nothing left to do
    }
  }
  return null;
}

const AGENT_NAME = /^[a-z0-9][a-z0-9.-]{0,63}$/;

/**
 * The agent this session runs, as ptyvisor named it (PTYVISOR_AGENT), else
 * `fallback`: one extension serves agents built on one code base (OpenCode's
 * plugins run in Kilo too), and the frames must say which.
 */
export function agentName(fallback, env = process.env) {
  const named = env.PTYVISOR_AGENT;
  return typeof named === "string" && AGENT_NAME.test(named) ? named : fallback;
}

/**
 * Write one frame for the ptyvisor session described by `env`.
 * Returns whether a frame was written; never throws. Outside a session (no
 * valid PTYVISOR_SESSION / PTYVISOR_NONCE) it does nothing. A payload too big
 * for one frame is shortened (see shrinkToFit), never dropped.
 */
export function writeFrame(payload, env = process.env) {
  try {
    const sessionId = env.PTYVISOR_SESSION ?? "";
    const nonce = env.PTYVISOR_NONCE ?? "";
    if (!SESSION_ID.test(sessionId) || !NONCE.test(nonce)) return false;
    const fits = (candidate) => frameBytes(sessionId, nonce, candidate) <= MAX_FRAME_BYTES;
    const fitted = fits(payload) ? payload : shrinkToFit(payload, fits);
    if (fitted === null) return false;
    const frame = encodeFrame(sessionId, nonce, fitted);

    const paths = [env.PTYVISOR_TTY, FALLBACK_TTY].filter(Boolean);
    for (const path of paths) {
      const fd = openTty(path);
      if (fd === null) continue;
      try {
        // One write() keeps the frame in one piece between the agent's own
        // writes to the same terminal; the loop only finishes an interrupted write.
        let offset = fs.writeSync(fd, frame, 0, frame.length);
        while (offset < frame.length) offset += fs.writeSync(fd, frame, offset);
        return true;
      } catch {
        return false;
      } finally {
        try {
          fs.closeSync(fd);
        } catch {
          // ignore
        }
      }
    }
  } catch {
    // never break the agent
  }
  return false;
}
