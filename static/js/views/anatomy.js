// The anatomy page's views: the chapter's block diagram with live numbers, the whole model as a column of
// steps with the shape on every arrow, and the parameter census as stacked bars. Token text only ever
// goes in through textContent (DOM) or plotText (Plotly).

import { CATEGORY } from "../lib/colors.js";
import { el } from "../lib/dom.js";
import { fmtInt, fmtWords } from "../lib/format.js";
import { baseLayout, config, plotText, react, theme } from "../lib/plot.js";


const shape = (dims) => `[${dims.join(" × ")}]`;
const v2 = (x) => x.toFixed(2);

// One step hanging off the residual rail: a title, a note, and the |vector| it hands on.
function step(kind, title, note, value, valueLabel) {
  const box = el("div", `bd-step ${kind}`);
  box.append(el("span", "bd-title", title), el("span", "bd-note", note));
  const num = el("span", "bd-num");
  num.append(el("span", "v", v2(value)), el("span", "k", valueLabel));
  box.append(num);
  return box;
}

function railBox(cls, lines) {
  const box = el("div", cls);
  lines.forEach(([text, c], i) => {
    if (i) box.append(document.createElement("br"));
    box.append(el("span", c, text));
  });
  return box;
}

// data: the /api/anatomy answer; layer, pos: what is chosen
export function renderBlock(root, data, layer, pos) {
  const c = data.config;
  const s = data.block.shapes;
  const v = data.block.norms[layer].map((row) => row[pos]); // the 7 stages at this token
  const d = c.d_model;
  const rows = [];
  const row = (railChild, branchChild) => {
    const rail = el("div", "bd-rail");
    if (railChild) rail.append(railChild);
    const branch = el("div", "bd-branch");
    if (branchChild) branch.append(branchChild);
    rows.push(rail, branch);
  };
  const gqa = c.n_kv_head < c.n_head ? `, ${c.n_kv_head} K/V heads shared in groups of ${c.n_head / c.n_kv_head}` : "";
  row(railBox("bd-x", [[`x in: L${layer}`, ""], [`|x| = ${v2(v[0])}`, "v"], [shape(s.x), "bd-shape"]]),
    step("norm", `normalise (${data.norm})`, `rescale each token's vector · ${shape(s.x)}`, v[1], "|out|"));
  row(null, step("attn", `multi-head attention: ${c.n_head} heads of ${c.head_dim}${gqa}`,
    `tokens talk to each other · Q ${shape(s.q)}, K and V ${shape(s.k)}, scores ${shape(s.scores)}`, v[2], "|wrote|"));
  row(railBox("bd-add", [["( + )", ""], [`|x| = ${v2(v[3])}`, "v"]]),
    el("p", "bd-addnote", "x + attention's output: the residual connection adds, it doesn't replace"));
  row(null, step("norm", `normalise (${data.norm})`, `the same rescaling, its own gains · ${shape(s.x)}`, v[4], "|out|"));
  row(null, step("mlp", `feed-forward (${data.mlp}): ${d} → ${c.d_ff} → ${d}`,
    `each token thinks alone · hidden ${shape(s.ff_hidden)}`, v[5], "|wrote|"));
  row(railBox("bd-add", [["( + )", ""], [`|x| = ${v2(v[6])}`, "v"]]),
    el("p", "bd-addnote", `x + feed-forward's output, passed on to ${
      layer + 1 < c.n_layer ? `block L${layer + 1}` : "the final normalise"}`));
  root.replaceChildren(...rows);
}

const LONG = 6; // models with more blocks show the first two, "…", and the last

// data: the /api/anatomy answer; pos: chosen token; layer: open block; onLayer(i) when a block is clicked
export function renderPipeline(root, data, pos, layer, onLayer) {
  const steps = data.pipeline;
  const nBlocks = data.config.n_layer;
  const items = [];
  steps.forEach((st, i) => {
    if (st.layer !== undefined && st.layer !== null && nBlocks > LONG && st.layer >= 2 && st.layer < nBlocks - 1) {
      if (st.layer === 2) items.push(el("li", "pl-arrow", `… ${nBlocks - 3} more identical blocks …`));
      return;
    }
    if (i > 0) {
      const prev = steps[i - 1];
      items.push(el("li", "pl-arrow", `${shape(prev.dims)} = ${shape(prev.shape)}`));
    }
    const li = el("li", `pl-step${st.layer !== null && st.layer !== undefined ? " block" : ""}`);
    li.append(el("span", "pl-name", st.name));
    if (st.op) li.append(el("span", "pl-op", st.op));
    const num = el("span", "pl-num");
    if (st.norms) num.textContent = `|x| = ${v2(st.norms[pos])}`;
    if (st.max_logit) num.textContent = `top logit ${v2(st.max_logit[pos])}`;
    li.append(num);
    if (st.ids) {
      const ids = el("span", "pl-ids", `[ ${st.ids.join(", ")} ]`);
      ids.title = "the token ids the tokenizer produced";
      li.append(ids);
    }
    if (st.top) li.append(topList(st.top[pos]));
    if (st.layer !== null && st.layer !== undefined) {
      li.tabIndex = 0;
      li.setAttribute("role", "button");
      li.setAttribute("aria-current", String(st.layer === layer));
      li.dataset.layer = String(st.layer);
      li.addEventListener("click", () => onLayer(st.layer));
      li.addEventListener("keydown", (e) => (e.key === "Enter" || e.key === " ") && (e.preventDefault(), onLayer(st.layer)));
    }
    items.push(li);
  });
  root.replaceChildren(...items);
}

function topList(top) {
  const grid = el("div", "pl-top");
  grid.setAttribute("aria-label", "most likely next tokens");
  for (const t of top) {
    const bar = el("span", "pl-bar");
    bar.style.width = `${Math.max(1, Math.round(t.prob * 100))}%`;
    const wrap = el("span");
    wrap.append(bar);
    grid.append(el("span", "tok-text", t.token), wrap, el("span", "p", t.prob.toFixed(3)));
  }
  return grid;
}

const PARTS = [
  ["embedding", "embedding", "#56B4E9"],
  ["attention", "attention", CATEGORY.attention],
  ["feed_forward", "feed-forward", CATEGORY.mlp],
  ["norms", "norms", "#000000"],
  ["unembedding", "unembedding (output layer)", "#009E73"],
];

const CENSUS_PLOT_PX = (t) => Math.round(t.font * 20); // the bars and the axis, without the legend

// census: [{key, name, live, params, feed_forward_share}]
export async function renderCensus(elPlot, census) {
  const t = theme();
  const names = census.map((c) => plotText(c.live ? `${c.name} (live)` : c.name));
  const traces = PARTS.map(([key, label, color]) => ({
    type: "bar", orientation: "h", name: label, y: names, x: census.map((c) => c.params[key]),
    marker: { color }, customdata: census.map((c) => [fmtInt(c.params[key]), fmtWords(c.params.total)]),
    hovertemplate: `${label}: %{customdata[0]} parameters (%{x:.1f}% of %{customdata[1]})<extra></extra>`,
  }));
  // The legend sits above the bars; on a narrow screen in presenter type it wraps into several rows,
  // so the top margin grows by the rows it needs (a fixed margin let it cover the first bars).
  const itemPx = PARTS.map(([, label]) => label.length * t.font * 0.62 + 44);
  const width = elPlot.clientWidth || 600;
  let rows = 1;
  let used = 0;
  for (const w of itemPx) {
    if (used && used + w > width) {
      rows += 1;
      used = 0;
    }
    used += w;
  }
  const legendPx = Math.ceil(rows * t.font * 1.7);
  elPlot.style.height = `${CENSUS_PLOT_PX(t) + legendPx}px`;
  const layout = {
    ...baseLayout(t),
    barmode: "stack",
    barnorm: "percent",
    margin: { t: legendPx + 8, r: Math.round(t.font * 8), b: 40, l: 10 }, // room for "124 million" at any font size
    legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom", yref: "paper", font: { size: t.font }, traceorder: "normal" },
    xaxis: { title: { text: "% of the model's parameters", font: { size: t.font } }, range: [0, 100], gridcolor: t.grid },
    yaxis: { autorange: "reversed", automargin: true },
    annotations: census.map((c, i) => ({
      x: 100, y: names[i], xanchor: "left", xshift: 6, showarrow: false, text: `${fmtWords(c.params.total)}`,
      font: { size: t.font, family: t.mono },
    })),
  };
  await react(elPlot, traces, layout, config("parameter-census"));
}
