// Where position lives: the position probe's held-out R² at every point of the residual stream, one
// colour per model, solid with the causal mask on (as trained) and dashed with it off.
// `renderProbe(el, answers)`: answers are /api/position/probe replies, one per model.
// `renderProbeTable(el, answers)`: the same numbers as a table (R² and mean error in tokens).

import { positionName } from "../lib/format.js";
import { baseLayout, config, react, theme } from "../lib/plot.js";

// Okabe-Ito, readable with colour-vision deficiencies.
export const MODEL_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#000000"];

// Every point any model has, in stream order: the embeddings, the position vectors (learned only),
// then the blocks. Categories of one axis, so models of different depths line up block by block.
export function streamOrder(answers) {
  const names = new Set(answers.flatMap((a) => a.causal.map((p) => p.name)));
  const blocks = Math.max(...answers.map((a) => a.causal.filter((p) => p.name.startsWith("after block")).length));
  const first = ["token embeddings", "embeddings + position vectors"].filter((n) => names.has(n));
  return [...first, ...Array.from({ length: blocks }, (_, i) => `after block ${i}`)];
}

const label = (a) => `${a.model} (${positionName(a.positional)})`;

export async function renderProbe(el, answers) {
  const t = theme();
  const traces = answers.flatMap((a, i) => {
    const color = MODEL_COLORS[i % MODEL_COLORS.length];
    return [
      [a.causal, "causal mask on", "solid", 4],
      [a.no_mask, "mask off", "dash", 2.5],
    ].map(([points, mask, dash, width]) => ({
      type: "scatter", mode: "lines+markers", name: `${label(a)}, ${mask}`,
      x: points.map((p) => p.name), y: points.map((p) => p.r2),
      customdata: points.map((p) => p.error),
      line: { color, dash, width }, marker: { size: dash === "solid" ? 8 : 6 },
      hovertemplate: `${label(a)}, ${mask}<br>%{x}: R² %{y:.2f}, off by %{customdata:.1f} tokens on average<extra></extra>`,
    }));
  });
  const layout = {
    ...baseLayout(t),
    margin: { t: 10, r: 12, b: 8, l: 8 },
    showlegend: true,
    legend: { orientation: "h", x: 0, y: -0.22, yanchor: "top", font: { size: t.font } },
    xaxis: { type: "category", categoryorder: "array", categoryarray: streamOrder(answers), automargin: true, gridcolor: t.grid },
    yaxis: {
      title: { text: "R² (1 = read exactly)" }, range: [-0.1, 1.05], automargin: true,
      gridcolor: t.grid, zeroline: true, zerolinecolor: t.muted,
    },
  };
  await react(el, traces, layout, config("position-probe"));
}

export function renderProbeTable(el, answers) {
  const table = document.createElement("table");
  table.className = "probe-table";
  const head = table.createTHead().insertRow();
  const th = (row, text, scope = "col") => {
    const c = document.createElement("th");
    c.scope = scope;
    c.textContent = text;
    row.append(c);
  };
  th(head, "stream point");
  for (const a of answers) th(head, `${label(a)}: mask on / off`);
  const body = table.createTBody();
  for (const name of streamOrder(answers)) {
    const row = body.insertRow();
    th(row, name, "row");
    for (const a of answers) {
      const k = a.causal.findIndex((p) => p.name === name);
      const on = a.causal[k], off = a.no_mask[k];
      row.insertCell().textContent = on
        ? `R² ${on.r2.toFixed(2)} (±${on.error.toFixed(1)}) / ${off.r2.toFixed(2)} (±${off.error.toFixed(1)})`
        : "·";
    }
  }
  el.replaceChildren(table);
}
