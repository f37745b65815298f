// Where position lives: a linear probe reads each token's position from the residual stream of every
// served model, so the three ways of knowing order (RoPE, learned vectors, only the causal mask) sit on
// one chart. Computed once per model on the server (seconds the first time), so fetched only when the
// panel comes into view, one model after another, and again if the server says it is busy.

import * as api from "../../lib/api.js";
import { byId, onFirstSight, showError } from "../../lib/dom.js";
import { positionName } from "../../lib/format.js";
import * as store from "../../lib/store.js";
import { MODEL_COLORS, renderProbe, renderProbeTable } from "../../views/probe.js";
import { servedModels } from "./lab.js";

const RETRY_MS = 3000;
const MAX_DEFAULT = 3; // served models probed without asking; more are a checkbox away

const ui = {
  panel: byId("probe-panel"),
  models: byId("probe-models"),
  sentences: byId("probe-sentences"),
  status: byId("probe-status"),
  plot: byId("probe-plot"),
  table: byId("probe-table"),
  error: byId("probe-error"),
};

const answers = new Map(); // model name -> its answer
let chosen = null; // names shown, in the served order
let seen = false;
let busy = false;

function defaults() {
  const names = servedModels().map((m) => m.name);
  if (names.length <= MAX_DEFAULT) return names;
  return [store.get().model || names[0]];
}

function renderChoices() {
  const labels = servedModels().map((m, i) => {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = m.name;
    box.checked = chosen.includes(m.name);
    box.addEventListener("change", () => {
      chosen = servedModels().map((s) => s.name).filter((n) => (n === m.name ? box.checked : chosen.includes(n)));
      draw();
      load();
    });
    const l = document.createElement("label");
    l.className = "check";
    l.style.setProperty("--swatch", MODEL_COLORS[i % MODEL_COLORS.length]);
    l.append(box, ` ${m.name} (${positionName(m.positional)})`);
    return l;
  });
  ui.models.replaceChildren(...labels);
}

// One model at a time: the server runs one probe at once anyway, and the first curve shows sooner.
export async function load() {
  if (!seen || busy) return;
  const next = chosen.find((n) => !answers.has(n));
  if (!next) {
    ui.status.textContent = chosen.length ? `Held-out text: ${answers.get(chosen[0]).text}.` : "Choose a model above.";
    return;
  }
  busy = true;
  ui.status.textContent =
    `Computing on the server: ${next} reads held-out stories with the mask on and off, and a probe is ` +
    "fitted at every point of its stream (once per model; later visits get it at once)…";
  try {
    answers.set(next, await api.positionProbe({ model: next }));
    showError(ui.error, null);
    busy = false;
    draw();
    load();
  } catch (e) {
    busy = false;
    if (e.status === 503) {
      ui.status.textContent = `${e.message} Trying again by itself.`;
      setTimeout(load, RETRY_MS);
      return;
    }
    chosen = chosen.filter((n) => n !== next);
    renderChoices();
    ui.status.textContent = "";
    showError(ui.error, `${next}: ${e.message}`);
  }
}

export function draw() {
  if (!chosen) return;
  const shown = chosen.filter((n) => answers.has(n)).map((n) => answers.get(n));
  ui.sentences.replaceChildren(
    ...shown.map((a) => {
      const p = document.createElement("p");
      const name = document.createElement("strong");
      name.textContent = `${a.model} (${positionName(a.positional)}): `;
      p.append(name, a.sentence);
      return p;
    }),
  );
  ui.plot.hidden = ui.table.hidden = !shown.length;
  if (!shown.length) return;
  renderProbeTable(ui.table.querySelector("div"), shown);
  renderProbe(ui.plot, shown)
    .then(() => {
      ui.panel.dataset.ready = chosen.every((n) => answers.has(n)) ? "1" : "";
    })
    .catch((e) => showError(ui.error, `The chart could not be drawn: ${e.message}`));
}

export function mount() {
  chosen = defaults();
  renderChoices();
  onFirstSight(ui.panel, () => {
    seen = true;
    load();
  });
}
