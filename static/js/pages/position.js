// The position lab page: wires the controls to the three endpoints and hands the answers to the views.
// api.js fetches, store.js keeps the state in the URL, views/* draw; every number is the server's.
// Each loader has its own sequence number and AbortController, so a late answer never overwrites a
// newer one.

import * as api from "../lib/api.js";
import { loadPlotly } from "../lib/plot.js";
import * as store from "../lib/store.js";
import { markTokens, renderTokens } from "../views/tokens.js";
import { renderLearned } from "../views/learnedpos.js";
import { DIVERGING_CSS, diffRange, renderPermutationColumn, sci } from "../views/permutation.js";
import { renderClock, renderCurves } from "../views/ropeclock.js";
import { renderOrderColumn } from "../views/wordorder.js";

store.define({
  perm: { type: "string", def: "shuffle" }, // shuffle | reverse | explicit
  seed: { type: "int", def: 0 },
  order: { type: "string", def: "" }, // explicit order, comma-separated
  causal: { type: "bool", def: false },
  pa: { type: "string", def: "" },
  pb: { type: "string", def: "" },
  focus: { type: "int", def: null },
  clock: { type: "int", def: 0 }, // the clock's position
  pi: { type: "int", def: 0 }, // interpolation scale = the model's own scale x 2^pi
  qk: { type: "string", def: "model" },
});

const SCALE_STOPS = 6;
const TYPING_DEBOUNCE_MS = 400;
const PLAY_STEP_MS = 70;

const $ = (id) => document.getElementById(id);
const ui = {
  prompt: $("perm-prompt"),
  layer: $("perm-layer"),
  head: $("perm-head"),
  shuffle: $("perm-shuffle"),
  seedLabel: $("perm-seed-label"),
  reverse: $("perm-reverse"),
  reset: $("perm-reset"),
  causal: $("causal-toggle"),
  original: $("perm-original"),
  shuffled: $("perm-shuffled"),
  permStatus: $("perm-status"),
  causalNote: $("causal-note"),
  cols: { false: $("perm-off"), true: $("perm-on") },
  readout: $("perm-readout"),
  diffMin: $("diff-min"),
  diffMax: $("diff-max"),
  orderA: $("order-a"),
  orderB: $("order-b"),
  orderTokens: $("order-tokens"),
  orderCols: { false: $("order-off"), true: $("order-on") },
  orderCausalNote: $("order-causal-note"),
  orderLastNote: $("order-last-note"),
  ropeTitle: $("rope-title"),
  ropeMessage: $("rope-message"),
  ropeBody: $("rope-body"),
  learnedBody: $("learned-body"),
  play: $("clock-play"),
  clockSlider: $("clock-slider"),
  clockPos: $("clock-pos"),
  scaleSlider: $("scale-slider"),
  scaleOut: $("scale-out"),
  scaleNote: $("scale-note"),
  clock: $("clock"),
  clockReadout: $("clock-readout"),
  ropeLayer: $("rope-layer"),
  ropeHead: $("rope-head"),
  qk: [...document.querySelectorAll("input[name=qk]")],
  curves: $("curves"),
  curvesCaption: $("curves-caption"),
  learnedSim: $("learned-sim"),
  learnedPca: $("learned-pca"),
};
const errors = { perm: $("perm-error"), order: $("order-error"), rope: $("rope-error") };

let models = null;
let permData = null;
let orderData = null;
let ropeData = null;
let pendingSwap = null; // first clicked token of a swap, as a position in the shuffled strip
let clockIndex = 0;
let playTimer = null;
const seqs = { perm: 0, order: 0, rope: 0 };
const ctls = {};

function showError(key, message) {
  errors[key].textContent = message || "";
  errors[key].hidden = !message;
}

function modelInfo() {
  const name = store.get().model || models.default;
  return models.models.find((m) => m.name === name) || models.models[0];
}

// One request at a time per section: a newer one aborts the older, a late answer is dropped.
async function fetchFor(key, call, body) {
  ctls[key]?.abort();
  const ctl = new AbortController();
  ctls[key] = ctl;
  const seq = ++seqs[key];
  try {
    const data = await call(body, { signal: ctl.signal });
    if (seq !== seqs[key]) return null;
    showError(key, "");
    return data;
  } catch (e) {
    if (e.name === "AbortError" || seq !== seqs[key]) return null;
    showError(key, e.message);
    return null;
  }
}

function fillSelect(select, count, value) {
  const options = Array.from({ length: count }, (_, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = String(i);
    return o;
  });
  select.replaceChildren(...options);
  select.value = String(Math.min(value ?? 0, count - 1));
}

function layerHead() {
  const m = modelInfo();
  const st = store.get();
  return { layer: Math.min(st.layer ?? 0, m.n_layer - 1), head: Math.min(st.head ?? 0, m.n_head - 1) };
}

// ---- the permutation experiment ----

function permutationBody() {
  const st = store.get();
  const body = { prompt: st.prompt, model: st.model || null, ...layerHead(), permutation: st.perm, seed: st.seed };
  if (st.perm === "explicit") body.order = st.order.split(",").map(Number);
  return body;
}

async function loadPermutation() {
  ui.permStatus.textContent = "Running both orders, with position off and on…";
  const data = await fetchFor("perm", api.permutation, permutationBody());
  if (!data) {
    ui.permStatus.textContent = "";
    return;
  }
  permData = data;
  pendingSwap = null;
  drawPermutation();
}

function describePermutation(st) {
  if (st.perm === "shuffle") return `shuffle, seed ${st.seed}`;
  if (st.perm === "reverse") return "reversed";
  return "your order";
}

function drawPermutation() {
  const data = permData;
  if (!data) return;
  const st = store.get();
  const causal = st.causal;
  ui.seedLabel.textContent = describePermutation(st);
  renderTokens(ui.original, data.tokens, {
    onHover: (i) => markTokens(ui.shuffled, { hover: i === null ? null : data.inverse[i] }),
  });
  renderTokens(ui.shuffled, data.permuted_tokens, {
    selected: pendingSwap,
    onHover: (k) => markTokens(ui.original, { hover: k === null ? null : data.permutation[k] }),
    onSelect: onSwapClick,
  });
  const identity = data.permutation.every((p, k) => p === k);
  ui.permStatus.textContent = identity
    ? "This is the original order: nothing moved, so every difference is exactly 0. Shuffle, reverse or swap."
    : `Layer ${data.layer}, head ${data.head} (reads key/value head ${data.kv_head}), ${data.n} tokens, ` +
      `causal mask ${causal ? "on" : "off"}. Each map: rows are the token looking, columns the token looked at.`;
  ui.causalNote.textContent = data.causal_note;
  ui.causalNote.hidden = !causal;
  document.querySelector("#perm-on .positional").textContent = data.positional === "rope" ? "RoPE" : "learned";
  const mapPx = Math.min(240, Math.floor((ui.cols.false.clientWidth - 40) / 3));
  const conds = [false, true].map((p) => data.conditions.find((c) => c.position === p && c.causal === causal));
  const range = diffRange(conds);
  ui.diffMin.textContent = `−${range.toPrecision(2)}`;
  ui.diffMax.textContent = `+${range.toPrecision(2)}`;
  conds.forEach((cond) => {
    renderPermutationColumn(ui.cols[cond.position], cond, data, { mapPx, range, onHover: (i, j) => readCell(cond, i, j) });
  });
}

function readCell(cond, i, j) {
  if (i === null) {
    ui.readout.textContent = "Hover a map to read a cell.";
    return;
  }
  const t = permData.tokens;
  ui.readout.textContent =
    `position ${cond.position ? "on" : "off"} · query ${i} ${t[i]} → key ${j} ${t[j]} · ` +
    `original ${cond.original[i][j].toFixed(5)} · shuffled, put back ${cond.reordered[i][j].toFixed(5)} · ` +
    `difference ${sci(cond.diff[i][j])}`;
}

function onSwapClick(k) {
  if (pendingSwap === null || pendingSwap === k) {
    pendingSwap = pendingSwap === k ? null : k;
    markTokens(ui.shuffled, { selected: pendingSwap });
    ui.permStatus.textContent =
      pendingSwap === null ? "" : `Swap ${permData.permuted_tokens[k]} with… (click another token)`;
    return;
  }
  const order = [...permData.permutation];
  [order[pendingSwap], order[k]] = [order[k], order[pendingSwap]];
  pendingSwap = null;
  store.set({ perm: "explicit", order: order.join(",") });
}

// ---- dog bites man ----

async function loadOrder() {
  const st = store.get();
  const body = { prompt_a: st.pa || ui.orderA.dataset.default, prompt_b: st.pb || ui.orderB.dataset.default };
  Object.assign(body, { model: st.model || null, focus: st.focus, top_k: 5 });
  const data = await fetchFor("order", api.wordOrder, body);
  if (!data) return;
  orderData = data;
  drawOrder();
}

function drawOrder() {
  const data = orderData;
  if (!data) return;
  const causal = store.get().causal;
  renderTokens(ui.orderTokens, data.tokens_a, { selected: data.focus, onSelect: (i) => store.set({ focus: i }) });
  for (const position of [false, true]) {
    const cond = data.conditions.find((c) => c.position === position && c.causal === causal);
    const name = data.positional === "rope" ? "RoPE" : "learned positions";
    renderOrderColumn(ui.orderCols[position], cond, data, { title: position ? `Position on (${name})` : "Position off" });
  }
  ui.orderCausalNote.textContent = data.notes.causal;
  ui.orderCausalNote.hidden = !causal;
  ui.orderLastNote.textContent = data.notes.last;
}

// ---- RoPE clock ----

function scaleFor(index) {
  return modelInfo().rope_scale * 2 ** index;
}

async function loadRope() {
  const st = store.get();
  const m = modelInfo();
  const body = { model: st.model || null, source: st.qk, max_offset: 128 };
  if (m.positional === "rope") {
    Object.assign(body, { scale: scaleFor(st.pi), prompt: st.prompt, ...layerHead() });
  }
  const data = await fetchFor("rope", api.rope, body);
  if (!data) return;
  ropeData = data;
  ui.ropeMessage.textContent = data.message;
  const learned = data.positional === "learned";
  ui.ropeTitle.textContent = learned ? "Learned positions: a vector per position, no clock" : "RoPE: a clock with many hands";
  ui.ropeBody.hidden = learned;
  ui.learnedBody.hidden = !learned;
  if (learned) {
    await renderLearned(ui.learnedSim, ui.learnedPca, data.learned);
    return;
  }
  const { clock } = data;
  ui.clockSlider.max = String(clock.positions.length - 1);
  clockIndex = nearestIndex(clock.positions, store.get().clock);
  ui.scaleOut.textContent = `${clock.scale}`;
  ui.scaleNote.textContent =
    clock.scale === clock.trained_scale
      ? `the model's own: positions 0–${clock.context_length - 1} are what it trained on`
      : `hands ${(clock.scale / clock.trained_scale).toFixed(0)}× slower: positions 0–` +
        `${Math.round(clock.trained_positions) - 1} now reuse the angles training saw`;
  drawClock();
  await renderCurves(ui.curves, data.curves, { scale: clock.scale, trainedScale: clock.trained_scale });
  const c = data.curves;
  ui.curvesCaption.textContent =
    `${c.detail}. The ${c.key_positions.length} curves (key at positions ${c.key_positions.join(", ")}) ` +
    `differ by at most ${sci(c.spread)}: the score depends only on the offset m − n, not on where the pair sits.`;
}

function nearestIndex(positions, p) {
  let best = 0;
  for (let i = 0; i < positions.length; i++) if (Math.abs(positions[i] - p) < Math.abs(positions[best] - p)) best = i;
  return best;
}

function drawClock() {
  const { clock } = ropeData;
  ui.clockSlider.value = String(clockIndex);
  const p = clock.positions[clockIndex];
  ui.clockPos.textContent = String(p);
  renderClock(ui.clock, clock, clockIndex);
  const deg = (a) => `${((a * 180) / Math.PI).toFixed(1)}°`;
  const last = clock.angles[0].length - 1;
  const beyond = p > clock.trained_positions;
  ui.clockReadout.textContent =
    `position ${p} · fastest hand ${deg(clock.angles[clockIndex][0])} (a turn every ${clock.periods[0].toFixed(1)} ` +
    `positions) · slowest hand ${deg(clock.angles[clockIndex][last])} (a turn every ` +
    `${Math.round(clock.periods[last]).toLocaleString("en")})` +
    (beyond ? " · beyond what training saw: orange hands point where the model has never looked" : "");
}

function setPlaying(on) {
  clearInterval(playTimer);
  playTimer = null;
  ui.play.setAttribute("aria-pressed", String(on));
  ui.play.textContent = on ? "Pause" : "Play";
  if (on) {
    playTimer = setInterval(() => {
      if (!ropeData?.clock) return;
      clockIndex = (clockIndex + 1) % ropeData.clock.positions.length;
      drawClock();
    }, PLAY_STEP_MS);
  } else if (ropeData?.clock) {
    store.set({ clock: ropeData.clock.positions[clockIndex] }, { history: "replace" });
  }
}

// ---- wiring ----

function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

const typedPrompt = debounce(() => {
  const st = store.get();
  // An explicit order belongs to the old prompt's tokens; a new prompt starts from a shuffle.
  store.set({ prompt: ui.prompt.value, ...(st.perm === "explicit" ? { perm: "shuffle" } : {}) }, { history: "replace" });
}, TYPING_DEBOUNCE_MS);
ui.prompt.addEventListener("input", typedPrompt);
ui.layer.addEventListener("change", () => store.set({ layer: Number(ui.layer.value) }));
ui.head.addEventListener("change", () => store.set({ head: Number(ui.head.value) }));
ui.ropeLayer.addEventListener("change", () => store.set({ layer: Number(ui.ropeLayer.value) }));
ui.ropeHead.addEventListener("change", () => store.set({ head: Number(ui.ropeHead.value) }));
ui.shuffle.addEventListener("click", () => {
  const st = store.get();
  store.set({ perm: "shuffle", seed: st.perm === "shuffle" ? st.seed + 1 : st.seed });
});
ui.reverse.addEventListener("click", () => store.set({ perm: "reverse" }));
ui.reset.addEventListener("click", () => {
  if (!permData) return;
  store.set({ perm: "explicit", order: permData.tokens.map((_, i) => i).join(",") });
});
ui.causal.addEventListener("change", () => store.set({ causal: ui.causal.checked }));
const typedOrder = debounce(() => store.set({ pa: ui.orderA.value, pb: ui.orderB.value, focus: null }, { history: "replace" }), TYPING_DEBOUNCE_MS);
ui.orderA.addEventListener("input", typedOrder);
ui.orderB.addEventListener("input", typedOrder);
ui.play.addEventListener("click", () => setPlaying(!playTimer));
ui.clockSlider.addEventListener("input", () => {
  if (!ropeData?.clock) return;
  setPlaying(false);
  clockIndex = Number(ui.clockSlider.value);
  drawClock();
  store.set({ clock: ropeData.clock.positions[clockIndex] }, { history: "replace" });
});
ui.scaleSlider.addEventListener("input", () => {
  ui.scaleOut.textContent = String(scaleFor(Number(ui.scaleSlider.value)));
});
ui.scaleSlider.addEventListener("change", () => store.set({ pi: Number(ui.scaleSlider.value) }));
for (const r of ui.qk) r.addEventListener("change", () => r.checked && store.set({ qk: r.value }));
window.addEventListener("atlas:presenter", () => {
  drawPermutation();
  drawOrder();
  if (ropeData?.clock) drawClock();
});

function syncControls() {
  const st = store.get();
  const m = modelInfo();
  const { layer, head } = layerHead();
  for (const [sel, count, v] of [[ui.layer, m.n_layer, layer], [ui.head, m.n_head, head],
    [ui.ropeLayer, m.n_layer, layer], [ui.ropeHead, m.n_head, head]]) fillSelect(sel, count, v);
  if (document.activeElement !== ui.prompt) ui.prompt.value = st.prompt;
  if (document.activeElement !== ui.orderA) ui.orderA.value = st.pa || ui.orderA.dataset.default;
  if (document.activeElement !== ui.orderB) ui.orderB.value = st.pb || ui.orderB.dataset.default;
  ui.causal.checked = st.causal;
  ui.scaleSlider.value = String(st.pi);
  for (const r of ui.qk) r.checked = r.value === st.qk;
}

const PERM_KEYS = ["prompt", "model", "layer", "head", "perm", "seed", "order"];
const ORDER_KEYS = ["model", "pa", "pb", "focus"];
const ROPE_KEYS = ["model", "pi", "qk", "prompt", "layer", "head"];

store.subscribe((st, changed) => {
  syncControls();
  const any = (keys) => keys.some((k) => changed.has(k));
  if (any(PERM_KEYS)) loadPermutation();
  else if (changed.has("causal")) drawPermutation();
  if (any(ORDER_KEYS)) loadOrder();
  else if (changed.has("causal")) drawOrder();
  if (any(ROPE_KEYS)) loadRope();
  else if (changed.has("clock") && ropeData?.clock) {
    clockIndex = nearestIndex(ropeData.clock.positions, st.clock);
    drawClock();
  }
});

async function init() {
  document.querySelector(".ramp.diverging").style.background = DIVERGING_CSS;
  try {
    models = await api.getModels();
  } catch (e) {
    showError("perm", e.message);
    return;
  }
  if (!store.get().prompt) store.set({ prompt: ui.prompt.dataset.default }, { history: "replace" });
  const maxScale = SCALE_STOPS - 1;
  ui.scaleSlider.max = String(maxScale);
  if (store.get().pi > maxScale) store.set({ pi: maxScale }, { history: "replace" });
  syncControls();
  loadPlotly().catch((e) => showError("rope", e.message));
  await Promise.all([loadPermutation(), loadOrder(), loadRope()]);
  document.body.dataset.ready = "1";
}

init();
