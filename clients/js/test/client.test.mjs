// The client against a real `ptyvisor serve` (started by tests/client_js/, which
// passes it in the environment): run with `node --test`.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import test from "node:test";

import { PtyvisorClient, ServerError } from "../src/index.js";

const URL = process.env.PTYVISOR_TEST_URL ?? "";
const TOKEN = process.env.PTYVISOR_TOKEN ?? "";
const BIN = process.env.PTYVISOR_BIN ?? "ptyvisor";
/** The address `ptyvisor serve` printed, for the CLI. */
const SERVE_URL = process.env.PTYVISOR_TEST_SERVE_URL ?? "";
const KEEPER = Number(process.env.PTYVISOR_KEEPER_PID ?? "0");
const HOOK_DIR = process.env.PTYVISOR_TEST_HOOK_DIR ?? "";
const PYTHON = process.env.PTYVISOR_TEST_PYTHON ?? "python3";
const WAIT_MS = 30000 * Number(process.env.PTYVISOR_TEST_TIMEOUT_FACTOR ?? "1");

/**
 * Resolves once `check()` is truthy; polls.
 * @template T
 * @param {() => T | Promise<T>} check
 * @param {string} what
 * @returns {Promise<T>}
 */
async function until(check, what) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const result = await check();
    if (result) return result;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The keeper's server process: its child running the worker module. */
function serverPid() {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (ppid === KEEPER && cmdline.includes("ptyvisor.server.worker")) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return null;
}

/** @param {Uint8Array[]} chunks */
function text(chunks) {
  return Buffer.concat(chunks).toString("latin1");
}

test("every line exactly once across a restart and a kill -9 of the server", async () => {
  const client = await PtyvisorClient.connect({ url: URL, token: TOKEN });
  try {
    // About 20 s of lines: the restart and the kill both fall in the middle.
    const script =
      "read go; i=0; while [ $i -lt 1000 ]; do i=$((i+1)); echo line $i; sleep 0.02; done; read x";
    const session = await client.spawn({ argv: ["sh", "-c", script], name: "counter" });
    const attachment = client.attach(session.id, { since: 0, answersQueries: false });
    /** @type {Uint8Array[]} */
    const chunks = [];
    let snapshots = 0;
    attachment.addEventListener("output", (event) => chunks.push(event.detail.bytes));
    attachment.addEventListener("snapshot", () => (snapshots += 1));
    await until(() => attachment.attached, "the attach");
    attachment.input("go\r");
    await until(() => /line 50\r\n/.test(text(chunks)), "line 50");
    execFileSync(BIN, ["restart", "--url", SERVE_URL], { env: process.env, stdio: "pipe" });
    const restarted = [...text(chunks).matchAll(/line (\d+)\r\n/g)].length;
    await until(
      () => [...text(chunks).matchAll(/line (\d+)\r\n/g)].length > restarted + 50,
      "50 more lines after the restart",
    );
    const pid = serverPid();
    assert.ok(pid, "the server process");
    process.kill(pid, "SIGKILL");
    await until(() => /line 1000\r\n/.test(text(chunks)), "line 1000 after the kill");
    const numbers = [...text(chunks).matchAll(/line (\d+)\r\n/g)].map((m) => Number(m[1]));
    assert.deepEqual(numbers, Array.from({ length: 1000 }, (_, i) => i + 1));
    assert.equal(snapshots, 0, "caught up by exact replay each time, never a redraw");
    await client.connection.opened(WAIT_MS);
    const stats = await client.request({ type: "stats", session: session.id });
    assert.equal(attachment.position, stats.stats.output_bytes);
    await client.closeSession(session.id);
  } finally {
    client.close();
  }
});

test("a flood: a lagging client is redrawn and continues exactly from the snapshot", async () => {
  const client = await PtyvisorClient.connect({ url: URL, token: TOKEN });
  try {
    // Far more than the client buffer (serve --client-buffer), written at once.
    const script = "read go; head -c 30000000 /dev/zero | tr '\\0' x; echo; echo flood-over; read x";
    const session = await client.spawn({ argv: ["sh", "-c", script], name: "flood" });
    const attachment = client.attach(session.id, { answersQueries: false });
    let tail = "";
    attachment.addEventListener("output", (event) => {
      tail = (tail + Buffer.from(event.detail.bytes).toString("latin1")).slice(-64);
    });
    attachment.addEventListener("snapshot", (event) => {
      tail = event.detail.screen.ansi.slice(-4096);
    });
    await until(() => attachment.attached, "the attach");
    attachment.input("go\r");
    // Node reads the socket as fast as it comes: a stalled event loop is a client
    // that does not read.
    const stallUntil = Date.now() + 1500;
    while (Date.now() < stallUntil) {
      // busy: nothing is read meanwhile
    }
    await until(() => tail.includes("flood-over"), "the end of the flood");
    const stats = await client.request({ type: "stats", session: session.id });
    await until(() => attachment.position === stats.stats.output_bytes, "the stream's end");
    assert.ok(attachment.lagged >= 1, "the client fell behind and was redrawn");
    await client.closeSession(session.id);
  } finally {
    client.close();
  }
});

test("an interaction answered by two clients: the first answer wins", async () => {
  const first = await PtyvisorClient.connect({ url: URL, token: TOKEN });
  const second = await PtyvisorClient.connect({ url: URL, token: TOKEN });
  try {
    /** @type {any[]} */
    let listed = [];
    second.addEventListener("sessions", (event) => (listed = event.detail));
    second.watchSessions();
    const script = `setsid ${PYTHON} wrap.py claude-code & read x; exec cat`;
    const session = await first.spawn({ argv: ["sh", "-c", script], cwd: HOOK_DIR, name: "ask" });
    const held = await until(
      () => listed.find((s) => s.id === session.id && s.pending_interaction && s.answerable),
      "an answerable interaction in the second client's list",
    );
    const interaction = held.pending_interaction.id;
    const answers = await Promise.allSettled([
      first.answer(session.id, interaction, { behavior: "allow" }),
      second.answer(session.id, interaction, { behavior: "deny", message: "no" }),
    ]);
    const won = answers.filter((a) => a.status === "fulfilled");
    const lost = answers.filter((a) => a.status === "rejected");
    assert.equal(won.length, 1, JSON.stringify(answers));
    assert.ok(lost[0].status === "rejected" && lost[0].reason instanceof ServerError);
    const resultPath = join(HOOK_DIR, "result.json");
    await until(() => existsSync(resultPath), "the hook's result");
    const result = JSON.parse(readFileSync(resultPath, "utf8"));
    const decision = JSON.parse(result.stdout).hookSpecificOutput.decision;
    const winner = answers[0].status === "fulfilled" ? "allow" : "deny";
    assert.equal(decision.behavior, winner);
    await first.closeSession(session.id);
  } finally {
    first.close();
    second.close();
  }
});
