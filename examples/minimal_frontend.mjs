// A minimal Node frontend on @ptyvisor/client: shows one session's terminal and its
// activity, and allows its pending approvals when you press "a".
//   PTYVISOR_TOKEN=… node examples/minimal_frontend.mjs [session-id]

import { PtyvisorClient } from "../clients/js/src/index.js";

const client = await PtyvisorClient.connect({
  url: process.env.PTYVISOR_URL ?? "ws://127.0.0.1:7733/ws",
  token: process.env.PTYVISOR_TOKEN ?? "",
});
const sessions = await client.list();
const session = sessions.find((s) => s.id === process.argv[2]) ?? sessions[0];
if (!session) throw new Error("no session to show: start one with `ptyvisor run -d CMD`");

let pending = null;
client.watchSessions();
client.addEventListener("sessions", ({ detail }) => {
  const now = detail.find((s) => s.id === session.id);
  if (!now) return;
  pending = now.answerable ? now.pending_interaction : null;
  process.title = `${now.name}: ${now.activity.phase}${pending ? " (a: allow)" : ""}`;
});

const terminal = client.attach(session.id, { answersQueries: false });
terminal.addEventListener("snapshot", ({ detail }) => process.stdout.write(detail.screen.ansi));
terminal.addEventListener("output", ({ detail }) => process.stdout.write(detail.bytes));

process.stdin.setRawMode?.(true);
process.stdin.on("data", async (key) => {
  if (key[0] === 0x1d) process.exit(0); // Ctrl-]
  if (pending && key.toString() === "a") {
    await client.answer(session.id, pending.id, { behavior: "allow" });
  } else {
    terminal.input(key);
  }
});
