// What a TypeScript frontend writes against the client's emitted declarations:
// compiled with --strict by test_node_client.py (a wrong type is a compile error).
import { PtyvisorClient, ServerError, type Attachment } from "./types/index.js";
import type { SessionSummary, Snapshot } from "./types/protocol.js";

export async function main(token: string): Promise<number | null> {
  const client = await PtyvisorClient.connect({ url: "ws://127.0.0.1:7733/ws", token });
  const sessions: SessionSummary[] = await client.list({ all: true });
  const first = sessions[0];
  if (first === undefined) return null;
  const phase: string = first.activity.phase;
  const terminal: Attachment = client.attach(first.id, { answersQueries: false });
  terminal.addEventListener("snapshot", (event) => {
    const snapshot = (event as CustomEvent<Snapshot>).detail;
    console.log(phase, snapshot.screen.ansi.length, snapshot.seq);
  });
  terminal.input("ls\r");
  try {
    await client.answer(first.id, "i1", { behavior: "allow" });
  } catch (error) {
    if (error instanceof ServerError) console.log(error.code);
  }
  return terminal.position;
}
