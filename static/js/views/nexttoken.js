// Next token: the model's top-k probabilities at the selected position (temperature already applied
// by the server), as horizontal bars on a fixed 0..1 axis. Clicking a bar chooses it for "append".
// Bars that "Sample" can draw are solid; the others (beyond top-k or top-p, or a piece of a character)
// are pale, and the hover says each token's share of the draw.

import { CATEGORY } from "../lib/colors.js";
import { baseLayout, config, plotText, react, theme } from "../lib/plot.js";

// data: {top: [{id, token, prob}], chosen: id | null, shares: Map id -> share of the draw, actual: id | null,
//        pos, onChoose}
export async function renderNext(el, data) {
  const { top, chosen, actual } = data;
  const shares = data.shares || new Map();
  const t = theme();
  const y = top.map((_, r) => r);
  const label = (p) => {
    const tag = p.id === actual ? "  ← actual next" : "";
    return `${plotText(p.token)}${tag}`;
  };
  const trace = {
    type: "bar",
    orientation: "h",
    x: top.map((p) => p.prob),
    y,
    text: top.map((p) => (p.prob >= 0.001 ? `${(p.prob * 100).toFixed(1)}%` : "<0.1%")),
    textposition: "outside",
    cliponaxis: false,
    customdata: top.map((p) => [
      plotText(p.token),
      shares.has(p.id) ? `${(shares.get(p.id) * 100).toFixed(1)}% of the draw` : "not in the draw",
    ]),
    hovertemplate: "%{customdata[0]}: p = %{x:.4f} · %{customdata[1]}<extra></extra>",
    marker: {
      color: top.map((p) => (p.id === chosen ? CATEGORY.chosen : CATEGORY.attention)),
      opacity: top.map((p) => (shares.has(p.id) || p.id === chosen ? 1 : 0.35)),
      line: { color: top.map((p) => (p.id === actual ? "#000" : "rgba(0,0,0,0)")), width: 2 },
    },
  };
  const layout = {
    ...baseLayout(t),
    margin: { t: 4, r: 50, b: 8, l: 8 },
    bargap: 0.2,
    hovermode: "y", // hover and click anywhere on a row: unlikely tokens have bars a few pixels long
    xaxis: { range: [0, 1], title: { text: "probability" }, tickformat: ".0%", gridcolor: t.grid, automargin: true },
    yaxis: {
      tickmode: "array",
      tickvals: y,
      ticktext: top.map(label),
      autorange: "reversed",
      automargin: true,
      tickfont: { family: t.mono, size: t.font + 1 },
    },
  };
  const Plotly = await react(el, [trace], layout, config(`next-token-${data.pos}`));
  el.removeAllListeners?.("plotly_click");
  el.on("plotly_click", (ev) => {
    const r = ev.points?.[0]?.y;
    if (r !== undefined) data.onChoose(top[r].id);
  });
  return Plotly;
}
