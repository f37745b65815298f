// The head atlas page: heads listed by role, each drawn on the probe where its role shows, and a
// knock-out panel that shows the evidence (next-token probabilities and the repeated-sequence loss with
// and without the heads). api.js fetches, heads.js draws the shared pieces; no model math here.

import * as api from "../lib/api.js";
import { decodeAttention } from "../lib/attention.js";
import { headImage, headName, loadRoles, renderKnockout } from "../lib/heads.js";
import { el, showError } from "../lib/dom.js";
import * as store from "../lib/store.js";
import { drawThumb } from "../views/grid.js";

store.define({
  role: { type: "string", def: "" }, // show one role only; "" = every role
  mode: { type: "string", def: "zero" }, // zero or mean ablation
});

const TOP_K = 6;
const TYPING_DEBOUNCE_MS = 400;
const $ = (id) => document.getElementById(id);
const ui = {
  chips: $("role-chips"),
  status: $("atlas-status"),
  error: $("atlas-error"),
  roles: $("atlas-roles"),
  prompt: $("ko-prompt"),
  target: $("ko-target"),
  koStatus: $("ko-status"),
  result: $("ko-result"),
  koError: $("ko-error"),
  modes: [...document.querySelectorAll("#ko-panel [data-mode]")],
};

let roles = null; // GET /api/heads for the current model
let probes = new Map(); // probe key -> Promise of {data, att}
let target = null; // {heads: [[l, h]], label} or {role, label}
const knockouts = api.latest();

function probe(key) {
  if (!probes.has(key)) {
    const model = store.get().model || null;
    const p = api.headsProbe(key, model).then((data) => ({ data, att: decodeAttention(data.attention) }));
    p.catch(() => probes.delete(key));
    probes.set(key, p);
  }
  return probes.get(key);
}

// ---- the list of roles ----

function renderChips() {
  const current = store.get().role;
  const chip = (key, label) => {
    const b = el("button", "chip", label);
    b.type = "button";
    b.dataset.role = key;
    b.setAttribute("aria-pressed", String(current === key));
    b.addEventListener("click", () => store.set({ role: key }));
    return b;
  };
  ui.chips.replaceChildren(chip("", "every role"), ...roles.roles.map((r) => chip(r.key, `${r.name} (${r.heads.length})`)));
}

function headCard(role, h, near) {
  const card = el("div", near ? "head-card near" : "head-card");
  card.dataset.layer = String(h.layer);
  card.dataset.head = String(h.head);
  const canvas = el("canvas", "head-card-pic");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `${headName(h.layer, h.head)} on the ${role.probe} probe`);
  const name = el("div", "head-card-name", headName(h.layer, h.head));
  const score = el("div", "head-card-score", h.score.toFixed(2));
  const probe = role.scores[h.layer][h.head];
  const control = role.controls[h.layer][h.head];
  score.title = `${role.name}: probe ${probe.toFixed(3)}, control ${control.toFixed(3)}, net ${h.score.toFixed(3)}; ` +
    `a candidate from ${role.threshold}`;
  const ko = el("button", "ko-button", "Knock out");
  ko.type = "button";
  ko.dataset.heads = `${h.layer},${h.head}`;
  ko.title = `Run the model without ${headName(h.layer, h.head)}`;
  ko.addEventListener("click", () => knockOut({ heads: [[h.layer, h.head]], label: headName(h.layer, h.head) }));
  card.append(canvas, name, score, ko);
  return card;
}

function roleSection(role) {
  // Roles with many heads get the full width; the others share a row two by two.
  const sec = el("section", role.heads.length > 3 ? "panel role-section wide" : "panel role-section");
  sec.dataset.role = role.key;
  const head = el("header", "panel-head");
  // "heads" and the count never wrap apart.
  const title = el("h2", "", `${role.name} `);
  const tail = el("span", "nowrap", "heads ");
  tail.append(el("span", "count", String(role.heads.length)));
  title.append(tail);
  head.append(title);
  if (role.heads.length) {
    const all = el("button", "ko-button", role.heads.length === 1 ? "Knock it out" : `Knock out all ${role.heads.length}`);
    all.type = "button";
    all.dataset.role = role.key;
    all.addEventListener("click", () => knockOut({ role: role.key, label: `every ${role.name} head` }));
    head.append(all);
  }
  sec.append(head, el("p", "caption", role.explanation));
  const probeTitle = roles.probes.find((p) => p.key === role.probe)?.title || role.probe;
  const net = role.about === "position" ? "the lower of the two" : "the probe minus the control";
  sec.append(el("p", "hint", `Probe: ${role.how}. Control: ${role.control_how}. A head is a candidate when ` +
    `${net} reaches ${role.threshold}, and keeps the role only if knocking the candidates out makes ` +
    `${role.evidence ? role.evidence.measure : "what the role is for"} worse. Drawn on: ${probeTitle}.`));
  // The server's verdict for this model: who earned the role and the knock-out evidence, or why no head did.
  sec.append(el("p", role.heads.length ? "hint role-status" : "near-note", role.status));
  const cards = el("div", "head-cards");
  if (role.heads.length) {
    cards.append(...role.heads.map((h) => headCard(role, h, false)));
  } else {
    const b = role.best;
    cards.append(headCard(role, b, true));
  }
  sec.append(cards);
  return sec;
}

function renderRoles() {
  const only = store.get().role;
  const shown = roles.roles.filter((r) => !only || r.key === only);
  ui.roles.replaceChildren(...shown.map(roleSection));
  markTarget();
  drawCards();
}

// Draw each card's head on its role's probe; probes are fetched once and shared between roles.
async function drawCards() {
  const dpr = window.devicePixelRatio || 1;
  for (const sec of ui.roles.querySelectorAll(".role-section")) {
    const role = roles.roles.find((r) => r.key === sec.dataset.role);
    let p;
    try {
      p = await probe(role.probe);
    } catch (e) {
      showError(ui.error, `The ${role.probe} probe could not be loaded: ${e.message}`);
      continue;
    }
    for (const card of sec.querySelectorAll(".head-card")) {
      const c = card.querySelector("canvas");
      const size = Math.round((c.clientWidth || 110) * dpr);
      c.width = c.height = size;
      const img = headImage(p.att, Number(card.dataset.layer), Number(card.dataset.head));
      drawThumb(c.getContext("2d"), img, p.att.n, size, null);
    }
  }
  ui.roles.dataset.drawn = "1";
}

// ---- knocking out ----

function markTarget() {
  const key = target?.heads ? target.heads.map((h) => h.join(",")).join(";") : null;
  for (const b of document.querySelectorAll(".ko-button")) {
    const on = target?.role ? b.dataset.role === target.role : b.dataset.heads === key;
    b.setAttribute("aria-pressed", String(Boolean(on)));
  }
}

function knockOut(t) {
  target = t;
  markTarget();
  runKnockout();
}

async function runKnockout() {
  if (!target || !roles) return;
  const prompt = ui.prompt.value;
  if (!prompt.trim()) {
    showError(ui.koError, "Type a prompt whose next token you want to watch.");
    return;
  }
  const st = store.get();
  ui.target.textContent = `Knocking out ${target.label} (${st.mode === "mean" ? "mean" : "zero"} ablation).`;
  ui.koStatus.textContent = "Running the model with and without…";
  const body = { prompt, model: st.model || null, mode: st.mode, top_k: TOP_K };
  if (target.role) body.role = target.role;
  else body.heads = target.heads;
  const r = await knockouts.run((signal) => api.headAblation(body, { signal }));
  if (!r) return;
  ui.koStatus.textContent = "";
  showError(ui.koError, r.error?.message);
  if (r.error) return;
  const res = r.data;
  renderKnockout(ui.result, res);
  ui.target.textContent = `Knocked out ${res.heads.map((h) => headName(h[0], h[1])).join(", ")} (${res.mode} ablation).`;
  ui.result.dataset.seq = String(r.id);
}

function syncModes() {
  const mode = store.get().mode;
  for (const b of ui.modes) b.setAttribute("aria-pressed", String(b.dataset.mode === mode));
}

for (const b of ui.modes) b.addEventListener("click", () => store.set({ mode: b.dataset.mode }));
let typingTimer = 0;
ui.prompt.addEventListener("input", () => {
  clearTimeout(typingTimer);
  typingTimer = setTimeout(() => store.set({ prompt: ui.prompt.value }, { history: "replace" }), TYPING_DEBOUNCE_MS);
});
ui.prompt.addEventListener("keydown", (e) => {
  if (e.key !== "Enter") return;
  clearTimeout(typingTimer);
  if (!store.set({ prompt: ui.prompt.value }).has("prompt")) runKnockout();
});

store.subscribe((st, changed, source) => {
  if (source === "pop" && ui.prompt.value !== st.prompt) ui.prompt.value = st.prompt || ui.prompt.dataset.default;
  if (changed.has("model")) {
    target = null;
    ui.result.replaceChildren();
    load();
    return;
  }
  if (changed.has("role") && roles) {
    renderChips();
    renderRoles();
  }
  if (changed.has("mode")) syncModes();
  if (changed.has("mode") || changed.has("prompt")) runKnockout();
});

let resizeTimer = 0;
const redraw = () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => roles && drawCards(), 150);
};
window.addEventListener("resize", redraw);
window.addEventListener("atlas:presenter", redraw);

async function load() {
  probes = new Map();
  ui.status.textContent = "Measuring every head on the probes (once per model)…";
  try {
    roles = await loadRoles(store.get().model);
  } catch (e) {
    ui.status.textContent = "";
    showError(ui.error, e.message);
    return;
  }
  showError(ui.error, null);
  const labelled = roles.labels.flat().filter((x) => x.length).length;
  const total = roles.n_layer * roles.n_head;
  ui.status.textContent = `${roles.model}: ${roles.n_layer} layers × ${roles.n_head} heads; ${labelled} of ` +
    `${total} heads earn at least one role, the other ${total - labelled} have none (no role's probe, control ` +
    `and knock-out all hold for them).`;
  renderChips();
  renderRoles();
}

ui.prompt.value = store.get().prompt || ui.prompt.dataset.default;
syncModes();
load();
