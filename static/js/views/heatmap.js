// One head's attention as a large Plotly heatmap: query tokens down the side (rows), key tokens along
// the bottom (columns), exact weight on hover, a fixed 0..1 Viridis scale, Plotly's PNG export.
// Masked (future) cells are left blank so "not allowed to look" differs from "looked, found nothing".

import { VIRIDIS } from "../lib/colors.js";
import { withoutSink } from "../lib/attention.js";
import { baseLayout, config, plotText, react, theme, tokenTicks } from "../lib/plot.js";
import { tokenLabels } from "./tokens.js";

const HOVER_TEXT_MAX_N = 512; // beyond this, per-cell hover strings cost more than they help
const FIT_MIN_PX = 320; // below this the first screen is too short: size for one window instead
const FIT_BELOW_PX = 16; // the panel's padding and border under the plot

// An element with class plot-fit ends inside the window, so the whole head (both axes, colour bar)
// shows at once: on the first screen when it starts high enough (side by side with the grid), else
// (stacked under the grid, narrow windows) one window's height below its panel's top. Never much
// taller than wide: a tall thin heatmap wastes the room its labels need.
function fitHeight(el) {
  const box = el.getBoundingClientRect();
  const panel = el.closest(".panel")?.getBoundingClientRect() ?? box;
  const firstScreen = window.innerHeight - (box.top + window.scrollY) - FIT_BELOW_PX;
  const oneWindow = window.innerHeight - (box.top - panel.top) - 2 * FIT_BELOW_PX;
  const h = firstScreen >= FIT_MIN_PX ? firstScreen : oneWindow;
  el.style.height = `${Math.round(Math.max(FIT_MIN_PX / 2, Math.min(h, box.width + 80)))}px`;
}

// The hover line of one token: the character it belongs to and its own bytes when it is a piece.
const hoverName = (tokens, labels) => tokens.map((t, i) => (labels[i] === t ? plotText(t) : `${plotText(labels[i])} (${plotText(t)})`));

// data: {tokens, groups, matrix: Float32Array(n*n), causal, hideSink, highlight, title, filename}
// groups: the trace's runs of byte tokens that spell one character (labelled with the character).
export async function renderHeatmap(el, data) {
  const { tokens, matrix, causal, hideSink } = data;
  const labels = tokenLabels(tokens, data.groups);
  if (el.classList.contains("plot-fit")) fitHeight(el);
  const n = tokens.length;
  const first = hideSink ? 1 : 0;
  const values = hideSink ? withoutSink(matrix, n) : matrix;
  const w = n - first;
  const z = [];
  const text = n <= HOVER_TEXT_MAX_N ? [] : null;
  const safe = hoverName(tokens, labels);
  for (let i = 0; i < n; i++) {
    const row = new Array(w);
    const trow = text ? new Array(w) : null;
    for (let jj = 0; jj < w; jj++) {
      const j = jj + first;
      const v = values[i * w + jj];
      row[jj] = (causal && j > i) || Number.isNaN(v) ? null : v;
      if (trow) trow[jj] = `query ${i} ${safe[i]}<br>key ${j} ${safe[j]}`;
    }
    z.push(row);
    if (text) text.push(trow);
  }
  const t = theme();
  const box = el.getBoundingClientRect();
  // The plotting area is the box minus the tick labels, axis titles and colour bar around it.
  const plotW = Math.max(200, box.width - 190);
  const plotH = Math.max(200, box.height - 110);
  const x = Array.from({ length: w }, (_, jj) => jj + first);
  const y = Array.from({ length: n }, (_, i) => i);
  const trace = {
    type: "heatmap",
    x,
    y,
    z,
    zmin: 0,
    zmax: 1,
    zauto: false,
    colorscale: VIRIDIS,
    xgap: n <= 40 ? 1 : 0,
    ygap: n <= 40 ? 1 : 0,
    hoverongaps: false,
    colorbar: {
      title: { text: hideSink ? "share without token 0" : "attention weight", side: "right" },
      thickness: 14,
      tickformat: ".1f",
    },
  };
  if (text) {
    trace.text = text;
    trace.hovertemplate = "%{text}<br>weight %{z:.4f}<extra></extra>";
  } else {
    trace.hovertemplate = "query %{y} → key %{x}<br>weight %{z:.4f}<extra></extra>";
  }
  const layout = {
    ...baseLayout(t),
    margin: { t: 8, r: 8, b: 8, l: 8 },
    xaxis: {
      ...tokenTicks(labels, plotW, t.font, { first, slanted: true }),
      title: { text: "key: the token being looked at" },
      tickangle: -50,
      automargin: true,
      range: [first - 0.5, n - 0.5],
      showgrid: false,
      zeroline: false,
      tickfont: { family: t.mono, size: t.font },
    },
    yaxis: {
      ...tokenTicks(labels, plotH, t.font),
      title: { text: "query: the token looking" },
      autorange: "reversed",
      automargin: true,
      showgrid: false,
      zeroline: false,
      tickfont: { family: t.mono, size: t.font },
    },
    shapes: highlightShapes(data.highlight, n, first),
  };
  el.dataset.n = String(n);
  el.dataset.first = String(first);
  await react(el, [trace], layout, config(data.filename || "attention-head"));
}

// The hovered token's row and column, outlined (same idea as on the thumbnails).
export function highlightShapes(i, n, first = 0) {
  if (i === null || i === undefined || i >= n) return [];
  const line = { color: "#ffffff", width: 2 };
  const shapes = [{ type: "rect", xref: "x", yref: "y", x0: first - 0.5, x1: n - 0.5, y0: i - 0.5, y1: i + 0.5, line }];
  if (i >= first) shapes.push({ type: "rect", xref: "x", yref: "y", x0: i - 0.5, x1: i + 0.5, y0: -0.5, y1: n - 0.5, line });
  return shapes;
}

// Hover in the token strip: move the outline without rebuilding the heatmap.
export function highlightHeatmap(el, i) {
  if (!window.Plotly || !el.dataset.n || !el.classList.contains("js-plotly-plot")) return;
  window.Plotly.relayout(el, { shapes: highlightShapes(i, Number(el.dataset.n), Number(el.dataset.first)) });
}
