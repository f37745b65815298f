// The cost lab: a log-scale slider over n drives /api/cost (the n^2 arithmetic, computed on the server
// and cached there, so sliding is cheap); "Measure on this server" runs /api/cost/timing on demand so
// the page itself loads fast. State (n, the FLOPs chart's model) lives in the URL.

import * as api from "../lib/api.js";
import { byId, showError } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtRatio, fmtWords } from "../lib/format.js";
import * as store from "../lib/store.js";
import { kvItem, renderFlops, renderKV, renderMemory, renderTiming } from "../views/cost.js";

store.define({
  n: { type: "int", def: 1024 },
  fm: { type: "string", def: "live" }, // whose FLOPs are charted: "live" or a reference key
});

const MIN_LOG2 = 4; // 16
const MAX_LOG2 = 17; // 131,072
const SLIDE_DEBOUNCE_MS = 60;

const ui = {
  slider: byId("n-slider"),
  out: byId("n-out"),
  presets: [...document.querySelectorAll(".n-presets [data-n]")],
  n2: byId("n2"),
  n2Bytes: byId("n2-bytes"),
  liveTotal: byId("live-total"),
  liveTotalLabel: byId("live-total-label"),
  status: byId("cost-status"),
  error: byId("cost-error"),
  chapter: document.querySelector("#chapter-table tbody"),
  models: document.querySelector("#models-table tbody"),
  flopsModel: byId("flops-model"),
  flopsCaption: byId("flops-caption"),
  flopsPlot: byId("flops-plot"),
  kvList: byId("kv-list"),
  kvPlot: byId("kv-plot"),
  measure: byId("measure"),
  timingMax: byId("timing-max"),
  timingSentence: byId("timing-sentence"),
  timingStatus: byId("timing-status"),
  timingError: byId("timing-error"),
  timingPlot: byId("timing-plot"),
  measureMemory: byId("measure-memory"),
  memorySentence: byId("memory-sentence"),
  memoryStatus: byId("memory-status"),
  memoryError: byId("memory-error"),
  memoryPlot: byId("memory-plot"),
  memoryTable: byId("memory-table"),
};

let current = null; // the /api/cost answer on screen
const costRequests = api.latest();
let timer = null;

const clampN = (n) => Math.min(2 ** MAX_LOG2, Math.max(2 ** MIN_LOG2, Math.round(n)));

function showN(n) {
  ui.out.textContent = fmtInt(n);
  ui.slider.setAttribute("aria-valuetext", `${fmtInt(n)} tokens`);
  for (const b of ui.presets) b.setAttribute("aria-pressed", String(Number(b.dataset.n) === n));
}

async function load() {
  const st = store.get();
  const n = clampN(st.n);
  const r = await costRequests.run((signal) => api.cost({ n, model: st.model || null }, { signal }));
  if (!r) return;
  showError(ui.error, r.error?.message);
  if (r.error) return;
  current = r.data;
  draw();
  document.body.dataset.ready = "1"; // for tests and scripts: the numbers on screen match the URL's n
}

function draw() {
  const d = current;
  const live = d.models[0];
  ui.n2.textContent = fmtInt(live.scores.per_head);
  ui.n2Bytes.textContent = fmtBytes(live.scores.bytes.fp32.per_head);
  ui.liveTotal.textContent = fmtWords(live.scores.total);
  ui.liveTotalLabel.textContent =
    `scores in ${d.model}: ${live.config.n_layer} layers × ${live.config.n_head} heads × n²`;
  ui.status.textContent =
    `n = ${fmtInt(d.n)} tokens. Doubling n multiplies every score count by 4; the KV cache only by 2 (it grows like n).`;
  drawChapter(d, live);
  drawModels(d);
  drawFlops(d);
  drawKV(d);
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.append(td);
  return td;
}

// The chapter's three rows as the server computed them, plus the slider's n in its place.
function drawChapter(d, live) {
  const rows = d.chapter.map((r) => ({ ...r, yours: r.n === d.n }));
  if (!rows.some((r) => r.yours)) {
    rows.push({ n: d.n, scores: live.scores.per_head, fp32_bytes: live.scores.bytes.fp32.per_head, yours: true });
    rows.sort((a, b) => a.n - b.n);
  }
  ui.chapter.replaceChildren(
    ...rows.map((r) => {
      const tr = document.createElement("tr");
      if (r.yours) tr.className = "yours";
      tr.dataset.n = String(r.n);
      cell(tr, fmtInt(r.n));
      cell(tr, fmtInt(r.scores));
      cell(tr, fmtBytes(r.fp32_bytes));
      return tr;
    }),
  );
}

function drawModels(d) {
  ui.models.replaceChildren(
    ...d.models.map((m) => {
      const tr = document.createElement("tr");
      if (m.live) tr.className = "live";
      const name = cell(tr, m.live ? `${m.name} (live)` : m.name, "name");
      name.title = `d_model ${m.config.d_model}, feed-forward ${m.config.d_ff}, vocab ${fmtInt(m.config.vocab_size)}`;
      cell(tr, `${m.config.n_layer} × ${m.config.n_head}`);
      cell(tr, fmtWords(m.scores.total));
      cell(tr, fmtBytes(m.scores.bytes.fp32.per_layer));
      cell(tr, `${fmtRatio(m.quadratic_to_feed_forward)}×`, m.quadratic_to_feed_forward >= 1 ? "over" : "");
      cell(tr, fmtBytes(m.kv_cache.bytes));
      return tr;
    }),
  );
}

function drawFlops(d) {
  const key = d.models.some((m) => m.key === store.get().fm) ? store.get().fm : "live";
  if (ui.flopsModel.options.length !== d.models.length) {
    ui.flopsModel.replaceChildren(
      ...d.models.map((m) => new Option(m.live ? `${m.name} (live)` : m.name, m.key)),
    );
  }
  ui.flopsModel.value = key;
  const i = d.models.findIndex((m) => m.key === key);
  const m = d.models[i];
  const r = m.quadratic_to_feed_forward;
  ui.flopsCaption.textContent =
    `${m.name}, one layer at n = ${fmtInt(d.n)}: the n² part of attention does ${fmtRatio(r)}× the work of the ` +
    `feed-forward. The feed-forward and the projections grow like n, the scores like n², so the n² part ` +
    `overtakes the feed-forward at n = ${fmtInt(m.crossover_n)} (dashed line).`;
  renderFlops(ui.flopsPlot, { ns: d.ns, curve: d.curves[i], model: m, n: d.n }).catch((e) =>
    showError(ui.error, `The FLOPs chart could not be drawn: ${e.message}`),
  );
}

function drawKV(d) {
  // GPT-2 small is left out of the list (it is plain multi-head like Llama-2-7B) but stays on the chart.
  ui.kvList.replaceChildren(...d.models.filter((m) => m.key !== "gpt2-small").map((m) => kvItem(m, d.n)));
  renderKV(ui.kvPlot, { ns: d.ns, curves: d.curves, models: d.models, n: d.n }).catch((e) =>
    showError(ui.error, `The KV-cache chart could not be drawn: ${e.message}`),
  );
}

// ---- measured ----

async function measure() {
  ui.measure.disabled = true;
  showError(ui.timingError, null);
  ui.timingStatus.textContent = "Measuring on the server: 16, 32, 64 … tokens, a few runs each (a few seconds)…";
  const t0 = performance.now();
  try {
    const maxN = Number(ui.timingMax.value) || null;
    const data = await api.costTiming({ model: store.get().model || null, max_n: maxN });
    ui.timingSentence.textContent = data.sentence;
    const skipped = data.skipped.length ? ` Left out to stay within the time budget: n = ${data.skipped.map(fmtInt).join(", ")}.` : "";
    ui.timingStatus.textContent =
      `${data.model} on ${data.device} with ${data.threads} threads, median of ${data.repeats} runs per size; ` +
      `took ${((performance.now() - t0) / 1000).toFixed(1)} s.${skipped} Other requests running at the same time add noise.`;
    ui.timingPlot.hidden = false;
    await renderTiming(ui.timingPlot, data);
  } catch (e) {
    showError(ui.timingError, e.message);
    ui.timingStatus.textContent = "";
  } finally {
    ui.measure.disabled = false;
  }
}

// Peak memory, explicit against fused, up to the timing's n (the same memory bound applies).
async function measureMemory() {
  ui.measureMemory.disabled = true;
  showError(ui.memoryError, null);
  ui.memoryStatus.textContent = "Measuring in a fresh process on the server: 64, 128, 256 … tokens (several seconds)…";
  try {
    const maxN = Number(ui.timingMax.value) || null;
    const data = await api.costMemory({ model: store.get().model || null, max_n: maxN });
    ui.memorySentence.textContent = data.sentence;
    ui.memoryStatus.textContent =
      `${data.model} on ${data.device} with ${data.threads} threads; measured: ${data.method}; took ${data.seconds.toFixed(1)} s.`;
    ui.memoryTable.hidden = false;
    ui.memoryTable.tBodies[0].replaceChildren(
      ...data.ns.map((n, i) => {
        const tr = document.createElement("tr");
        cell(tr, fmtInt(n));
        cell(tr, fmtBytes(data.explicit[i]));
        cell(tr, fmtBytes(data.fused[i]));
        cell(tr, fmtBytes(data.predicted[i]));
        return tr;
      }),
    );
    ui.memoryPlot.hidden = false;
    await renderMemory(ui.memoryPlot, data);
  } catch (e) {
    showError(ui.memoryError, e.message);
    ui.memoryStatus.textContent = "";
  } finally {
    ui.measureMemory.disabled = false;
  }
}

// The timing ladder's top: powers of two up to what the server times for this model (its memory
// bound: heads x n² x 4 bytes x 2), 2,048 by default (a few seconds on 2 CPU cores; every doubling
// costs about 4x more).
async function fillTimingMax() {
  let cap = 2048;
  try {
    const info = await api.getModels();
    const model = info.models.find((m) => m.name === (store.get().model || info.default));
    cap = model ? model.max_timing_n : info.limits.max_timing_n;
  } catch {
    // keep 2,048: the server answers 422 with its real limit if that is too much
  }
  const sizes = [];
  for (let n = 64; n <= cap; n *= 2) sizes.push(n);
  ui.timingMax.replaceChildren(...sizes.map((n) => new Option(fmtInt(n), String(n))));
  ui.timingMax.value = String(Math.min(2048, sizes[sizes.length - 1] ?? 2048));
}

// ---- wiring ----

function setN(n, history) {
  n = clampN(n);
  ui.slider.value = String(Math.log2(n));
  showN(n);
  store.set({ n }, { history });
}

ui.slider.addEventListener("input", () => {
  const n = clampN(2 ** Number(ui.slider.value));
  showN(n);
  clearTimeout(timer);
  timer = setTimeout(() => store.set({ n }, { history: "replace" }), SLIDE_DEBOUNCE_MS);
});
for (const b of ui.presets) b.addEventListener("click", () => setN(Number(b.dataset.n), "push"));
ui.flopsModel.addEventListener("change", () => store.set({ fm: ui.flopsModel.value }, { history: "replace" }));
ui.measure.addEventListener("click", measure);
ui.measureMemory.addEventListener("click", measureMemory);
window.addEventListener("atlas:presenter", () => current && draw());

store.subscribe((st, changed) => {
  if (changed.has("n") || changed.has("model")) {
    const n = clampN(st.n);
    ui.slider.value = String(Math.log2(n));
    showN(n);
    load();
  } else if (changed.has("fm") && current) {
    drawFlops(current);
  }
});

fillTimingMax();
const n0 = clampN(store.get().n);
ui.slider.value = String(Math.log2(n0));
showN(n0);
load();
