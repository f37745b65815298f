// RoPE stretched: loss by position past the training length, with and without position interpolation.
// Computed once per model on the server (tens of seconds the first time), so it is fetched only when
// the panel comes into view, and fetched again if the server says another computation is running.

import * as api from "../../lib/api.js";
import { byId, onFirstSight, showError } from "../../lib/dom.js";
import * as store from "../../lib/store.js";
import { renderNoTable, renderStretch } from "../../views/stretch.js";

const RETRY_MS = 5000;

const ui = {
  panel: byId("stretch-panel"),
  title: byId("stretch-title"),
  message: byId("stretch-message"),
  sentence: byId("stretch-sentence"),
  status: byId("stretch-status"),
  plot: byId("stretch-plot"),
  table: byId("stretch-table"),
  error: byId("stretch-error"),
};

let data = null;
let seen = false;
let asked; // the model (null: the default) of the request in flight or answered; undefined: none yet

export async function load() {
  if (!seen) return;
  const model = store.get().model || null;
  if (asked === model) return;
  asked = model;
  ui.status.textContent =
    "Computing on the server: the model reads held-out text 4x longer than it trained on, at each scale " +
    "(once per model; later visits get it at once)…";
  try {
    const answer = await api.ropeStretch({ model });
    if (asked !== model) return;
    data = answer;
    showError(ui.error, null);
    draw();
  } catch (e) {
    if (asked !== model) return;
    asked = undefined;
    if (e.status === 503) {
      ui.status.textContent = `${e.message} Trying again by itself.`;
      setTimeout(load, RETRY_MS);
      return;
    }
    ui.status.textContent = "";
    showError(ui.error, e.message);
  }
}

export function draw() {
  if (!data) return;
  ui.title.textContent = data.applies
    ? "RoPE stretched: reading past the training length"
    : data.positional === "learned"
      ? "Past the training length: a learned table has no row to read"
      : "Past the training length: no positions to stretch";
  ui.message.textContent = data.message;
  ui.sentence.textContent = data.sentence;
  ui.plot.hidden = !data.applies;
  ui.table.hidden = data.applies;
  if (data.applies) {
    ui.status.textContent = `Held-out text: ${data.text}.`;
    renderStretch(ui.plot, data)
      .then(() => {
        ui.panel.dataset.ready = "1";
      })
      .catch((e) => showError(ui.error, `The chart could not be drawn: ${e.message}`));
  } else {
    ui.status.textContent = "";
    ui.table.hidden = data.positional !== "learned";
    if (data.positional === "learned") renderNoTable(ui.table, data);
    ui.panel.dataset.ready = "1";
  }
}

export function onChange(st, changed) {
  if (changed.has("model")) {
    ui.panel.dataset.ready = "";
    load();
  }
}

export function mount() {
  onFirstSight(ui.panel, () => {
    seen = true;
    load();
  });
}
