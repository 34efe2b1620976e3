// The page's keyboard shortcuts. xterm.js captures every key while the terminal
// has focus (Tab included), so these are the way out of it; they are documented
// in the sidebar and on the docs' web page (docs/web.md).
//
//   Ctrl+Shift+S   move focus to the session list
//   Ctrl+Shift+F   search the open terminal's output
//   Alt+1 … Alt+9  open the 1st … 9th session and focus its terminal

/**
 * @typedef {{kind: "sessions"} | {kind: "search"} | {kind: "open", index: number}} Shortcut
 */

/**
 * @param {KeyboardEvent} event
 * @returns {Shortcut | null}
 */
export function shortcutOf(event) {
  if (event.ctrlKey && event.shiftKey && !event.altKey && !event.metaKey) {
    if (event.code === "KeyS") return { kind: "sessions" };
    if (event.code === "KeyF") return { kind: "search" };
  }
  if (event.altKey && !event.ctrlKey && !event.shiftKey && !event.metaKey) {
    // `code`, not `key`: Alt+digit types other characters on some layouts.
    const match = /^Digit([1-9])$/.exec(event.code);
    if (match) return { kind: "open", index: Number(match[1]) - 1 };
  }
  return null;
}

/**
 * True for a key event the page handles itself (so xterm must ignore it).
 * @param {KeyboardEvent} event
 * @returns {boolean}
 */
export function isPageShortcut(event) {
  return shortcutOf(event) !== null;
}

/**
 * Call `handler` for every page shortcut, wherever the focus is. Capture phase:
 * the terminal and the form fields never get to swallow them.
 * @param {(shortcut: Shortcut) => void} handler
 */
export function onShortcut(handler) {
  window.addEventListener(
    "keydown",
    (event) => {
      const shortcut = shortcutOf(event);
      if (shortcut === null) return;
      // A modal dialog keeps the focus until it is closed.
      if (document.querySelector("dialog[open]")) return;
      event.preventDefault();
      event.stopPropagation();
      handler(shortcut);
    },
    { capture: true },
  );
}
