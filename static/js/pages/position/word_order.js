// Dog bites man: two sentences of the same tokens in another order; one token's final representation
// and the next-token predictions, with position off and on.

import * as api from "../../lib/api.js";
import { byId, debounce } from "../../lib/dom.js";
import { positionName } from "../../lib/format.js";
import * as store from "../../lib/store.js";
import { renderTokens } from "../../views/tokens.js";
import { renderOrderColumn } from "../../views/wordorder.js";
import { requester, TYPING_DEBOUNCE_MS } from "./lab.js";

const ui = {
  a: byId("order-a"),
  b: byId("order-b"),
  tokens: byId("order-tokens"),
  cols: { false: byId("order-off"), true: byId("order-on") },
  causalNote: byId("order-causal-note"),
  lastNote: byId("order-last-note"),
  error: byId("order-error"),
};

export const KEYS = ["model", "pa", "pb", "focus"];

let data = null;
const fetchOrder = requester(ui.error);

export async function load() {
  const st = store.get();
  const body = { prompt_a: st.pa || ui.a.dataset.default, prompt_b: st.pb || ui.b.dataset.default };
  Object.assign(body, { model: st.model || null, focus: st.focus, top_k: 5 });
  const answer = await fetchOrder(api.wordOrder, body);
  if (!answer) return;
  data = answer;
  draw();
}

export function draw() {
  if (!data) return;
  const causal = store.get().causal;
  renderTokens(ui.tokens, data.tokens_a, { selected: data.focus, onSelect: (i) => store.set({ focus: i }) });
  for (const position of [false, true]) {
    const cond = data.conditions.find((c) => c.position === position && c.causal === causal);
    const name = positionName(data.positional);
    renderOrderColumn(ui.cols[position], cond, data, { title: position ? `Position on (${name})` : "Position off" });
  }
  ui.causalNote.textContent = data.notes.causal;
  ui.causalNote.hidden = !causal;
  ui.lastNote.textContent = data.notes.last;
}

export function sync(st) {
  if (document.activeElement !== ui.a) ui.a.value = st.pa || ui.a.dataset.default;
  if (document.activeElement !== ui.b) ui.b.value = st.pb || ui.b.dataset.default;
}

export function onChange(st, changed) {
  if (KEYS.some((k) => changed.has(k))) load();
  else if (changed.has("causal")) draw();
}

export function mount() {
  const typed = debounce(
    () => store.set({ pa: ui.a.value, pb: ui.b.value, focus: null }, { history: "replace" }),
    TYPING_DEBOUNCE_MS,
  );
  ui.a.addEventListener("input", typed);
  ui.b.addEventListener("input", typed);
}
