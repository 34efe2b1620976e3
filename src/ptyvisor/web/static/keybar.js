// The key bar: Esc, Tab, Ctrl-C, Ctrl-D, the arrows and Enter for phones, whose
// on-screen keyboards lack them. A tap sends the key to the open terminal; the
// button never takes the focus, so the on-screen keyboard stays where it was.

/** @typedef {import("./terminal.js").TerminalPane} TerminalPane */

export class KeyBar {
  /**
   * @param {HTMLElement} bar
   * @param {TerminalPane} pane
   */
  constructor(bar, pane) {
    for (const button of bar.querySelectorAll("button[data-key]")) {
      // Keep the focus (and the phone's keyboard) in the terminal.
      button.addEventListener("pointerdown", (event) => event.preventDefault());
      button.addEventListener("mousedown", (event) => event.preventDefault());
      button.addEventListener("click", () => {
        pane.sendKey(/** @type {HTMLElement} */ (button).dataset.key ?? "");
      });
    }
  }
}
