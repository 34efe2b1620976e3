// Terminal queries in replayed output were answered when they were live (by the
// server or the client then attached); xterm must not answer them again, or the
// program reads the second reply as typed input. Same rules as ptyvisor/replay.py,
// checked against the same vectors (tests/terminal/replay-queries.json).

const QUERY = new RegExp(
  [
    "\\x1b\\[[>?=]?[0-9;]*[cn]", // DA1/DA2/DA3, DSR and cursor position reports
    "\\x1b\\[\\??[0-9;]*\\$p", // DECRQM / RQM
    "\\x1b\\[\\?u", // kitty keyboard flags
    "\\x1b\\[1[4689](?:;[0-9]*)?t", // XTWINOPS size reports
    "\\x1b\\](?:1[0-9]|4;[0-9]+);\\?(?:\\x07|\\x1b\\\\)", // OSC colour queries
    "\\x1bP[$+]q[^\\x07\\x1b]{0,256}(?:\\x07|\\x1b\\\\)", // DECRQSS, XTGETTCAP
  ].join("|"),
  "g",
);

/**
 * Bytes as a string of char codes 0–255, so the regex sees bytes, not UTF-8.
 * (TextDecoder's "latin1" is really windows-1252: it would remap 0x80–0x9F.)
 * @param {Uint8Array} bytes
 */
function byteString(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return text;
}

/**
 * @param {Uint8Array} bytes
 * @returns {Uint8Array}
 */
export function withoutQueries(bytes) {
  if (bytes.indexOf(0x1b) < 0) return bytes; // nearly all output: no copy
  const text = byteString(bytes);
  const kept = text.replace(QUERY, "");
  if (kept.length === text.length) return bytes;
  return Uint8Array.from(kept, (c) => c.charCodeAt(0));
}

/**
 * What xterm should parse of `bytes` (output from `seq` on): the replayed part,
 * before `liveSeq`, loses its queries; live bytes are untouched.
 * @param {number} seq
 * @param {Uint8Array} bytes
 * @param {number} liveSeq
 * @returns {Uint8Array}
 */
export function shown(seq, bytes, liveSeq) {
  const replayed = liveSeq - seq;
  if (replayed <= 0) return bytes;
  if (replayed >= bytes.length) return withoutQueries(bytes);
  const head = withoutQueries(bytes.subarray(0, replayed));
  const out = new Uint8Array(head.length + bytes.length - replayed);
  out.set(head);
  out.set(bytes.subarray(replayed), head.length);
  return out;
}
