// The offline lesson file (`python -m app export`): every number was computed by the model when the
// file was written and sits in the page as JSON (#atlas-data); this controller only draws it with the
// same views the Explorer uses. Nothing is fetched: the file works from disk with no server or network.

import { decodeAttention, decodeBase64 } from "../lib/attention.js";
import { byId } from "../lib/dom.js";
import { renderBars } from "../views/bars.js";
import { renderGrid, updateGrid } from "../views/grid.js";
import { renderHeadmap } from "../views/headmap.js";
import { markTokens, renderTokens } from "../views/tokens.js";

const data = JSON.parse(byId("atlas-data").textContent);
const att = decodeAttention(data.attention);
const exact = exactWeights(data.exact);
const view = { open: null, selected: data.tokens.length - 1, hover: null };

// u16 probabilities (p * 65535, within 8e-6 of the model's), causal rows only: keys 0..i of row i.
function exactWeights({ n_layer: L, n_head: H, n, data: b64 }) {
  const bytes = decodeBase64(b64);
  const all = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
  const per = (n * (n + 1)) / 2;
  return (layer, head) => {
    const out = new Float32Array(n * n);
    let src = (layer * H + head) * per;
    for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) out[i * n + j] = all[src++] / 65535;
    return out;
  };
}

function openHead(layer, head) {
  if (view.open && view.open.layer === layer && view.open.head === head) return;
  view.open = { layer, head };
  const share = data.n_kv_head < data.n_head ? ` (shares K/V head ${Math.floor(head / (data.n_head / data.n_kv_head))})` : "";
  byId("head-title").textContent = `Layer ${layer}, head ${head}${share}`;
  byId("head-hint").hidden = true;
  const el = byId("heatmap");
  el.dataset.layer = String(layer);
  el.dataset.head = String(head);
  renderHeadmap(el, { tokens: data.tokens, matrix: exact(layer, head), causal: true });
  updateGrid(byId("head-grid"), { open: view.open });
}

function showPosition(i) {
  view.selected = i;
  markTokens(byId("tokens"), { hover: view.hover, selected: i });
  const tok = data.tokens[i];
  renderBars(byId("next"), {
    caption: `After token ${i} “${tok}”, the model's ${data.next[i].length} likeliest next tokens:`,
    max: 1,
    rows: data.next[i].map((p) => ({
      label: p.token,
      value: p.prob,
      text: `${(p.prob * 100).toFixed(1)}%`,
      mark: i + 1 < data.token_ids.length && p.id === data.token_ids[i + 1],
    })),
  });
  const norms = data.resid.norms.map((row) => row[i]);
  renderBars(byId("resid"), {
    caption: `Size |x| of token ${i} “${tok}”'s residual stream after each step that writes to it:`,
    max: Math.max(...norms),
    rows: data.resid.stages.map((s, k) => ({ label: s, value: norms[k], text: norms[k].toFixed(2) })),
  });
}

function hover(i) {
  view.hover = i;
  markTokens(byId("tokens"), { hover: i, selected: view.selected });
  updateGrid(byId("head-grid"), { highlight: i });
}

byId("meta").textContent =
  `${data.model}: ${data.n_layer} layers x ${data.n_head} heads` +
  `${data.n_kv_head < data.n_head ? ` (${data.n_kv_head} K/V heads)` : ""}, ${data.tokens.length} tokens. ` +
  `Prompt: “${data.prompt}”`;
renderTokens(byId("tokens"), data.tokens, { selected: view.selected, onHover: hover, onSelect: showPosition });
const grid = byId("head-grid");
renderGrid(grid, { att, nKvHead: data.n_kv_head, open: null, highlight: null, onOpen: openHead });
// Arrow keys move the focus between heads (views/grid.js); here the focused head also opens, so a
// class can step through every head with the arrows alone.
grid.addEventListener("focusin", (e) => {
  const b = e.target.closest(".thumb");
  if (b) openHead(Number(b.dataset.layer), Number(b.dataset.head));
});
showPosition(view.selected);
document.documentElement.dataset.ready = "1";
