// Pure formatting helpers shared by the sidebar, the session header and the forms.

/** @typedef {import("./client/protocol.js").SessionSummary} SessionSummary */

/** @type {Record<string, string>} */
const PHASE_LABELS = {
  unavailable: "Live",
  starting: "Starting",
  working: "Working",
  needs_input: "Needs input",
  waiting: "Ready",
  failed: "Failed",
  stopped: "Stopped",
};

/**
 * What a phase is called on the page ("waiting" is "Ready").
 * @param {string} phase
 * @returns {string}
 */
export function phaseLabel(phase) {
  return PHASE_LABELS[phase] ?? phase;
}

/** The badge's tooltip when the phase is inferred from the terminal. */
export const INFERRED_TITLE =
  "Inferred from the terminal (a prompt, progress, a notification or a bell), " +
  "not reported by an agent extension";

/**
 * What the badge says, which colour class it gets and its tooltip. "unavailable"
 * means no extension ever reported: the program is just running ("Live") until it
 * exits. A phase inferred from the terminal's signals (`source: "terminal"`) is
 * marked with a "?", as `ptyvisor ls` does.
 * @param {SessionSummary} session
 * @returns {{label: string, phase: string, title: string}}
 */
export function badgeOf(session) {
  const phase = session.activity.phase;
  if (phase === "unavailable") {
    return session.process.state === "exited"
      ? { label: "Stopped", phase: "stopped", title: "" }
      : { label: "Live", phase: "live", title: "" };
  }
  if (session.activity.source === "terminal") {
    return { label: `${phaseLabel(phase)}?`, phase, title: INFERRED_TITLE };
  }
  return { label: phaseLabel(phase), phase, title: "" };
}

/** Longest reason shown in a list entry or the header; the full one is in its tooltip. */
const REASON_CHARS = 160;

/**
 * The activity's reason on one line ("editing auth.py", "killed", a failure's
 * message), or "" when there is none.
 * @param {SessionSummary} session
 * @returns {string}
 */
export function reasonText(session) {
  const reason = (session.activity.reason ?? "").replace(/\s+/g, " ").trim();
  return reason.length > REASON_CHARS ? `${reason.slice(0, REASON_CHARS - 1)}…` : reason;
}

/**
 * "4s", "12m 05s", "3h 07m", "2d 4h": short and with a stable width per unit.
 * @param {number} ms
 * @returns {string}
 */
export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const hours = Math.floor(m / 60);
  if (hours < 24) return `${hours}h ${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/** @type {Record<number, string>} */
const SIGNAL_NAMES = {
  1: "SIGHUP",
  2: "SIGINT",
  3: "SIGQUIT",
  6: "SIGABRT",
  9: "SIGKILL",
  11: "SIGSEGV",
  13: "SIGPIPE",
  15: "SIGTERM",
};

/**
 * "exit 0", "exit 3", "killed by SIGTERM", or "" while the process runs.
 * @param {SessionSummary} session
 * @returns {string}
 */
export function exitText(session) {
  const p = session.process;
  if (p.state !== "exited") return "";
  if (p.signal !== null && p.signal !== undefined) {
    return `killed by ${SIGNAL_NAMES[p.signal] ?? `signal ${p.signal}`}`;
  }
  return `exit ${p.exit_code ?? "?"}`;
}

/**
 * The second line of a sidebar entry: the agent, or the command line.
 * @param {SessionSummary} session
 * @returns {string}
 */
export function commandText(session) {
  const argv = session.command?.length ? session.command : session.argv;
  const command = argv.map(quoteArg).join(" ");
  return session.agent ? `${session.agent} · ${command}` : command;
}

/**
 * Quote one argument for display the way a shell user would type it.
 * @param {string} arg
 * @returns {string}
 */
export function quoteArg(arg) {
  if (arg !== "" && /^[\w@%+=:,./~-]+$/.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * Split a command line into argv the way a POSIX shell splits words: blanks
 * separate, '…' is literal, "…" allows \" \\ \$ \` escapes, a backslash outside
 * quotes escapes the next character. No expansion of any kind: for pipes or
 * variables, run `sh -c '…'`.
 * @param {string} line
 * @returns {string[]}
 * @throws {Error} on an unterminated quote or a trailing backslash
 */
export function splitCommand(line) {
  /** @type {string[]} */
  const words = [];
  let word = "";
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === " " || c === "\t" || c === "\n") {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      i += 1;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error("unterminated ' quote");
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i += 1;
      inWord = true;
      for (;;) {
        if (i >= line.length) throw new Error('unterminated " quote');
        const d = line[i];
        if (d === '"') break;
        if (d === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) {
          word += line[i + 1];
          i += 2;
        } else {
          word += d;
          i += 1;
        }
      }
      i += 1;
    } else if (c === "\\") {
      if (i + 1 >= line.length) throw new Error("trailing backslash");
      word += line[i + 1];
      inWord = true;
      i += 2;
    } else {
      word += c;
      inWord = true;
      i += 1;
    }
  }
  if (inWord) words.push(word);
  return words;
}
