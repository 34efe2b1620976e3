// The access token: taken from the URL `ptyvisor serve` printed, kept for this tab
// only, and removed from the address bar at once so that it is never bookmarked,
// shared in a screenshot, or sent in a Referer.

import { Connection } from "./client/connection.js";

const STORAGE_KEY = "ptyvisor.token";

/**
 * Move `?token=` from the URL into sessionStorage (a token in the URL replaces the
 * stored one) and return the tab's token, or null when there is none.
 * @returns {string | null}
 */
export function takeToken() {
  const url = new URL(location.href);
  if (url.searchParams.has("token")) {
    const fromUrl = url.searchParams.get("token") ?? "";
    url.searchParams.delete("token");
    history.replaceState(history.state, "", url.pathname + url.search + url.hash);
    if (fromUrl) sessionStorage.setItem(STORAGE_KEY, fromUrl);
    else sessionStorage.removeItem(STORAGE_KEY);
  }
  return sessionStorage.getItem(STORAGE_KEY);
}

/**
 * Ask the server whether `token` is the right one.
 * @param {string} token
 * @returns {Promise<"ok" | "refused" | "unreachable">}
 */
export async function checkToken(token) {
  try {
    const response = await fetch("/api/auth", {
      headers: { Authorization: `Bearer ${token}` },
      cache: "no-store",
    });
    if (response.status === 204 || response.ok) return "ok";
    if (response.status === 401 || response.status === 403) return "refused";
    return "unreachable";
  } catch {
    return "unreachable";
  }
}

/**
 * The page's connection to the server that served it, or to one of its contexts
 * (another host, through this server).
 * @param {string} token
 * @param {string | null} [context]
 * @returns {Connection}
 */
export function pageConnection(token, context = null) {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const path = context === null ? "/ws" : `/contexts/${encodeURIComponent(context)}`;
  return new Connection({
    url: `${scheme}${location.host}${path}`,
    token,
    checkToken: () => checkToken(token),
  });
}
