// RoPE stretched: next-token loss against position, one line per interpolation scale, the trained
// length as a solid vertical line and, dotted in each scale's colour, where that scale runs out of
// trained angles (C x scale). `renderStretch(el, data)`: data is the /api/rope/stretch answer.
// `renderNoTable(el, data)`: a GPT-2-style model's position table, which ends at its context.

import { fmtInt } from "../lib/format.js";
import { baseLayout, config, react, theme } from "../lib/plot.js";

// Okabe-Ito, readable with colour-vision deficiencies: no scaling black, then vermilion, blue, green.
const SCALE_COLORS = ["#000000", "#D55E00", "#0072B2", "#009E73", "#CC79A7"];

const label = (s) => (s === 1 ? "no scaling" : `interpolation ÷${s}`);

export async function renderStretch(el, data) {
  const t = theme();
  const x = data.bin_starts.map((b) => b + (data.bin_width - 1) / 2);
  const all = data.curves.flatMap((c) => c.bins);
  const top = Math.max(...all) * 1.08;
  const traces = data.curves.map((c, i) => ({
    type: "scatter", mode: "lines+markers", x, y: c.bins, name: label(c.scale),
    line: { color: SCALE_COLORS[i % SCALE_COLORS.length], width: c.scale === 1 ? 4 : 3 },
    marker: { size: 5 },
    hovertemplate: `${label(c.scale)}<br>positions %{x:.0f} ± ${data.bin_width / 2}: %{y:.2f} nats<extra></extra>`,
  }));
  const shapes = [
    { type: "line", x0: data.context_length, x1: data.context_length, y0: 0, y1: top, line: { color: t.ink, width: 2.5 } },
  ];
  const annotations = [
    { x: data.context_length, y: top, yanchor: "bottom", xanchor: "left", showarrow: false,
      text: `trained length ${fmtInt(data.context_length)}`, font: { size: t.font, color: t.ink } },
  ];
  data.curves.forEach((c, i) => {
    if (c.scale > 1 && c.covers < data.length) {
      const color = SCALE_COLORS[i % SCALE_COLORS.length];
      shapes.push({ type: "line", x0: c.covers, x1: c.covers, y0: 0, y1: top, line: { color, width: 2, dash: "dot" } });
      annotations.push({ x: c.covers, y: top, yanchor: "bottom", xanchor: "left", showarrow: false,
        text: `÷${c.scale} reaches ${fmtInt(c.covers)}`, font: { size: t.font, color } });
    }
  });
  const layout = {
    ...baseLayout(t),
    margin: { t: 28, r: 12, b: 8, l: 8 },
    showlegend: true,
    legend: { orientation: "h", x: 0, y: -0.26, yanchor: "top", font: { size: t.font } },
    shapes, annotations,
    xaxis: { title: { text: "position in the window (tokens)" }, range: [0, data.length], automargin: true, gridcolor: t.grid, zeroline: false },
    yaxis: { title: { text: "next-token loss (nats)" }, range: [0, top], automargin: true, gridcolor: t.grid, zeroline: false },
  };
  await react(el, traces, layout, config("rope-stretched"));
}

// A learned table: one row per position up to the context, then nothing; drawn as a bar of rows.
export function renderNoTable(el, data) {
  const bar = document.createElement("div");
  bar.className = "pos-table-bar";
  const has = document.createElement("span");
  has.className = "has";
  has.style.flexGrow = String(data.context_length);
  has.textContent = `rows 0–${fmtInt(data.context_length - 1)}: a learned vector each`;
  const none = document.createElement("span");
  none.className = "none";
  none.style.flexGrow = String(data.length - data.context_length);
  none.textContent = `positions ${fmtInt(data.context_length)}–${fmtInt(data.length - 1)}: no row, nothing to add`;
  bar.append(has, none);
  el.replaceChildren(bar);
}
