// What the position lab's three parts share: their URL fields, the model they run on, the layer and
// head they look at, and how each part asks the server (newest request wins, failures in words).

import { latest } from "../../lib/api.js";
import { showError } from "../../lib/dom.js";
import * as store from "../../lib/store.js";

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

export const TYPING_DEBOUNCE_MS = 400;

let models = null;
export const setModels = (m) => {
  models = m;
};

export const servedModels = () => models.models;

export function modelInfo() {
  const name = store.get().model || models.default;
  return models.models.find((m) => m.name === name) || models.models[0];
}

export function layerHead() {
  const m = modelInfo();
  const st = store.get();
  return { layer: Math.min(st.layer ?? 0, m.n_layer - 1), head: Math.min(st.head ?? 0, m.n_head - 1) };
}

export function fillSelect(select, count, value) {
  const options = Array.from({ length: count }, (_, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = String(i);
    return o;
  });
  select.replaceChildren(...options);
  select.value = String(Math.min(value ?? 0, count - 1));
}

// One request at a time per part: a newer one aborts the older, a late answer is dropped (null).
export function requester(errorBox) {
  const req = latest();
  return async (call, body) => {
    const r = await req.run((signal) => call(body, { signal }));
    if (!r) return null;
    showError(errorBox, r.error ? r.error.message : "");
    return r.data ?? null;
  };
}
