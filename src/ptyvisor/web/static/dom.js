// Tiny DOM helpers. Everything the server sends (names, commands, interaction
// text) is untrusted, so it only ever goes in as text nodes or attribute values,
// never as HTML.

/**
 * @typedef {string | number | boolean | null | undefined | EventListener} AttrValue
 * @typedef {Node | string | null | undefined | false} Leaf
 * @typedef {Leaf | Leaf[] | Leaf[][]} Child lists (two deep) are flattened
 */

/**
 * Create an element. `attrs` keys starting with "on" add event listeners; `class`,
 * `text`, `dataset` and boolean attributes are handled; null/false values are skipped.
 * @param {string} tag
 * @param {Record<string, AttrValue | Record<string, string>>} [attrs]
 * @param {...Child} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else if (key === "class") {
      el.className = String(value);
    } else if (key === "text") {
      el.textContent = String(value);
    } else if (key === "dataset" && typeof value === "object") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

/**
 * @param {Element} parent
 * @param {Child[]} children
 */
function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.append(child);
  }
}

/**
 * Look up an element that index.html is known to contain.
 * @template {HTMLElement} T
 * @param {string} id
 * @returns {T}
 */
export function byId(id) {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`index.html lacks #${id}`);
  return /** @type {T} */ (el);
}

/**
 * Replace an element's children.
 * @param {Element} el
 * @param {...Child} children
 */
export function replaceChildren(el, ...children) {
  el.replaceChildren();
  append(el, children);
}
