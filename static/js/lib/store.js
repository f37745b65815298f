// Page state mirrored into the URL query string, so a copied link restores what was on screen and the
// browser's back/forward buttons step through it. Pages add their own fields with `define`.
//
//   set(patch, {history: "push" | "replace" | "none"})   push = a new history entry (a deliberate step),
//   subscribe(fn)   fn(state, changedKeys: Set, source: "set" | "pop")   replace = typing, sliders

const fields = new Map();
const listeners = new Set();
let state = {};

const parsers = {
  string: (s) => s,
  int: (s) => (/^-?\d+$/.test(s) ? Number(s) : undefined),
  float: (s) => (s.trim() !== "" && Number.isFinite(Number(s)) ? Number(s) : undefined),
  bool: (s) => (s === "1" || s === "true" ? true : s === "0" || s === "false" ? false : undefined),
};

const format = (type, v) => (type === "bool" ? (v ? "1" : "0") : String(v));

export function define(spec) {
  for (const [name, { type = "string", def = null }] of Object.entries(spec)) {
    if (!parsers[type]) throw new Error(`store: unknown type ${type} for ${name}`);
    fields.set(name, { type, def });
  }
  state = readUrl();
}

// The fields every page shares (the explorer's shared links depend on these names).
define({
  prompt: { type: "string", def: "" },
  model: { type: "string", def: "" },
  layer: { type: "int", def: null },
  head: { type: "int", def: null },
  view: { type: "string", def: "heatmap" },
});

function readUrl() {
  const q = new URLSearchParams(window.location.search);
  const out = {};
  for (const [name, { type, def }] of fields) {
    const raw = q.get(name);
    const v = raw === null ? undefined : parsers[type](raw);
    out[name] = v === undefined ? def : v;
  }
  return out;
}

function writeUrl(mode) {
  if (mode === "none") return;
  // Keep parameters this page does not know about (another page's fields survive a round trip).
  const q = new URLSearchParams(window.location.search);
  for (const [name, { type, def }] of fields) {
    const v = state[name];
    if (v === null || v === undefined || v === def) q.delete(name);
    else q.set(name, format(type, v));
  }
  const qs = q.toString();
  const url = `${window.location.pathname}${qs ? `?${qs}` : ""}${window.location.hash}`;
  if (url === `${window.location.pathname}${window.location.search}${window.location.hash}`) return;
  if (mode === "push") window.history.pushState(null, "", url);
  else window.history.replaceState(null, "", url);
}

export const get = () => ({ ...state });

export function set(patch, { history = "push" } = {}) {
  const changed = new Set();
  for (const [k, v] of Object.entries(patch)) {
    if (!fields.has(k)) throw new Error(`store: unknown field ${k}`);
    if (state[k] !== v) changed.add(k);
  }
  if (!changed.size) return changed;
  state = { ...state, ...patch };
  writeUrl(history);
  notify(changed, "set");
  return changed;
}

export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function notify(changed, source) {
  const snapshot = get();
  for (const fn of listeners) fn(snapshot, changed, source);
}

window.addEventListener("popstate", () => {
  const before = state;
  state = readUrl();
  const changed = new Set([...fields.keys()].filter((k) => before[k] !== state[k]));
  if (changed.size) notify(changed, "pop");
});
