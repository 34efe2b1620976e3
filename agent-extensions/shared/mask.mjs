// Secret masking and payload bounds for the in-process agent extensions.
//
// A line-for-line port of src/ptyvisor/agents/masking.py: the same rules, in the same
// order, with the same bounded repetitions (so masking stays linear on hostile
// input), giving the same output for every input. agent-extensions/
// masking-vectors.json is the shared oracle, and tests/agents/test_extensions.py
// also compares both implementations on thousands of generated strings.
//
// Python's `re` and JavaScript's RegExp differ in three ways that matter here,
// so the patterns spell those out instead of relying on engine defaults:
//   * `\b`, `\s` and `.` are Unicode-aware in Python str patterns. JS `\b` is
//     ASCII-only, JS `\s` lacks \x1c-\x1f and \x85 (and adds \ufeff), and JS `.`
//     also stops at \r, \u2028, \u2029. WORD / SPACE_CHARS / ANY below are
//     Python's sets.
//   * re.IGNORECASE lets ASCII letters also match U+0130 İ, U+0131 ı (for i),
//     U+017F ſ (for s) and U+212A K (Kelvin, for k); the JS `i` flag folds
//     differently, so case-insensitive parts are explicit classes (ci()).
//   * Replacement syntax: Python `\1` is `$1` here.

export const MASK = "***";

// Python's Unicode \w is exactly letters, numbers and underscore.
const WORD = String.raw`[\p{L}\p{N}_]`;
const B_START = `(?<!${WORD})`; // \b before a word character
const B_END = `(?!${WORD})`; // \b after a word character
const SPACE_CHARS = String.raw`\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000`;
const SPACE = `[${SPACE_CHARS}]`;
const NOT_SPACE = `[^${SPACE_CHARS}]`;
const ANY = String.raw`[^\n]`; // Python `.` without DOTALL

// Non-ASCII characters that Python's IGNORECASE treats as case variants of ASCII letters.
const CASE_EXTRAS = { i: String.raw`\u0130\u0131`, k: String.raw`\u212a`, s: String.raw`\u017f` };
const CI_LETTERS = String.raw`A-Za-z\u0130\u0131\u017f\u212a`; // [a-z] or [A-Z] under IGNORECASE

/** A literal ASCII word, matched the way Python's IGNORECASE matches it. */
function ci(word) {
  let out = "";
  for (const ch of word) {
    const lower = ch.toLowerCase();
    if (lower >= "a" && lower <= "z") {
      out += `[${lower}${lower.toUpperCase()}${CASE_EXTRAS[lower] ?? ""}]`;
    } else {
      out += ch.replace(/[\\^$*+?.()|[\]{}/]/g, "\\$&");
    }
  }
  return out;
}

const anyOf = (...words) => words.map(ci).join("|");

// A credential-looking name: API_KEY, GITHUB_TOKEN, DB_PASSWORD, client_secret …
// Always used case-insensitively, as in Python. `CREDENTIALS?` is ci("CREDENTIAL")
// followed by an optional ci("S"): same language, same greedy preference.
const NAME_CHAR = `[${CI_LETTERS}0-9_]`;
const NAME =
  `${NAME_CHAR}{0,64}` +
  `(?:${anyOf("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS")}|${ci("CREDENTIAL")}${ci("S")}?|${ci("AUTH")})` +
  `${NAME_CHAR}{0,64}`;

const rx = (source) => new RegExp(source, "gu");

const RULES = [
  // Provider keys and tokens with a recognisable prefix: keep the prefix.
  [rx(String.raw`${B_START}(sk-ant-|sk-proj-|sk-)[A-Za-z0-9_\-]{16,}`), `$1${MASK}`],
  [rx(String.raw`${B_START}(AIza)[A-Za-z0-9_\-]{30,}`), `$1${MASK}`],
  [rx(String.raw`${B_START}(gh[pousr]_)[A-Za-z0-9]{20,}`), `$1${MASK}`],
  [rx(String.raw`${B_START}(github_pat_)[A-Za-z0-9_]{20,}`), `$1${MASK}`],
  [rx(String.raw`${B_START}(glpat-)[A-Za-z0-9_\-]{16,}`), `$1${MASK}`],
  [rx(String.raw`${B_START}(xox[abprs]-)[A-Za-z0-9\-]{8,}`), `$1${MASK}`],
  [rx(String.raw`${B_START}(npm_)[A-Za-z0-9]{30,}`), `$1${MASK}`],
  [rx(String.raw`${B_START}((?:AKIA|ASIA))[A-Z0-9]{16}${B_END}`), `$1${MASK}`],
  // HTTP credentials.
  [
    rx(String.raw`${B_START}(${anyOf("Bearer", "Basic")})${SPACE}+[${CI_LETTERS}0-9._~+/\-]+=*`),
    `$1 ${MASK}`,
  ],
  // scheme://user:password@host
  [
    rx(
      String.raw`${B_START}([a-zA-Z][a-zA-Z0-9+.\-]{0,31}://[^/${SPACE_CHARS}:@]{1,256}:)[^@${SPACE_CHARS}/]{1,256}@`,
    ),
    `$1${MASK}@`,
  ],
  // JSON keys: "api_key": "value"
  [rx(String.raw`("${NAME}"${SPACE}*:${SPACE}*")(?:[^"\\]|\\${ANY})*(")`), `$1${MASK}$2`],
  // Flags: --token X, --password=X, --api-key X
  [
    rx(
      String.raw`(--(?:[${CI_LETTERS}0-9]{1,32}-){0,4}(?:${anyOf(
        "token",
        "secret",
        "password",
        "passwd",
        "api-key",
        "apikey",
        "auth",
        "key",
      )})(?:[=${SPACE_CHARS}]+))(?!-)("[^"]*"|'[^']*'|${NOT_SPACE}+)`,
    ),
    `$1${MASK}`,
  ],
];

// API_KEY=x, export GITHUB_TOKEN="x", aws_secret_access_key = x, :_authToken=x
const ASSIGNMENT = rx(
  String.raw`(${B_START}${NAME}${SPACE}*=${SPACE}*)(?:"([^"]*)"|'([^']*)'|[^${SPACE_CHARS}"']+)`,
);

/** Return `text` with every recognised secret replaced by `***`. */
export function mask(text) {
  let out = String(text);
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement);
  // Keep the name and the quotes of NAME="value"; only the value goes.
  return out.replace(ASSIGNMENT, (_match, name, dq, sq) => {
    const quote = dq !== undefined ? '"' : sq !== undefined ? "'" : "";
    return `${name}${quote}${MASK}${quote}`;
  });
}

// ---------------------------------------------------------------------------
// Bounds (agent-extensions/README.md, src/ptyvisor/agents/interaction.py): every
// string ≤ 4000 characters, masked *before* it is cut; ≤ 8 questions, ≤ 16
// options per question, ≤ 16 suggestions, ≤ 16 rows. ptyvisor validates again
// and rejects a frame that breaks them, so these match its model exactly.
// Lengths count Unicode code points, as Python and pydantic do.

export const MAX_TEXT = 4000;
export const MAX_ID = 256;
export const MAX_LABEL = 64; // Row.label, Interaction.agent
export const MAX_TOOL = 256;
export const MAX_QUESTIONS = 8;
export const MAX_OPTIONS = 16;
export const MAX_SUGGESTIONS = 16;
export const MAX_ROWS = 16;
const MASK_MARGIN = 512;
const ELLIPSIS = "…";

/** Replace lone UTF-16 surrogates (not encodable as UTF-8, refused by Python) with U+FFFD. */
function wellFormed(text) {
  return typeof text.toWellFormed === "function"
    ? text.toWellFormed()
    : text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
}

/** UTF-16 index just past the first `count` code points of `text`. */
function pointsEnd(text, count) {
  let index = 0;
  for (let n = 0; n < count && index < text.length; n++) {
    index += text.codePointAt(index) > 0xffff ? 2 : 1;
  }
  return index;
}

function asString(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * `value` as a well-formed string of at most `limit` code points; a cut string
 * ends with "…". Not masked: for identifiers.
 */
export function clip(value, limit = MAX_TEXT) {
  const text = wellFormed(asString(value));
  if (text.length <= limit) return text; // UTF-16 length ≥ code points
  const end = pointsEnd(text, limit);
  if (end >= text.length) return text;
  if (limit <= 0) return "";
  return text.slice(0, pointsEnd(text, limit - 1)) + ELLIPSIS;
}

/**
 * Any value as masked, bounded text: the only way free text leaves an
 * extension. Masked before it is cut, over a margin beyond what is kept, so a
 * secret straddling the cut is still recognised (as ptyvisor.agents.hooks.normalise.text).
 */
export function text(value, limit = MAX_TEXT) {
  const raw = wellFormed(asString(value));
  return clip(mask(raw.slice(0, pointsEnd(raw, limit + MASK_MARGIN))), limit);
}

const list = (value) => (Array.isArray(value) ? value : []);
const isObject = (value) => value !== null && typeof value === "object";

/**
 * Normalise an interaction to the wire shape (ptyvisor.interaction.Interaction),
 * masked and within bounds. Input: {id, kind, agent, tool?, title?,
 * rows?: [{label, value, monospace?}], suggestions?: [string],
 * questions?: [{id?, header?, question, options?: [{label, description?} | string],
 * multi_select?}], accepts_free_form?, created_at?}. Rows with an empty value
 * are left out.
 */
export function boundInteraction(obj) {
  const rows = [];
  for (const row of list(obj.rows)) {
    if (rows.length >= MAX_ROWS) break;
    if (!isObject(row)) continue;
    const value = text(row.value);
    if (value) rows.push({ label: text(row.label, MAX_LABEL), value, monospace: row.monospace === true });
  }
  const suggestions = list(obj.suggestions)
    .slice(0, MAX_SUGGESTIONS)
    .map((s) => text(s))
    .filter(Boolean);
  const questions = [];
  for (const [index, q] of list(obj.questions).slice(0, MAX_QUESTIONS).entries()) {
    if (!isObject(q)) continue;
    const options = [];
    for (const o of list(q.options).slice(0, MAX_OPTIONS)) {
      if (typeof o === "string") options.push({ label: text(o), description: "" });
      else if (isObject(o)) options.push({ label: text(o.label), description: text(o.description) });
    }
    questions.push({
      id: clip(q.id || `q${index}`, MAX_ID),
      header: text(q.header),
      question: text(q.question),
      options,
      multi_select: q.multi_select === true,
    });
  }
  return {
    id: clip(obj.id, MAX_ID),
    kind: obj.kind === "question" ? "question" : "approval",
    agent: clip(obj.agent, MAX_LABEL),
    tool: text(obj.tool, MAX_TOOL),
    title: text(obj.title),
    rows,
    suggestions,
    questions,
    accepts_free_form: obj.accepts_free_form === true,
    created_at: Number.isSafeInteger(obj.created_at) && obj.created_at >= 0 ? obj.created_at : Date.now(),
  };
}

// ---------------------------------------------------------------------------
// Shortening a payload that would not fit in one 64 KiB frame. Dropping the
// frame would leave the user with no prompt at all, so instead every free-text
// string is capped at the largest length that fits (the longest strings are
// the ones cut), not below MIN_CAP; only if that is not enough are trailing
// list items dropped: suggestions first, then the last item of the longest of
// rows, questions and each question's options (keeping at least one of each).

const MIN_CAP = 64;
// Identifiers and enums are never cut: ptyvisor matches on them.
const KEEP = new Set(["type", "phase", "kind", "agent", "id", "native_session_id"]);

function capStrings(value, cap, key) {
  if (typeof value === "string") return KEEP.has(key) ? value : clip(value, cap);
  if (Array.isArray(value)) return value.map((item) => capStrings(item, cap, key));
  if (isObject(value)) {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = capStrings(v, cap, k);
    return out;
  }
  return value;
}

/** `payload` with strings capped at the largest cap in [MIN_CAP, MAX_TEXT] that fits, or null. */
function largestCap(payload, fits) {
  if (!fits(capStrings(payload, MIN_CAP))) return null;
  let lo = MIN_CAP;
  let hi = MAX_TEXT;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(capStrings(payload, mid))) lo = mid;
    else hi = mid - 1;
  }
  return capStrings(payload, lo);
}

/** Remove one trailing list item from an interaction payload; false if none is left. */
function dropOne(payload) {
  const it = payload.interaction;
  if (!isObject(it)) return false;
  if (Array.isArray(it.suggestions) && it.suggestions.length > 0) {
    it.suggestions.pop();
    return true;
  }
  const lists = [];
  if (Array.isArray(it.rows)) lists.push(it.rows);
  if (Array.isArray(it.questions)) {
    lists.push(it.questions);
    for (const q of it.questions) if (isObject(q) && Array.isArray(q.options)) lists.push(q.options);
  }
  let longest = null;
  for (const l of lists) if (l.length > 1 && (longest === null || l.length >= longest.length)) longest = l;
  if (longest === null) return false;
  longest.pop();
  return true;
}

/**
 * A shortened copy of `payload` for which `fits(copy)` holds, or null if even
 * the barest form does not fit (impossible for our payload shapes).
 */
export function shrinkToFit(payload, fits) {
  const work = JSON.parse(JSON.stringify(payload)); // a private copy to cut down
  for (;;) {
    const fitted = largestCap(work, fits);
    if (fitted !== null) return fitted;
    if (!dropOne(work)) break;
  }
  const barest = capStrings(work, 8);
  return fits(barest) ? barest : null;
}
