// ptyvisor prompt-submit plugin for OpenCode's TUI.
//
// OpenCode's server reports a session's first turn late: the TUI first asks the
// server to create the session, and the server takes that request only after its
// own start-up work, up to a second or more after Enter (see README.md beside this
// file). The TUI itself knows at once. This plugin runs in the TUI's thread and
// reports `working` the moment the prompt box submits a prompt; the server plugin's
// reports (ptyvisor.js) confirm and carry the turn from there.
//
// A submit that starts no turn (OpenCode refused it: no model, an error shown in
// the TUI) must not leave the session `working`: if OpenCode says nothing about a
// session's status within UNCONFIRMED_MS, the plugin reports `waiting` again.
// Slash commands ("/help", "/models") and an empty box are not prompts: nothing.
//
// Silent outside a ptyvisor session (writeFrame checks), never throws into OpenCode.

import { agentName, writeFrame } from "../shared/frame.mjs";

const AGENT = agentName("opencode"); // or "kilo"
const UNCONFIRMED_MS = 10000;

function report(phase) {
  try {
    writeFrame({ type: "activity", phase, at: Date.now(), agent: AGENT });
  } catch {
    // never into OpenCode
  }
}

/** Whether a keymap dispatch is the prompt box submitting a prompt. */
function submitsPrompt(event) {
  const command = event?.command ?? event?.binding?.command;
  if (event?.phase !== "binding-execute" || command !== "input.submit") return false;
  const text = event.focused?.plainText;
  if (typeof text !== "string") return false;
  const prompt = text.trim();
  return prompt.length > 0 && !prompt.startsWith("/");
}

export default {
  id: "ptyvisor",
  tui: async (api) => {
    let unconfirmed = null;
    const confirmed = () => {
      if (unconfirmed !== null) clearTimeout(unconfirmed);
      unconfirmed = null;
    };
    try {
      api.keymap.on("dispatch", (event) => {
        try {
          if (!submitsPrompt(event)) return;
          report("working");
          confirmed();
          unconfirmed = setTimeout(() => {
            unconfirmed = null;
            report("waiting");
          }, UNCONFIRMED_MS);
        } catch {
          // never into OpenCode
        }
      });
      // Busy, retry or idle: the server has the turn (and its plugin reports it).
      api.event.on("session.status", () => confirmed());
    } catch {
      // an OpenCode without this API: the server plugin's reports still come
    }
  },
};
