// Head roles from the head atlas (GET /api/heads), shared by the explorer and the atlas page: badges for
// the head grid, the role filter, each head drawn on its probe, and the knock-out result. Only draws:
// every number comes from the API, and token text always goes in through textContent.

import * as api from "./api.js";
import { LUT } from "./colors.js";
import { el } from "./dom.js";

const rolesCache = new Map(); // model name ("" = default) -> Promise of /api/heads

// The roles of a model, fetched once per page (the server computes them once per model).
export function loadRoles(model) {
  const key = model || "";
  if (!rolesCache.has(key)) {
    rolesCache.set(key, api.heads(model || null).catch((e) => {
      rolesCache.delete(key);
      throw e;
    }));
  }
  return rolesCache.get(key);
}

export const headName = (layer, head) => `L${layer}H${head}`;

// Map "layer,head" -> [{label, title}] for views/grid.js's `badges` option.
export function badgeMap(roles) {
  const out = new Map();
  for (const role of roles.roles) {
    for (const { layer, head, score } of role.heads) {
      const k = `${layer},${head}`;
      if (!out.has(k)) out.set(k, []);
      out.get(k).push({
        label: role.label, // short badge text from /api/heads; name, score and explanation in the tooltip
        title: `${role.name} head (score ${score.toFixed(2)}, labelled from ${role.threshold}): ${role.explanation}`,
      });
    }
  }
  return out;
}

// Fill a <select> with "every head" and one option per role, with how many heads carry it.
export function fillRoleSelect(select, roles, value) {
  const all = document.createElement("option");
  all.value = "";
  all.textContent = "every head";
  const options = roles.roles.map((r) => {
    const o = document.createElement("option");
    o.value = r.key;
    o.textContent = `${r.name} heads (${r.heads.length})`;
    return o;
  });
  select.replaceChildren(all, ...options);
  select.value = roles.roles.some((r) => r.key === value) ? value : "";
}

// Dim the grid's thumbnails that do not carry `roleKey` (no role: nothing dimmed).
export function applyRoleFilter(gridEl, roles, roleKey) {
  const role = roleKey ? roles?.roles.find((r) => r.key === roleKey) : null;
  const keep = role ? new Set(role.heads.map((h) => `${h.layer},${h.head}`)) : null;
  for (const b of gridEl.querySelectorAll(".thumb")) {
    const out = keep !== null && !keep.has(`${b.dataset.layer},${b.dataset.head}`);
    b.classList.toggle("role-out", out);
  }
}

// One head's picture on a probe, one pixel per attention weight (Viridis, masked future light grey),
// as an n x n canvas to be scaled by drawThumb from views/grid.js.
export function headImage(att, layer, head) {
  const n = att.n;
  const bytes = att.bytes(layer, head);
  const c = document.createElement("canvas");
  c.width = n;
  c.height = n;
  const img = new ImageData(n, n);
  const px = img.data;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const p = (i * n + j) * 4;
      const o = bytes[i * n + j] * 4;
      const masked = att.causal && j > i;
      px[p] = masked ? 238 : LUT[o];
      px[p + 1] = masked ? 238 : LUT[o + 1];
      px[p + 2] = masked ? 238 : LUT[o + 2];
      px[p + 3] = 255;
    }
  }
  c.getContext("2d").putImageData(img, 0, 0);
  return c;
}


const pct = (p) => `${(p * 100).toFixed(p >= 0.1 ? 0 : 1)}%`;

function bar(value, max, cls) {
  const track = el("span", `ko-bar ${cls}`);
  const fill = el("span", "ko-fill");
  fill.style.width = `${Math.max(0, Math.min(1, value / max)) * 100}%`;
  track.append(fill);
  return track;
}

// The random heads' loss is the median of the seeded sets (the atlas's judge reads them so): say so by the bar.
export function randomSetsNote(repeat) {
  return repeat.random.length > 1 ? ` (median of ${repeat.random.length} sets)` : "";
}

// The answer of POST /api/heads/ablation: two sentences, the next-token probabilities side by side,
// and the repeated-sequence losses as bars.
export function renderKnockout(target, res) {
  const p = res.prompt;
  const r = res.repeat;
  const box = el("div", "ko");
  box.append(el("p", "ko-sentence", p.sentence));
  const table = el("table", "ko-table");
  const head = el("tr");
  head.append(el("th", "", "next token"), el("th", "", "every head"), el("th", "", "knocked out"));
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  const max = Math.max(...p.rows.flatMap((row) => [row.intact, row.ablated]), 1e-9);
  for (const row of p.rows) {
    const tr = el("tr");
    tr.dataset.token = String(row.id);
    const tok = el("td", "ko-token");
    tok.append(el("span", "tok", row.token));
    const a = el("td", "ko-prob");
    a.append(bar(row.intact, max, "intact"), el("span", "ko-num", pct(row.intact)));
    a.title = `probability ${row.intact}`;
    const b = el("td", "ko-prob");
    b.append(bar(row.ablated, max, "ablated"), el("span", "ko-num", pct(row.ablated)));
    b.title = `probability ${row.ablated}`;
    tr.append(tok, a, b);
    tbody.append(tr);
  }
  table.append(thead, tbody);
  box.append(table);
  box.append(el("p", "ko-note", `KL divergence between the two: ${p.kl.toFixed(3)} nats (0 = no change).`));

  box.append(el("p", "ko-sentence", r.sentence));
  const losses = [
    ["every head", r.second_copy_loss, "intact"],
    [`without ${res.heads.length === 1 ? "this head" : `these ${res.heads.length} heads`}`, r.second_copy_loss_ablated, "ablated"],
  ];
  if (r.second_copy_loss_random !== null) {
    losses.push([`without ${res.heads.length} random other head${res.heads.length > 1 ? "s" : ""}${randomSetsNote(r)}`, r.second_copy_loss_random, "random"]);
  }
  losses.push(["first copy (only guessing)", r.first_copy_loss, "guess"]);
  const lmax = Math.max(...losses.map((x) => x[1]), 1e-9);
  const list = el("dl", "ko-losses");
  list.setAttribute("aria-label", "Loss on the second copy of the repeated sequence, in nats");
  for (const [label, value, cls] of losses) {
    const dd = el("dd");
    dd.append(bar(value, lmax, cls), el("span", "ko-num", value.toFixed(2)));
    list.append(el("dt", "", label), dd);
  }
  box.append(el("p", "ko-caption", `Loss (nats) predicting the second copy of ${r.length} random tokens repeated:`), list);
  target.replaceChildren(box);
}
