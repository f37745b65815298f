// How one attention score is made (the idea of BertViz's neuron view), from POST /api/score: the query
// vector, each key vector (before and after RoPE), q·k, divided by sqrt(d_head), the causal mask, the
// softmax, and the value vectors whose weighted sum is the head's output. Vectors are colour strips (one
// cell per dimension; hover a cell for its number); every number is the server's. Token text goes in
// through textContent only.

import { el } from "../lib/dom.js";
import { fmtMeasured } from "../lib/format.js";

const STRIP_CELL = 4; // px per dimension: 128 dimensions stay under 520 px
const fmt = (x, d = 3) => (Math.abs(x) >= 1000 ? x.toExponential(2) : x.toFixed(d));

// Blue for negative, orange for positive, white for 0, scaled by the largest magnitude in the strip.
function cellColor(v, range) {
  const t = Math.max(-1, Math.min(1, v / range));
  const [r, g, b] = t < 0 ? [33, 102, 172] : [214, 96, 77];
  const a = Math.abs(t);
  return `rgb(${Math.round(255 + (r - 255) * a)},${Math.round(255 + (g - 255) * a)},${Math.round(255 + (b - 255) * a)})`;
}

// A vector as a strip of coloured cells on a canvas; the title follows the pointer with the exact number.
// widthPx: the strip's whole width (cells shrink to fit it), else STRIP_CELL per dimension.
export function strip(values, label, widthPx = null) {
  const canvas = document.createElement("canvas");
  const big = document.documentElement.classList.contains("presenter") ? STRIP_CELL + 1 : STRIP_CELL;
  const cell = widthPx ? Math.max(1, Math.min(big, widthPx / values.length)) : big;
  const h = cell * 4;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = values.length * cell * dpr;
  canvas.height = h * dpr;
  canvas.style.width = `${values.length * cell}px`;
  canvas.style.height = `${h}px`;
  canvas.className = "score-strip";
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  const range = Math.max(1e-9, ...values.map(Math.abs));
  values.forEach((v, i) => {
    ctx.fillStyle = cellColor(v, range);
    ctx.fillRect(i * cell, 0, cell, h);
  });
  canvas.title = `${label}: ${values.length} numbers, largest |x| = ${fmt(range)}`;
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", canvas.title);
  canvas.addEventListener("mousemove", (e) => {
    const i = Math.min(values.length - 1, Math.floor(e.offsetX / cell));
    canvas.title = `${label}, dimension ${i}: ${fmt(values[i], 4)}`;
  });
  return canvas;
}

let stripPx = null; // set per render from its options

function vectorRow(name, values, note) {
  const row = el("div", "score-vec");
  row.append(el("span", "score-vec-name", name), strip(values, name, stripPx));
  if (note) row.append(el("span", "score-vec-note", note));
  return row;
}

function header(data) {
  const box = el("div", "score-head");
  const tok = data.tokens[data.index];
  const line = el("p", "score-title");
  line.append(`Layer ${data.layer}, head ${data.head}: the query is token ${data.index} `, el("span", "tok-inline", tok));
  box.append(line);
  const rot = data.rotary && data.q_rot;
  box.append(vectorRow(rot ? "q before RoPE" : "q", data.q, `${data.d_head} numbers`));
  if (rot) box.append(vectorRow("q after RoPE", data.q_rot, "what the dot product uses"));
  const notes = el("ul", "score-notes");
  for (const s of data.notes) notes.append(el("li", null, s));
  box.append(notes);
  return box;
}

function maskCell(masked) {
  const td = el("td", "score-num", masked ? "−∞" : "—");
  td.title = masked ? "A later token: the causal mask sets its score to −∞, so its weight is 0." : "Not masked.";
  return td;
}

function table(data, { maxRows }) {
  const rot = data.rotary && data.q_rot;
  const t = el("table", "score-table");
  const head = el("tr");
  const cols = ["key", rot ? "k after RoPE" : "k", "q·k", `÷ √${data.d_head}`, "mask", "softmax", "v"];
  for (const c of cols) head.append(el("th", null, c));
  t.append(el("thead"));
  t.tHead.append(head);
  const body = t.appendChild(el("tbody"));
  // The rows the view has room for: every key when they fit; else the heaviest visible keys (in position
  // order) and the first two masked ones, so the mask is always on show.
  let rows = data.keys;
  if (rows.length > maxRows) {
    const masked = data.keys.filter((k) => k.masked).slice(0, 2);
    const visible = data.keys.filter((k) => !k.masked).sort((a, b) => b.weight - a.weight);
    rows = [...visible.slice(0, maxRows - masked.length).sort((a, b) => a.position - b.position), ...masked];
  }
  for (const k of rows) {
    const tr = el("tr", k.masked ? "score-masked" : null);
    const tokCell = el("td", "score-key");
    tokCell.append(el("span", "score-pos", `${k.position}`), el("span", "tok-inline", k.token));
    const kv = rot ? k.k_rot : k.k;
    const kCell = el("td");
    if (kv) kCell.append(strip(kv, `k${k.position}${rot ? " after RoPE" : ""}`, stripPx));
    else kCell.textContent = "…";
    if (rot && k.k) kCell.title = "Before RoPE, see the API's k";
    const w = el("td", "score-w");
    const bar = el("span", "score-bar");
    bar.style.width = `${Math.round(k.weight * 100)}%`;
    w.append(bar, el("span", "score-num", k.masked ? "0" : k.weight.toFixed(3)));
    const vCell = el("td");
    if (k.v) vCell.append(strip(k.v, `v${k.position}`, stripPx));
    else vCell.textContent = "…";
    tr.append(tokCell, kCell, el("td", "score-num", fmt(k.dot, 2)), el("td", "score-num", fmt(k.scaled, 2)),
      maskCell(k.masked), w, vCell);
    body.append(tr);
  }
  return { t, omitted: data.keys.length - rows.length };
}

// data: the /api/score answer. opts.maxRows: the most key rows drawn (the lesson shows fewer, larger);
// opts.stripPx: the width of every vector strip (the lesson's column is narrow).
export function renderScore(root, data, { maxRows = 32, stripPx: width = null } = {}) {
  stripPx = width;
  const { t, omitted } = table(data, { maxRows });
  const sum = el("div", "score-sum");
  const tok = data.tokens[data.index];
  sum.append(vectorRow("output z", data.z, "= Σ softmax × v"));
  const same = data.z_check < 1e-12 ? "exactly" : `within ${fmtMeasured(data.z_check)}`;
  const checks = [`Head ${data.head}'s output for this token; it equals the model's own (hook_z) ${same}.`];
  if (data.hidden_weight > 0.0005) checks.push(`Keys without vectors shown carry ${(data.hidden_weight * 100).toFixed(1)}% of the weight.`);
  if (omitted > 0) checks.push(`${omitted} more keys (masked or light) are left out of the table.`);
  sum.append(el("p", "score-check", checks.join(" ")));
  root.replaceChildren(header(data), el("div", "score-table-wrap"), sum);
  root.children[1].append(t);
  root.dataset.query = tok;
}
