// The head atlas inside the explorer: role badges on the head grid, a "show only ... heads" filter, and
// a "knock out this head" control in the head detail. Kept out of explorer.js so that page only calls
// three functions; every number comes from /api/heads and /api/heads/ablation.

import * as api from "../lib/api.js";
import { applyRoleFilter, badgeMap, fillRoleSelect, headName, loadRoles, renderKnockout } from "../lib/heads.js";
import { showError } from "../lib/dom.js";
import * as store from "../lib/store.js";
import { updateGrid } from "../views/grid.js";

store.define({ role: { type: "string", def: "" } }); // the grid filter; "" = every head

const loaded = new Map(); // model ("" = default) -> {roles, badges} once /api/heads has answered
let gridEl = null;
let gridModel = null; // the model the grid shows now: the key of the latest showRoles call
let select = null;

// Badges for renderGrid's data, if the model's roles are already here (else showRoles adds them).
export const gridBadges = (model) => loaded.get(model || "")?.badges;

// After each grid render: fetch the roles once per model, then draw badges and apply the filter.
export async function showRoles(grid, model) {
  gridEl = grid;
  const key = model || "";
  gridModel = key;
  try {
    if (!loaded.has(key)) {
      const roles = await loadRoles(model);
      loaded.set(key, { roles, badges: badgeMap(roles) });
    }
  } catch (e) {
    if (select) select.title = `Head roles unavailable: ${e.message}`;
    return;
  }
  // Another model's grid replaced this one while its roles were on the way (a student switched models, or
  // pressed Back): those badges and that filter belong to heads no longer on screen.
  if (gridModel !== key) return;
  const { roles, badges } = loaded.get(key);
  updateGrid(grid, { badges });
  // The sentence about token 0 is counted by the server on this model's atlas, never typed in the page.
  const sinkFact = document.getElementById("sink-fact");
  if (sinkFact) sinkFact.textContent = roles.sink_fact;
  showHeadNote();
  renderPromptScores();
  if (select && select.dataset.model !== roles.model) {
    fillRoleSelect(select, roles, store.get().role);
    select.dataset.model = roles.model;
  }
  applyRoleFilter(grid, roles, store.get().role);
  grid.dataset.roles = roles.model;
}

export function mountRoleFilter(sel) {
  select = sel;
  sel.addEventListener("change", () => store.set({ role: sel.value }));
  store.subscribe((st, changed) => {
    if (!changed.has("role") || !gridEl) return;
    const entry = loaded.get(st.model || "");
    if (entry) applyRoleFilter(gridEl, entry.roles, st.role);
    if (sel.value !== st.role) sel.value = st.role;
  });
}

// ---- "knock out this head" in the head detail ----

let ko = null; // {button, result, error, getContext, key, requests}

export function mountHeadKnockout({ button, result, error }, getContext) {
  const onPrompt = document.createElement("p");
  onPrompt.className = "hint roles-on-prompt";
  const note = document.createElement("p");
  note.className = "hint head-role-note";
  button.parentElement.prepend(note, onPrompt);
  ko = { button, result, error, note, onPrompt, getContext, key: null, requests: api.latest() };
  button.addEventListener("click", runHeadKnockout);
}

// ---- the open head's role scores on the prompt itself (induction shows on a repeated sentence) ----

// The roles /api/heads/prompt scores, named as /api/heads names them (the page holds no role names).
const shownRoles = (model, scores) => (loaded.get(model || "")?.roles.roles || []).filter((r) => r.key in scores);
// [name, help] of each summary score of POST /api/head, from /api/heads (empty until it has answered).
export const scoreText = (model) =>
  new Map((loaded.get(model || "")?.roles.head_scores || []).map((s) => [s.key, [s.name, s.explanation]]));
const promptScores = new Map(); // "model|prompt" -> Promise of /api/heads/prompt

// One prompt and one head: a knock-out result or a score line belongs to exactly this.
const headKey = (c) => `${c.model}|${c.prompt}|${c.layer}|${c.head}`;

let lastScores = null; // {c, res}: /api/heads/prompt's answer for the open head (resetHeadKnockout clears it)

async function showPromptScores(c) {
  const key = `${c.model}|${c.prompt}`;
  if (!promptScores.has(key)) {
    if (promptScores.size > 20) promptScores.clear();
    const p = api.headRolesOnPrompt({ prompt: c.prompt, model: c.model || null });
    p.catch(() => promptScores.delete(key));
    promptScores.set(key, p);
  }
  let res;
  try {
    res = await promptScores.get(key);
  } catch {
    return; // the line stays empty: the knock-out itself reports errors
  }
  if (ko.key !== headKey(c)) return; // another head was opened meanwhile
  lastScores = { c, res };
  renderPromptScores();
}

// The scores are named with /api/heads's role names, and the two answers can arrive in either order
// (on a busy server the scores come first): this runs on each, and writes only once both are here.
function renderPromptScores() {
  if (!ko || !lastScores) return;
  const { c, res } = lastScores;
  const shown = shownRoles(c.model, res.scores);
  if (!shown.length) return; // /api/heads has not answered yet; showRoles calls this again
  const parts = shown.filter((r) => res.scores[r.key]).map((r) => `${r.name} ${res.scores[r.key][c.layer][c.head].toFixed(2)}`);
  const missing = shown.filter((r) => !res.scores[r.key]).map((r) => r.name);
  ko.onPrompt.textContent = `Role scores of ${headName(c.layer, c.head)} on this prompt (no control, no knock-out: ` +
    `a hint, not a label): ${parts.join(" · ")}` +
    (missing.length ? ` (${missing.join(", ")}: the prompt repeats no token or is too short).` : ".");
}

// The atlas's verdict on the open head (its roles, or that it has none and why), from /api/heads;
// empty until /api/heads has answered (showRoles calls this again then).
function showHeadNote() {
  if (!ko) return;
  const c = ko.getContext();
  ko.note.textContent = (c && loaded.get(c.model || "")?.roles.head_notes[c.layer]?.[c.head]) || "";
}

// Called whenever the detail shows a head: a result belongs to one prompt and one head only.
export function resetHeadKnockout() {
  if (!ko) return;
  const c = ko.getContext();
  const key = c ? headKey(c) : null;
  if (key === ko.key) return;
  ko.key = key;
  ko.requests.cancel();
  ko.result.replaceChildren();
  ko.error.hidden = true;
  ko.button.setAttribute("aria-pressed", "false");
  ko.onPrompt.textContent = "";
  lastScores = null;
  showHeadNote();
  if (c) {
    ko.button.textContent = `Knock out ${headName(c.layer, c.head)}`;
    showPromptScores(c);
  }
}

async function runHeadKnockout() {
  const c = ko.getContext();
  if (!c) return;
  ko.button.setAttribute("aria-pressed", "true");
  ko.result.replaceChildren();
  ko.result.textContent = "Running the model without this head…";
  const body = { prompt: c.prompt, model: c.model || null, heads: [[c.layer, c.head]], top_k: 5 };
  const r = await ko.requests.run((signal) => api.headAblation(body, { signal }));
  if (!r) return;
  showError(ko.error, r.error?.message);
  if (r.error) ko.result.replaceChildren();
  else renderKnockout(ko.result, r.data);
}
