// Search in the open terminal's scrollback (xterm.js's search addon): a small bar
// over the terminal's top right, opened with Ctrl+Shift+F or the header's Search.
// Enter finds the match above (older output: a search starts from the newest),
// Shift+Enter the one below, Esc closes and gives the terminal its focus back.

import { byId } from "./dom.js";

/** @typedef {import("./terminal.js").TerminalPane} TerminalPane */

const DECORATIONS = {
  matchBackground: "#35506b",
  matchBorder: "#6cb6ff",
  matchOverviewRuler: "#6cb6ff",
  activeMatchBackground: "#f2c14e",
  activeMatchBorder: "#ffd166",
  activeMatchColorOverviewRuler: "#ffd166",
};

export class SearchBar {
  /** @param {TerminalPane} pane */
  constructor(pane) {
    this.pane = pane;
    this.form = /** @type {HTMLFormElement} */ (byId("search-bar"));
    this.input = /** @type {HTMLInputElement} */ (byId("search-input"));
    this.count = byId("search-count");
    /** @type {{dispose(): void} | null} */
    this._results = null;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.find("previous");
    });
    this.input.addEventListener("input", () => this.find("previous", true));
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        this.close();
      } else if (event.key === "Enter" && event.shiftKey) {
        event.preventDefault();
        this.find("next");
      }
    });
    byId("search-previous").addEventListener("click", () => this.find("previous"));
    byId("search-next").addEventListener("click", () => this.find("next"));
    byId("search-close").addEventListener("click", () => this.close());
  }

  get isOpen() {
    return !this.form.hidden;
  }

  open() {
    if (this.pane.term === null) return;
    this.form.hidden = false;
    this._watchResults();
    const selected = this.pane.term.getSelection();
    if (selected && !selected.includes("\n")) this.input.value = selected;
    this.input.focus();
    this.input.select();
    if (this.input.value) this.find("previous", true);
  }

  close() {
    if (!this.isOpen) return;
    this.form.hidden = true;
    this.pane.searchAddon?.clearDecorations();
    this._results?.dispose();
    this._results = null;
    this.count.textContent = "";
    this.pane.focus();
  }

  /** A different session was opened: its terminal is a new one. */
  reset() {
    this._results?.dispose();
    this._results = null;
    if (this.isOpen) {
      this.form.hidden = true;
      this.count.textContent = "";
    }
  }

  /**
   * @param {"next" | "previous"} direction next goes down (older to newer output)
   * @param {boolean} [incremental] typing: keep the current match if it still fits
   */
  find(direction, incremental = false) {
    const addon = this.pane.searchAddon;
    const text = this.input.value;
    if (addon === null) return;
    if (text === "") {
      addon.clearDecorations();
      this.count.textContent = "";
      return;
    }
    const options = { decorations: DECORATIONS, incremental };
    const found =
      direction === "next" ? addon.findNext(text, options) : addon.findPrevious(text, options);
    if (!found) this.count.textContent = "No matches";
  }

  _watchResults() {
    const addon = this.pane.searchAddon;
    if (addon === null || this._results !== null) return;
    this._results = addon.onDidChangeResults(({ resultIndex, resultCount }) => {
      if (resultCount === 0) this.count.textContent = "No matches";
      else if (resultIndex < 0) this.count.textContent = `${resultCount}+ matches`;
      else this.count.textContent = `${resultIndex + 1} of ${resultCount}`;
    });
  }
}
