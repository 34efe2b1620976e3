// The page: log in with the tab's token, then wire the modules together. Each
// module owns one concept (connection, session list, terminal pane, interaction
// card, forms, notifications); this file only routes events between them.

import { checkToken, pageConnection, takeToken } from "./auth.js";
import { byId } from "./dom.js";
import { OtherHosts, pageContext, pageOn, THIS_MACHINE } from "./hosts.js";
import { badgeOf, commandText, duration, exitText, reasonText } from "./format.js";
import { ConfirmDialog, describeError, NewSessionDialog, QueueBox } from "./forms.js";
import { InteractionCards } from "./interaction.js";
import { KeyBar } from "./keybar.js";
import { onShortcut } from "./keys.js";
import { Notifier } from "./notify.js";
import { PastSessions, resumeAction } from "./past.js";
import { SearchBar } from "./search.js";
import { SessionList } from "./sessions.js";
import { SessionStore } from "./store.js";
import { layoutOf, TerminalPane } from "./terminal.js";
import { TimelineView } from "./timeline.js";

/**
 * @typedef {import("./client/protocol.js").ServerMessage} ServerMessage
 * @typedef {import("./client/protocol.js").SessionSummary} SessionSummary
 * @typedef {import("./client/protocol.js").Hello} Hello
 */

const SELECTED_KEY = "ptyvisor.selected";
const NARROW = window.matchMedia("(max-width: 760px)");

/** @param {"loading" | "unauthorised" | "app"} view */
function showView(view) {
  document.body.dataset.view = view;
  byId("loading-view").hidden = view !== "loading";
  byId("unauthorised-view").hidden = view !== "unauthorised";
  byId("app").hidden = view !== "app";
}

/** @param {string} reason */
function showUnauthorised(reason) {
  byId("unauthorised-reason").textContent = reason;
  byId("banner").hidden = true;
  document.title = "Not authorised — ptyvisor";
  showView("unauthorised");
}

class App {
  /**
   * @param {string} token
   * @param {string | null} context the host this page shows (null: this machine)
   */
  constructor(token, context) {
    this.connection = pageConnection(token, context);
    byId("host-label").textContent = `On ${context ?? THIS_MACHINE}`;
    this.hosts = new OtherHosts(byId("other-hosts"), token, context, (host, id) => {
      sessionStorage.setItem(SELECTED_KEY, id);
      location.assign(pageOn(host));
    });
    this.store = new SessionStore();
    /** @type {string | null} */
    this.selected = null;
    /** Whether the connection has ever been up: the banner is for losing it. */
    this.everOpen = false;
    /** @type {number | undefined} */
    this._toastTimer = undefined;
    this._liveKey = "";

    this.list = new SessionList(
      /** @type {HTMLUListElement} */ (byId("session-list")),
      byId("session-empty"),
      this.store,
    );
    this.pane = new TerminalPane(byId("terminal-host"), this.connection, this.store);
    this.search = new SearchBar(this.pane);
    this.keyBar = new KeyBar(byId("key-bar"), this.pane);
    this.timeline = new TimelineView((message) => this.connection.request(message));
    /** When the server we talk to started (hello): a new value means it restarted. */
    this._serverStartedAt = /** @type {number | null} */ (null);
    /** Sessions listed before a restart, to tell which came back; null when none pending. */
    this._beforeRestart = /** @type {Set<string> | null} */ (null);
    /** How many listed sessions the last restart took away (0: none). */
    this._lostInRestart = 0;
    this._timelineTicked = 0;
    this.cards = new InteractionCards(byId("cards"), this.connection, this.store);
    this.queue = new QueueBox(this.connection, this.store);
    this.confirm = new ConfirmDialog();
    this.newSession = new NewSessionDialog(this.connection, () => this.pane.proposedSize());
    this.notifier = new Notifier(
      this.store,
      /** @type {HTMLButtonElement} */ (byId("notify-button")),
      (id) => this.select(id, { focusTerminal: true }),
    );

    this.list.addEventListener("select", (event) => {
      const { id } = /** @type {CustomEvent<{id: string}>} */ (event).detail;
      this.select(id, { focusTerminal: true });
    });
    this.newSession.addEventListener("spawned", (event) => {
      const session = /** @type {CustomEvent<SessionSummary>} */ (event).detail;
      this.store.add(session);
      this.select(session.id, { focusTerminal: true });
    });
    this.pane.addEventListener("status", (event) => {
      const text = /** @type {CustomEvent<string>} */ (event).detail;
      const status = byId("pane-status");
      status.textContent = text;
      status.hidden = text === "";
    });
    this.pane.addEventListener("title", (event) => {
      const title = /** @type {CustomEvent<string>} */ (event).detail;
      const shown = byId("session-term-title");
      shown.textContent = title;
      shown.title = title;
      shown.hidden = title === "";
    });
    this.past = new PastSessions(
      /** @type {HTMLDetailsElement} */ (byId("past-sessions")),
      /** @type {HTMLUListElement} */ (byId("past-list")),
      (message) => this.connection.request(message),
      (session) => void this._resume(session),
    );
    this.store.addEventListener("change", () => this._storeChanged());

    const connection = this.connection;
    connection.addEventListener("open", (event) =>
      this._opened(/** @type {CustomEvent<Hello>} */ (event).detail),
    );
    connection.addEventListener("message", (event) =>
      this._message(/** @type {CustomEvent<ServerMessage>} */ (event).detail),
    );
    connection.addEventListener("state", () => this._connectionState());

    this._wireButtons();
    onShortcut((shortcut) => {
      if (shortcut.kind === "sessions") this.focusSessions();
      else if (shortcut.kind === "search") {
        if (this.selected !== null) this.search.open();
      } else {
        const session = this.store.ordered()[shortcut.index];
        if (session) this.select(session.id, { focusTerminal: true });
      }
    });
    setInterval(() => this._tick(), 250);
    NARROW.addEventListener("change", () => {
      this._setSidebarOpen(!NARROW.matches || this.selected === null);
    });

    // Read-only view for tests and debugging: what the terminal shows and where
    // the stream stands. Nothing here can change the page's state.
    Object.defineProperty(window, "ptyvisorDebug", {
      value: Object.freeze({
        terminalLines: () => this.pane.lines(),
        terminalCells: () => this.pane.cells(),
        layout: layoutOf,
        terminalSize: () => ({ cols: this.pane.term?.cols ?? 0, rows: this.pane.term?.rows ?? 0 }),
        position: () => this.pane.position,
        lastReplay: () => this.pane.lastReplay,
        lagged: () => this.pane.lagged,
        connectionState: () => this.connection.state,
        selected: () => this.selected,
        selection: () => this.pane.term?.getSelection() ?? "",
      }),
    });
  }

  start() {
    showView("app");
    this._setSidebarOpen(true);
    this.connection.start();
    void this.hosts.start();
  }

  /**
   * Open a session: attach its terminal and show its header, card and queue box.
   * @param {string | null} id
   * @param {{focusTerminal?: boolean}} [options]
   */
  select(id, options = {}) {
    if (id !== null && !this.store.sessions.has(id)) return;
    this.selected = id;
    if (id === null) sessionStorage.removeItem(SELECTED_KEY);
    else sessionStorage.setItem(SELECTED_KEY, id);
    this.list.select(id);
    byId("empty-view").hidden = id !== null;
    byId("session-view").hidden = id === null;
    if (id !== this.pane.sessionId) this.search.reset();
    // The layout first (on a phone the list folds away; the header fills in), so
    // the pane measures the size it will keep before the terminal attaches.
    if (NARROW.matches) this._setSidebarOpen(id === null);
    this.cards.show(id);
    this.queue.show(id);
    this.timeline.show(id);
    this._renderHeader();
    if (id === null) this.pane.close();
    else this.pane.open(id);
    if (id !== null && options.focusTerminal) this.pane.focus();
  }

  focusSessions() {
    if (NARROW.matches) this._setSidebarOpen(true);
    if (!this.list.focus()) byId("new-session-button").focus();
  }

  _wireButtons() {
    byId("new-session-button").addEventListener("click", () => this.newSession.open());
    byId("empty-new-session").addEventListener("click", () => this.newSession.open());
    byId("banner-retry").addEventListener("click", () => this.connection.retryNow());
    byId("sidebar-toggle").addEventListener("click", () => {
      this._setSidebarOpen(byId("sidebar-toggle").getAttribute("aria-expanded") !== "true");
    });
    byId("skip-terminal").addEventListener("click", (event) => {
      event.preventDefault();
      if (this.selected !== null) this.pane.focus();
      else byId("empty-new-session").focus();
    });
    byId("skip-sessions").addEventListener("click", (event) => {
      event.preventDefault();
      this.focusSessions();
    });
    byId("kill-button").addEventListener("click", () => this._kill());
    byId("search-button").addEventListener("click", () => this.search.open());
    byId("session-id").addEventListener("click", () => void this._copyId());
    byId("view-only-button").addEventListener("click", () => {
      this.pane.setViewOnly(!this.pane.viewOnly);
      this._renderHeader();
      if (!this.pane.viewOnly) this.pane.focus();
    });
    byId("resume-button").addEventListener("click", () => {
      const session = this.store.get(this.selected);
      if (session) void this._resume(session);
    });
    byId("close-button").addEventListener("click", () => this._close());
  }

  async _kill() {
    const session = this.store.get(this.selected);
    if (!session) return;
    const ok = await this.confirm.ask(
      `Kill “${session.name}”?`,
      "Its programs get SIGHUP, then SIGKILL after 2 seconds. The session stays in the " +
        "list with its output until you close it.",
      "Kill",
    );
    if (!ok) {
      byId("kill-button").focus();
      return;
    }
    await this._request({ type: "kill", session: session.id }, "Could not kill it");
    // Kill is disabled once the program has exited: keep the focus somewhere useful.
    byId("close-button").focus();
  }

  /**
   * Start an exited or past session again (see past.js) and open the new one.
   * @param {SessionSummary} session
   */
  async _resume(session) {
    const { rerun } = resumeAction(session);
    try {
      /** @type {{session: SessionSummary}} */
      const reply = await this.connection.request({
        type: "resume",
        session: session.id,
        rerun,
      });
      this.store.add(reply.session);
      this.select(reply.session.id, { focusTerminal: true });
    } catch (error) {
      this._toast(`Could not start it again: ${describeError(error)}`);
    }
  }

  async _close() {
    const session = this.store.get(this.selected);
    if (!session) return;
    const running = session.process.state !== "exited";
    const ok = await this.confirm.ask(
      `Close “${session.name}”?`,
      `${running ? "Its programs are killed and the" : "The"} session is removed for ` +
        "every client, with its output.",
      "Close session",
    );
    if (!ok) {
      byId("close-button").focus();
      return;
    }
    if (await this._request({ type: "close", session: session.id }, "Could not close it")) {
      this.store.remove(session.id);
      this.focusSessions();
    }
  }

  /**
   * @param {Record<string, unknown>} message
   * @param {string} failure what to say if it fails
   * @returns {Promise<boolean>}
   */
  async _request(message, failure) {
    try {
      await this.connection.request(message);
      return true;
    } catch (error) {
      this._toast(`${failure}: ${describeError(error)}`);
      return false;
    }
  }

  async _copyId() {
    const id = this.selected;
    if (id === null) return;
    const button = byId("session-id");
    if (await copyText(id)) {
      button.dataset.copied = "";
      setTimeout(() => delete button.dataset.copied, 1500);
    } else {
      this._toast(`Session id: ${id} (copying is not allowed here)`);
    }
  }

  /** @param {Hello} hello */
  _opened(hello) {
    const startedAt = hello.started_at ?? null;
    const previous = this._serverStartedAt;
    if (previous !== null && startedAt !== null && startedAt !== previous) {
      // A new server process: sessions that outlived the old one come back.
      this._beforeRestart = new Set(this.store.sessions.keys());
      this._toast("Server restarted — reattaching…");
    }
    this._serverStartedAt = startedAt;
    this.everOpen = true;
    this.newSession.setAgents(hello.agents ?? []);
    this.connection.send({ type: "watch_sessions" });
  }

  /** @param {ServerMessage} message */
  _message(message) {
    switch (message.type) {
      case "sessions":
        // The session-list stream only: a reply to a request of ours (the past
        // sessions' `list {all}`) is that request's business.
        if (message.req_id !== undefined && message.req_id !== null) break;
        this._afterRestart(message.sessions);
        this.store.replaceAll(message.sessions);
        this._restoreSelection();
        break;
      case "activity": {
        /** @type {Partial<SessionSummary>} */
        const fields = {
          activity: message.activity,
          pending_interaction: message.pending_interaction ?? null,
        };
        if ("answerable" in message) fields.answerable = message.answerable;
        // A session's agent is the one it was started as, else the one its extension
        // names (as the server's summary derives it). An attach's summary can be older
        // than this event (taken before a snapshot that the event came during) and
        // would otherwise leave the page without the agent the list already showed.
        const current = this.store.get(message.session);
        if (current && !current.agent && message.activity.agent) {
          fields.agent = message.activity.agent;
        }
        this.store.patch(message.session, fields);
        if (message.session === this.selected) this.timeline.changed();
        break;
      }
      case "process":
        this.store.patch(message.session, { process: message.process });
        if (message.session === this.selected) this.timeline.changed();
        break;
      case "resized":
        this.store.patch(message.session, { size: message.size });
        break;
      case "closed":
        this.store.remove(message.session);
        break;
      case "error":
        // Replies to our requests are handled where they were made.
        if (message.req_id === null || message.req_id === undefined) {
          this._toast(`Server: ${message.message}`);
        }
        break;
      default:
        break;
    }
  }

  /**
   * The first list from a restarted server: say what came back and what did not
   * (before the list replaces the store, which closes the pane of a session gone).
   * @param {SessionSummary[]} sessions
   */
  _afterRestart(sessions) {
    const before = this._beforeRestart;
    if (before === null) return;
    this._beforeRestart = null;
    const listed = new Set(sessions.map((session) => session.id));
    const gone = [...before].filter((id) => !listed.has(id));
    this._lostInRestart = gone.length;
    if (gone.length === 0) {
      this._toast(
        before.size > 0
          ? "Server restarted — every session kept running; reattached"
          : "Server restarted",
      );
    } else {
      const count = gone.length === 1 ? "1 session is" : `${gone.length} sessions are`;
      this._toast(`Server restarted — ${count} gone (see Past sessions)`);
    }
    this._renderEmptyNote();
  }

  _renderEmptyNote() {
    const note = byId("session-empty");
    note.textContent =
      this._lostInRestart > 0
        ? "The server restarted and the sessions this page showed are gone. " +
          "Past sessions below can be resumed; or start a new one."
        : "No sessions yet. Start one with “New session”.";
  }

  /** After a reload, reopen the session this tab had open (once it is listed). */
  _restoreSelection() {
    if (this.selected !== null) return;
    const remembered = sessionStorage.getItem(SELECTED_KEY);
    if (remembered !== null && this.store.sessions.has(remembered)) this.select(remembered);
  }

  _storeChanged() {
    // Past sessions change when live ones come or go (closed, or resumed).
    const live = [...this.store.sessions.keys()].sort().join(" ");
    if (live !== this._liveKey) {
      this._liveKey = live;
      void this.past.refresh().catch(() => {});
    }
    const count = this.store.needingInput();
    document.title =
      count > 0
        ? `(${count}) ptyvisor — ${count} need${count === 1 ? "s" : ""} input`
        : "ptyvisor";
    const total = this.store.sessions.size;
    byId("sidebar-count").textContent =
      count > 0 ? `${total} · ${count} need input` : String(total);
    if (this.selected !== null && this.store.loaded && !this.store.sessions.has(this.selected)) {
      const gone = this.selected;
      this.select(null);
      const lost = this._lostInRestart > 0;
      byId("empty-title").textContent = lost ? "Session gone" : "Session closed";
      byId("empty-text").textContent = lost
        ? `Session ${gone} did not survive the server's restart. Resume it from Past ` +
          "sessions, or start a new one."
        : `Session ${gone} was closed. Pick another one, or start a new one.`;
      return;
    }
    if (this._lostInRestart > 0 && this.store.sessions.size > 0) {
      this._lostInRestart = 0; // the list is in use again: "No sessions yet" from now on
      this._renderEmptyNote();
    }
    this._renderHeader();
  }

  _renderHeader() {
    const session = this.store.get(this.selected);
    if (!session) return;
    const badge = badgeOf(session);
    byId("session-title").textContent = session.name;
    const badgeEl = byId("session-badge");
    badgeEl.textContent = badge.label;
    badgeEl.className = `badge phase-${badge.phase}`;
    badgeEl.title = badge.title;
    const reason = reasonText(session);
    const reasonEl = byId("session-reason");
    reasonEl.textContent = reason ? `· ${reason}` : "";
    reasonEl.title = session.activity.reason ?? "";
    reasonEl.hidden = reason === "";
    const command = commandText(session);
    const commandEl = byId("session-command");
    commandEl.textContent = command;
    commandEl.title = command;
    byId("session-cwd").textContent = session.cwd;
    byId("session-id-text").textContent = session.id;
    const extra = [exitText(session), `${session.size.cols}×${session.size.rows}`];
    byId("session-extra").textContent = extra.filter(Boolean).join(" · ");
    /** @type {HTMLButtonElement} */ (byId("kill-button")).disabled =
      session.process.state === "exited";
    const watch = byId("view-only-button");
    watch.setAttribute("aria-pressed", String(this.pane.viewOnly));
    watch.textContent = this.pane.viewOnly ? "Watching only" : "Watch only";
    watch.hidden = session.process.state === "exited";
    const resume = /** @type {HTMLButtonElement} */ (byId("resume-button"));
    resume.hidden = session.process.state !== "exited";
    resume.textContent = resumeAction(session).label;
    this._tick();
  }

  _tick() {
    const session = this.store.get(this.selected);
    if (session) byId("session-time").textContent = duration(Date.now() - session.activity.since);
    if (Date.now() - this._timelineTicked >= 1000) {
      this._timelineTicked = Date.now();
      this.timeline.tick();
    }
    this._renderBanner();
  }

  _connectionState() {
    if (this.connection.state === "unauthorised") {
      this.pane.close();
      showUnauthorised(
        "The server no longer accepts this tab's token (it was restarted with a new one?).",
      );
      return;
    }
    this._renderBanner();
  }

  _renderBanner() {
    const state = this.connection.state;
    const banner = byId("banner");
    const down = state === "down" || (state === "connecting" && this.everOpen);
    banner.hidden = !down;
    document.body.classList.toggle("disconnected", down);
    if (!down) return;
    const lead = this.connection.restarting
      ? "Server restarting"
      : this.everOpen
        ? "Disconnected from the server"
        : "Cannot reach the server";
    const wait = Math.ceil((this.connection.retryAt - Date.now()) / 1000);
    const text =
      state === "connecting" || wait <= 0
        ? `${lead} — reconnecting…`
        : `${lead} — reconnecting in ${wait} s`;
    const bannerText = byId("banner-text");
    if (bannerText.textContent !== text) bannerText.textContent = text;
    /** @type {HTMLButtonElement} */ (byId("banner-retry")).disabled = state === "connecting";
  }

  /** @param {boolean} open */
  _setSidebarOpen(open) {
    byId("sidebar-toggle").setAttribute("aria-expanded", String(open));
    document.body.classList.toggle("sidebar-open", open);
  }

  /** @param {string} text */
  _toast(text) {
    const toast = byId("toast");
    toast.textContent = text;
    toast.hidden = false;
    clearTimeout(this._toastTimer);
    this._toastTimer = setTimeout(() => {
      toast.hidden = true;
    }, 8000);
  }
}

/**
 * Put `text` on the clipboard; false when the browser refuses (an insecure origin).
 * @param {string} text
 * @returns {Promise<boolean>}
 */
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

async function boot() {
  const token = takeToken();
  if (token === null) {
    showUnauthorised("This tab has no access token.");
    return;
  }
  const verdict = await checkToken(token);
  if (verdict === "refused") {
    showUnauthorised("The server did not accept this tab's token.");
    return;
  }
  // "unreachable": start anyway; the connection keeps retrying and says so.
  new App(token, pageContext()).start();
}

boot();
