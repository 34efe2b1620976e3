// The card for the pending interaction of the selected session: an approval
// (Allow / Deny + message / the agent's suggestions) or questions (options, single
// or multiple, and free text where accepted), answered with `answer`.
//
// A card is built once per interaction (id + created_at) and then left alone, so
// list pushes never wipe a half-typed answer; it goes as soon as the interaction
// clears, however it cleared (answered here, in the terminal, turn over, exit).

import { h, replaceChildren } from "./dom.js";
import { ConnectionLost, ServerError } from "./client/connection.js";
import { isAnswerable, MAX_MESSAGE_CHARS } from "./client/protocol.js";

/**
 * @typedef {import("./client/connection.js").Connection} Connection
 * @typedef {import("./store.js").SessionStore} SessionStore
 * @typedef {import("./client/protocol.js").Interaction} Interaction
 * @typedef {import("./client/protocol.js").Question} Question
 * @typedef {import("./client/protocol.js").SessionSummary} SessionSummary
 *
 * @typedef {object} Card
 * @property {string} key
 * @property {HTMLElement} root
 * @property {HTMLFieldSetElement} controls everything answerable, disabled as one
 * @property {HTMLElement} outcome
 * @property {HTMLElement} readOnlyNote
 * @property {boolean} settled answered (or found already answered): no more sending
 * @property {boolean} sending an answer is on its way
 * @property {number} shownAt when the card appeared (ms)
 */

/**
 * A card is not answerable until the agent's hook holds its request on the
 * server, a few milliseconds after the interaction itself shows up. Saying
 * "answer in the terminal" during that moment would be wrong, so the note waits.
 */
const READ_ONLY_GRACE_MS = 1500;

let cardCounter = 0;

export class InteractionCards {
  /**
   * @param {HTMLElement} container
   * @param {Connection} connection
   * @param {SessionStore} store
   */
  constructor(container, connection, store) {
    this.container = container;
    this.connection = connection;
    this.store = store;
    /** @type {string | null} */
    this.sessionId = null;
    /** @type {Card | null} */
    this.card = null;
    /** @type {number | undefined} */
    this._graceTimer = undefined;
    store.addEventListener("change", () => this.render());
  }

  /** @param {string | null} id */
  show(id) {
    this.sessionId = id;
    this.render();
  }

  render() {
    const session = this.store.get(this.sessionId);
    const pending = session?.pending_interaction ?? null;
    if (!session || !pending) {
      this._remove();
      return;
    }
    const key = `${session.id}/${pending.id}/${pending.created_at}`;
    if (this.card?.key !== key) {
      this._remove();
      this.card = this._build(key, session, pending);
      this.container.append(this.card.root);
      this.container.hidden = false;
    }
    this._setAnswerable(this.card, isAnswerable(session));
  }

  _remove() {
    this.card?.root.remove();
    this.card = null;
    this.container.hidden = true;
  }

  /**
   * @param {string} key
   * @param {SessionSummary} session
   * @param {Interaction} interaction
   * @returns {Card}
   */
  _build(key, session, interaction) {
    const n = ++cardCounter;
    const titleId = `card-title-${n}`;
    const outcome = h("p", { class: "card-outcome", role: "status", "aria-live": "polite" });
    const readOnlyNote = h("p", {
      class: "card-readonly",
      text: "Answer this in the terminal: the agent is not waiting for an answer from here.",
    });
    const controls = /** @type {HTMLFieldSetElement} */ (h("fieldset", { class: "card-controls" }));
    const kindText = interaction.kind === "approval" ? "Approval" : "Question";
    const meta = [kindText, interaction.tool, interaction.agent].filter(Boolean).join(" · ");
    const heading =
      interaction.kind === "approval"
        ? interaction.title || (interaction.tool ? `Allow ${interaction.tool}?` : "Approval needed")
        : questionTitle(interaction);
    const root = h(
      "section",
      {
        class: `card card-${interaction.kind}`,
        "aria-labelledby": titleId,
        dataset: { interaction: interaction.id },
      },
      h(
        "header",
        { class: "card-header" },
        h("span", { class: "card-meta", text: meta }),
        h("h3", { id: titleId, class: "card-title", text: heading }),
      ),
      rowsList(interaction),
      controls,
      readOnlyNote,
      outcome,
    );
    /** @type {Card} */
    const card = {
      key,
      root,
      controls,
      outcome,
      readOnlyNote,
      settled: false,
      sending: false,
      shownAt: Date.now(),
    };
    if (interaction.kind === "approval") this._approvalControls(card, session.id, interaction, n);
    else this._questionControls(card, session.id, interaction, n);
    return card;
  }

  /**
   * @param {Card} card
   * @param {string} sessionId
   * @param {Interaction} interaction
   * @param {number} n
   */
  _approvalControls(card, sessionId, interaction, n) {
    const messageId = `deny-message-${n}`;
    const message = /** @type {HTMLInputElement} */ (
      h("input", {
        id: messageId,
        type: "text",
        class: "deny-message",
        maxlength: MAX_MESSAGE_CHARS,
        autocomplete: "off",
        placeholder: "Why not? The agent reads this.",
      })
    );
    const send = (/** @type {Record<string, unknown>} */ fields, /** @type {string} */ done) =>
      this._send(card, { session: sessionId, interaction: interaction.id, ...fields }, done);
    const suggestions = (interaction.suggestions ?? []).map((text, index) =>
      h("button", {
        type: "button",
        class: "button suggestion",
        text,
        onclick: () => send({ behavior: "allow", suggestion: index }, `Allowed: ${text}.`),
      }),
    );
    replaceChildren(
      card.controls,
      h("legend", { class: "sr-only", text: "Your answer" }),
      h(
        "div",
        { class: "card-actions answer-only" },
        h("button", {
          type: "button",
          class: "button primary allow",
          text: "Allow",
          onclick: () => send({ behavior: "allow" }, "Allowed."),
        }),
        suggestions,
        h("button", {
          type: "button",
          class: "button danger deny",
          text: "Deny",
          onclick: () => {
            const text = message.value.trim();
            send(text ? { behavior: "deny", message: text } : { behavior: "deny" }, "Denied.");
          },
        }),
      ),
      h(
        "div",
        { class: "field deny-field answer-only" },
        h("label", { for: messageId, text: "Message with Deny (optional)" }),
        message,
      ),
    );
  }

  /**
   * @param {Card} card
   * @param {string} sessionId
   * @param {Interaction} interaction
   * @param {number} n
   */
  _questionControls(card, sessionId, interaction, n) {
    const questions = interaction.questions ?? [];
    const freeForm = Boolean(interaction.accepts_free_form);
    const parts = questions.map((question, qi) =>
      questionFields(question, `q${n}-${qi}`, freeForm),
    );
    const submit = () => {
      /** @type {Record<string, string[] | string>} */
      const answers = {};
      for (const part of parts) {
        const answer = part.value();
        if (answer === null) {
          this._outcome(card, "error", `Answer “${part.question.question}” first.`);
          part.focus();
          return;
        }
        answers[part.question.id] = answer;
      }
      this._send(
        card,
        { session: sessionId, interaction: interaction.id, answers },
        "Answer sent.",
      );
    };
    // A complaint ("answer … first") is stale as soon as the user changes something.
    card.controls.addEventListener("input", () => {
      if (card.outcome.dataset.kind === "error") this._outcome(card, "idle", "");
    });
    replaceChildren(
      card.controls,
      h("legend", { class: "sr-only", text: "Your answer" }),
      parts.map((part) => part.root),
      h(
        "div",
        { class: "card-actions answer-only" },
        h("button", {
          type: "button",
          class: "button primary send-answer",
          text: "Send answer",
          onclick: submit,
        }),
        h("button", {
          type: "button",
          class: "button decline",
          text: "Decline",
          onclick: () =>
            this._send(
              card,
              { session: sessionId, interaction: interaction.id, behavior: "deny" },
              "Declined.",
            ),
        }),
      ),
    );
  }

  /**
   * @param {Card} card
   * @param {Record<string, unknown>} fields
   * @param {string} done what to say once the agent has it
   */
  async _send(card, fields, done) {
    if (card.settled || card.sending) return;
    card.sending = true;
    card.controls.disabled = true;
    this._outcome(card, "pending", "Sending…");
    try {
      await this.connection.request({ type: "answer", ...fields });
      card.settled = true;
      this._outcome(card, "ok", `${done} The agent has your answer.`);
    } catch (error) {
      if (error instanceof ServerError && error.code === "gone") {
        card.settled = true;
        this._outcome(
          card,
          "gone",
          "Already answered — in the terminal or from another window — or no longer waiting.",
        );
      } else if (error instanceof ServerError && error.code === "not_answerable") {
        card.settled = true;
        this._outcome(card, "gone", "Only the terminal can answer this one.");
      } else if (error instanceof ConnectionLost) {
        this._outcome(card, "error", "Not sent: not connected to the server. Try again.");
      } else {
        const text = error instanceof Error ? error.message : String(error);
        this._outcome(card, "error", `Not accepted: ${text}`);
      }
    }
    card.sending = false;
    if (this.card === card) this.render();
  }

  /**
   * @param {Card} card
   * @param {"idle" | "pending" | "ok" | "gone" | "error"} kind
   * @param {string} text
   */
  _outcome(card, kind, text) {
    card.outcome.textContent = text;
    card.outcome.dataset.kind = kind;
  }

  /**
   * @param {Card} card
   * @param {boolean} answerable
   */
  _setAnswerable(card, answerable) {
    clearTimeout(this._graceTimer);
    // Read-only, the card still shows what is asked (options greyed out) but offers
    // no way to answer. Once answered from here, it keeps showing what was sent.
    const interactive = answerable || card.settled;
    card.root.dataset.readonly = String(!interactive);
    card.controls.disabled = !answerable || card.settled || card.sending;
    for (const el of card.root.querySelectorAll(".answer-only")) {
      /** @type {HTMLElement} */ (el).hidden = !interactive;
    }
    const wait = card.shownAt + READ_ONLY_GRACE_MS - Date.now();
    card.readOnlyNote.hidden = interactive || wait > 0;
    if (!interactive && wait > 0) this._graceTimer = setTimeout(() => this.render(), wait);
  }
}

/**
 * @param {Interaction} interaction
 * @returns {string}
 */
function questionTitle(interaction) {
  const questions = interaction.questions ?? [];
  if (interaction.title) return interaction.title;
  if (questions.length === 1) return questions[0].header || "A question for you";
  return `${questions.length || "Some"} questions for you`;
}

/**
 * The labelled rows of an approval (Command, File, …); monospace where marked.
 * @param {Interaction} interaction
 * @returns {HTMLElement | null}
 */
function rowsList(interaction) {
  const rows = interaction.rows ?? [];
  if (rows.length === 0) return null;
  return h(
    "dl",
    { class: "card-rows" },
    rows.map((row) => [
      h("dt", { text: row.label }),
      h("dd", {}, row.monospace ? h("pre", { class: "mono", text: row.value }) : row.value),
    ]),
  );
}

/**
 * One question: radio buttons (single select) or checkboxes (multi select), and a
 * free-text field when the agent takes one. Typing text clears the chosen options
 * and choosing an option clears the text, so the answer is never ambiguous.
 * @param {Question} question
 * @param {string} prefix unique id prefix
 * @param {boolean} freeForm
 * @returns {{
 *   root: HTMLElement,
 *   question: Question,
 *   value: () => string[] | string | null,
 *   focus: () => void,
 * }}
 */
function questionFields(question, prefix, freeForm) {
  const multi = Boolean(question.multi_select);
  const options = question.options ?? [];
  const hint = multi ? " (choose any)" : options.length ? " (choose one)" : "";
  /** @type {HTMLInputElement[]} */
  const inputs = [];
  const textId = `${prefix}-text`;
  const text = /** @type {HTMLInputElement} */ (
    h("input", {
      id: textId,
      type: "text",
      class: "free-text",
      maxlength: MAX_MESSAGE_CHARS,
      autocomplete: "off",
    })
  );
  const optionRows = options.map((option, oi) => {
    const id = `${prefix}-o${oi}`;
    const input = /** @type {HTMLInputElement} */ (
      h("input", { id, type: multi ? "checkbox" : "radio", name: prefix, value: option.label })
    );
    input.addEventListener("change", () => {
      if (input.checked) text.value = "";
    });
    inputs.push(input);
    return h(
      "div",
      { class: "option" },
      input,
      h(
        "label",
        { for: id },
        h("span", { class: "option-label", text: option.label }),
        option.description
          ? h("span", { class: "option-description", text: option.description })
          : null,
      ),
    );
  });
  text.addEventListener("input", () => {
    if (text.value) for (const input of inputs) input.checked = false;
  });
  const root = h(
    "fieldset",
    { class: "question" },
    h(
      "legend",
      {},
      question.header ? h("span", { class: "question-header", text: question.header }) : null,
      h("span", { class: "question-text", text: question.question }),
      h("span", { class: "question-hint", text: hint }),
    ),
    optionRows,
    freeForm || options.length === 0
      ? h(
          "div",
          { class: "option other answer-only" },
          h("label", { for: textId, text: options.length ? "Other answer:" : "Your answer:" }),
          text,
        )
      : null,
  );
  return {
    root,
    question,
    value() {
      const typed = text.value.trim();
      if (typed && (freeForm || options.length === 0)) return typed;
      const chosen = inputs.filter((input) => input.checked).map((input) => input.value);
      return chosen.length > 0 ? chosen : null;
    },
    focus() {
      (inputs[0] ?? text).focus();
    },
  };
}
