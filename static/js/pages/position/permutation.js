// The permutation experiment: shuffle the prompt, run both orders with position off and on (and the
// causal mask off and on), put the shuffled attention back in order and show what changed.

import * as api from "../../lib/api.js";
import { byId, debounce } from "../../lib/dom.js";
import { positionName } from "../../lib/format.js";
import * as store from "../../lib/store.js";
import { DIVERGING_CSS, diffRange, renderPermutationColumn, sci } from "../../views/permutation.js";
import { markTokens, renderTokens } from "../../views/tokens.js";
import { fillSelect, layerHead, modelInfo, requester, TYPING_DEBOUNCE_MS } from "./lab.js";

const ui = {
  prompt: byId("perm-prompt"),
  layer: byId("perm-layer"),
  head: byId("perm-head"),
  shuffle: byId("perm-shuffle"),
  seedLabel: byId("perm-seed-label"),
  reverse: byId("perm-reverse"),
  reset: byId("perm-reset"),
  causal: byId("causal-toggle"),
  original: byId("perm-original"),
  shuffled: byId("perm-shuffled"),
  status: byId("perm-status"),
  causalNote: byId("causal-note"),
  cols: { false: byId("perm-off"), true: byId("perm-on") },
  readout: byId("perm-readout"),
  diffMin: byId("diff-min"),
  diffMax: byId("diff-max"),
  error: byId("perm-error"),
};

const ROW_LABELS_PX = 64; // the first map's query-token labels (views/permutation.js draws them)

export const KEYS = ["prompt", "model", "layer", "head", "perm", "seed", "order"];
export const error = ui.error;

let data = null;
let pendingSwap = null; // first clicked token of a swap, as a position in the shuffled strip
const fetchPermutation = requester(ui.error);

function requestBody() {
  const st = store.get();
  const body = { prompt: st.prompt, model: st.model || null, ...layerHead(), permutation: st.perm, seed: st.seed };
  if (st.perm === "explicit") body.order = st.order.split(",").map(Number);
  return body;
}

export async function load() {
  ui.status.textContent = "Running both orders, with position off and on…";
  const answer = await fetchPermutation(api.permutation, requestBody());
  if (!answer) {
    ui.status.textContent = "";
    return;
  }
  data = answer;
  pendingSwap = null;
  draw();
}

function describePermutation(st) {
  if (st.perm === "shuffle") return `shuffle, seed ${st.seed}`;
  if (st.perm === "reverse") return "reversed";
  return "your order";
}

export function draw() {
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
  ui.status.textContent = identity
    ? "This is the original order: nothing moved, so every difference is exactly 0. Shuffle, reverse or swap."
    : `Layer ${data.layer}, head ${data.head} (reads key/value head ${data.kv_head}), ${data.n} tokens, ` +
      `causal mask ${causal ? "on" : "off"}. Each map: rows are the token looking, columns the token looked at.`;
  ui.causalNote.textContent = data.causal_note;
  ui.causalNote.hidden = !causal;
  document.querySelector("#perm-on .positional").textContent = data.positional === "learned" ? "learned" : positionName(data.positional);
  const mapPx = Math.min(240, Math.floor((ui.cols.false.clientWidth - 40 - ROW_LABELS_PX) / 3));
  const conds = [false, true].map((p) => data.conditions.find((c) => c.position === p && c.causal === causal));
  const range = diffRange(conds);
  ui.diffMin.textContent = `−${sci(range)}`;
  ui.diffMax.textContent = `+${sci(range)}`;
  conds.forEach((cond) => {
    renderPermutationColumn(ui.cols[cond.position], cond, data, { mapPx, range, onHover: (i, j) => readCell(cond, i, j) });
  });
}

function readCell(cond, i, j) {
  if (i === null) {
    ui.readout.textContent = "Hover a map to read a cell.";
    return;
  }
  const t = data.tokens;
  ui.readout.textContent =
    `position ${cond.position ? "on" : "off"} · query ${i} ${t[i]} → key ${j} ${t[j]} · ` +
    `original ${cond.original[i][j].toFixed(5)} · shuffled, put back ${cond.reordered[i][j].toFixed(5)} · ` +
    `difference ${sci(cond.diff[i][j])}`;
}

function onSwapClick(k) {
  if (pendingSwap === null || pendingSwap === k) {
    pendingSwap = pendingSwap === k ? null : k;
    markTokens(ui.shuffled, { selected: pendingSwap });
    ui.status.textContent = pendingSwap === null ? "" : `Swap ${data.permuted_tokens[k]} with… (click another token)`;
    return;
  }
  const order = [...data.permutation];
  [order[pendingSwap], order[k]] = [order[k], order[pendingSwap]];
  pendingSwap = null;
  store.set({ perm: "explicit", order: order.join(",") });
}

export function sync(st) {
  const m = modelInfo();
  const { layer, head } = layerHead();
  fillSelect(ui.layer, m.n_layer, layer);
  fillSelect(ui.head, m.n_head, head);
  if (document.activeElement !== ui.prompt) ui.prompt.value = st.prompt;
  ui.causal.checked = st.causal;
}

export function onChange(st, changed) {
  if (KEYS.some((k) => changed.has(k))) load();
  else if (changed.has("causal")) draw();
}

export function mount() {
  document.querySelector(".ramp.diverging").style.background = DIVERGING_CSS;
  if (!store.get().prompt) store.set({ prompt: ui.prompt.dataset.default }, { history: "replace" });
  const typed = debounce(() => {
    const st = store.get();
    // An explicit order belongs to the old prompt's tokens; a new prompt starts from a shuffle.
    store.set({ prompt: ui.prompt.value, ...(st.perm === "explicit" ? { perm: "shuffle" } : {}) }, { history: "replace" });
  }, TYPING_DEBOUNCE_MS);
  ui.prompt.addEventListener("input", typed);
  ui.layer.addEventListener("change", () => store.set({ layer: Number(ui.layer.value) }));
  ui.head.addEventListener("change", () => store.set({ head: Number(ui.head.value) }));
  ui.shuffle.addEventListener("click", () => {
    const st = store.get();
    store.set({ perm: "shuffle", seed: st.perm === "shuffle" ? st.seed + 1 : st.seed });
  });
  ui.reverse.addEventListener("click", () => store.set({ perm: "reverse" }));
  ui.reset.addEventListener("click", () => {
    if (!data) return;
    store.set({ perm: "explicit", order: data.tokens.map((_, i) => i).join(",") });
  });
  ui.causal.addEventListener("change", () => store.set({ causal: ui.causal.checked }));
}
