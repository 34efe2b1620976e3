// A client's use of the declarations `ptyvisor schema --typescript` writes. The tests
// (tests/wire/test_typescript.py) put them beside this file as ptyvisor.d.ts and compile both
// with `tsc --noEmit --strict`: a wrong declaration fails the compile, and so does one
// weakened to `any`, since every `@ts-expect-error` below must then still find an error.
import type {
  Attach,
  ClientMessage,
  Hello,
  Input,
  PROTOCOL_VERSION,
  Resize,
  ServerMessage,
  SessionSummary,
  Spawn,
} from "./ptyvisor.js";

export const version: PROTOCOL_VERSION = 1;

// ------------------------------------------------------------------ client → server

const session = "s1a2b3c4d";
const attach: Attach = { type: "attach", session, since: 4096, req_id: 1, view_only: true };
const input: Input = { type: "input", session, data: "ls\r", req_id: "typed-1" };
const resize: Resize = { type: "resize", session, cols: 120, rows: 40, claim: false };
const spawn: Spawn = {
  type: "spawn",
  argv: ["--model", "small"],
  agent: "pi",
  cwd: null,
  env: { LANG: "C.UTF-8" },
  name: "review",
};

export const outgoing: ClientMessage[] = [
  attach,
  input,
  resize,
  spawn,
  { type: "list", all: true },
  { type: "watch_sessions" },
  { type: "signal", session, signal: "INT" },
  { type: "send_keys", session, keys: ["C-c", "Up", "Enter"], paste: false },
  { type: "capture", session, scrollback: -1, ansi: true },
  { type: "answer", session, interaction: "req-1", answers: { q1: ["Yes"], q2: "free text" } },
  { type: "answer", session, interaction: "req-2", behavior: "deny", message: "not now" },
];

// @ts-expect-error: a misspelled field (scrollbak)
export const misspelled: Attach = { type: "attach", session, scrollbak: false };
// @ts-expect-error: a signal name outside the literal union
export const wrongSignal: ClientMessage = { type: "signal", session, signal: "SIGINT" };
// @ts-expect-error: a message type no client sends
export const wrongType: ClientMessage = { type: "atach", session };
// @ts-expect-error: a number where a boolean is
export const wrongFlag: Resize = { type: "resize", session, cols: 80, rows: 24, claim: 1 };
// @ts-expect-error: rows is required
export const missingRows: Resize = { type: "resize", session, cols: 80 };
// @ts-expect-error: input's data is text
export const numericData: Input = { type: "input", session, data: 0x03 };
// @ts-expect-error: data is required
export const missingData: ClientMessage = { type: "input", session };
// @ts-expect-error: an int where the version literal is
export const wrongVersion: PROTOCOL_VERSION = 2;

// ------------------------------------------------------------------ server → client

// The server sends every field, defaulted ones included: they are required.
export const hello: Hello = {
  type: "hello",
  protocol: 1,
  server_version: "0.1.0",
  agents: ["claude-code", "pi"],
  started_at: 1_700_000_000_000,
  scrollback: 1000,
};
// @ts-expect-error: agents, started_at and scrollback have defaults but are always sent
export const partialHello: Hello = { type: "hello", protocol: 1, server_version: "0.1.0" };

export function label(summary: SessionSummary): string {
  const pending = summary.pending_interaction;
  const question = pending?.questions[0]?.options.map((option) => option.label) ?? [];
  const cwd: string | null = summary.raw?.cwd ?? null;
  return `${summary.name} ${summary.activity.phase} ${summary.past} ${question} ${cwd}`;
}

/** Each variant narrowed by `type`, reading fields only that variant has. */
export function describe(msg: ServerMessage): string {
  switch (msg.type) {
    case "hello":
      return `${msg.server_version} v${msg.protocol}: ${msg.agents.join(", ")}`;
    case "sessions":
      return msg.sessions.map(label).join("\n");
    case "spawned":
      return `spawned ${msg.session.id} ${msg.session.size.cols}x${msg.session.size.rows}`;
    case "attached": {
      const screen: string = msg.snapshot?.screen.ansi ?? "";
      const cursor: number | undefined = msg.snapshot?.screen.cursor_row;
      const replay: "exact" | "snapshot" = msg.replay;
      return `${replay} ${msg.seq}..${msg.live_seq} ${msg.truncated} ${screen} ${cursor}`;
    }
    case "snapshot": {
      const modes = msg.snapshot.screen.modes;
      return `${msg.reason} ${msg.snapshot.seq} ${modes.mouse_tracking} ${modes.bracketed_paste}`;
    }
    case "activity": {
      const kind: "approval" | "question" | undefined = msg.pending_interaction?.kind;
      const what: string[] = msg.changed;
      // @ts-expect-error: not a field an activity event names as changed
      const wrong: typeof msg.changed = ["size"];
      return `${msg.session} ${msg.activity.phase} since ${msg.activity.since} ${kind} ${what} ${wrong}`;
    }
    case "process": {
      const exit: number | null = msg.process.exit_code;
      return `${msg.process.state} ${exit} ${msg.process.ended ?? "running"}`;
    }
    case "resized":
      return `${msg.session} ${msg.size.cols}x${msg.size.rows}`;
    case "closed":
      return `closed ${msg.session}`;
    case "stats": {
      const queued: number[] = msg.stats.client_queues;
      return `${msg.stats.output_bytes} ${msg.stats.frames_rejected["bad_mac"]} ${queued}`;
    }
    case "timeline":
      return msg.transitions.map((t) => `${t.at} ${t.phase} ${t.reason ?? ""}`).join("\n");
    case "exported":
      return msg.asciicast.split("\n")[0];
    case "captured":
      return [...msg.scrollback, ...msg.rows].join("\n") + msg.modes.alternate_screen;
    case "notify_tested":
      return msg.results.map((r) => `${r.target} ${r.delivered ? "delivered" : "not"}`).join("\n");
    case "prompt_accepted":
      return `${msg.session} took it at ${msg.at}`;
    case "ok":
      // @ts-expect-error: an ok reply has no session
      return `ok ${msg.req_id} ${msg.session}`;
    case "error": {
      if (msg.code === "unknown_session" || msg.code === "view_only") {
        return `${msg.code}: ${msg.message}`;
      }
      // @ts-expect-error: no such error code
      return msg.code === "no_such_code" ? "" : `${msg.req_id}: ${msg.message}`;
    }
    default: {
      const unreachable: never = msg;
      return unreachable;
    }
  }
}
