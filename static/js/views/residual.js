// The residual stream x: "a shared notepad that every layer adds to". Two pictures:
//  - story: for the selected token, the length of what each sub-layer wrote (bars: the embedding,
//    then attention and MLP of every layer) and the length of x after each write (line);
//  - map: the length of x for every token (columns) at every stage (rows).
// Norms are not probabilities, so these use their own auto range (Cividis), labelled as norms.

import { CATEGORY } from "../lib/colors.js";
import { baseLayout, config, plotText, react, theme, tokenTicks } from "../lib/plot.js";

const EMBED_COLOR = "#6b6b6b";

// data: {tokens, resid: {stages, norms}, writes: {attn, mlp}, pos}
export async function renderResidualStory(el, data) {
  const { tokens, resid, writes, pos } = data;
  const t = theme();
  const L = writes.attn.length;
  const stages = resid.stages;
  const x = stages.map((_, k) => k);
  const wrote = stages.map((_, k) => (k === 0 ? resid.norms[0][pos] : (k % 2 ? writes.attn : writes.mlp)[(k - 1) >> 1][pos]));
  const colors = stages.map((_, k) => (k === 0 ? EMBED_COLOR : k % 2 ? CATEGORY.attention : CATEGORY.mlp));
  const kinds = stages.map((_, k) => (k === 0 ? "token embedding" : k % 2 ? "attention wrote" : "MLP wrote"));
  const after = stages.map((_, k) => resid.norms[k][pos]);
  const traces = [
    {
      type: "bar",
      x,
      y: wrote,
      marker: { color: colors },
      customdata: kinds,
      name: "what this step wrote",
      showlegend: false, // one bar trace in three colours: the legend shows one swatch per colour below
      hovertemplate: "%{customdata}: |write| = %{y:.2f}<extra></extra>",
    },
    ...[["embedding", EMBED_COLOR], ["attention wrote", CATEGORY.attention], ["MLP wrote", CATEGORY.mlp]].map(
      ([name, color]) => ({ type: "bar", x: [null], y: [null], marker: { color }, name, hoverinfo: "skip" }),
    ),
    {
      type: "scatter",
      mode: "lines+markers",
      x,
      y: after,
      line: { color: CATEGORY.line, width: 2 },
      marker: { size: 6 },
      name: "|x| after this step",
      hovertemplate: "|x| after %{x}: %{y:.2f}<extra></extra>",
    },
  ];
  const layout = {
    ...baseLayout(t),
    margin: { t: t.font * 3.6, r: 8, b: 8, l: 8 },
    showlegend: true,
    legend: { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom", font: { size: t.font } },
    bargap: 0.25,
    title: {
      text: `at token ${pos} <b>${plotText(tokens[pos])}</b>`,
      x: 0,
      xref: "paper",
      xanchor: "left",
      y: 1,
      yref: "container",
      yanchor: "top",
      pad: { t: 4 },
      font: { size: t.font + 1 },
    },
    xaxis: {
      tickmode: "array",
      tickvals: x,
      ticktext: stages.map(plotText),
      tickangle: L > 6 ? -60 : -35,
      automargin: true,
    },
    yaxis: { title: { text: "vector length (L2 norm)" }, automargin: true, rangemode: "tozero", gridcolor: t.grid },
  };
  await react(el, traces, layout, config(`residual-token-${pos}`));
}

export async function renderResidualMap(el, data) {
  const { tokens, resid, pos } = data;
  const t = theme();
  const width = Math.max(120, el.getBoundingClientRect().width - 190); // minus stage names and colour bar
  const z = resid.norms;
  const trace = {
    type: "heatmap",
    x: tokens.map((_, i) => i),
    y: resid.stages.map((_, k) => k),
    z,
    colorscale: "Cividis",
    zmin: 0,
    colorbar: { title: { text: "|x|", side: "right" }, thickness: 12 },
    text: resid.stages.map((s) => tokens.map((tok, i) => `${plotText(s)} · token ${i} ${plotText(tok)}`)),
    hovertemplate: "%{text}<br>|x| = %{z:.2f}<extra></extra>",
  };
  const n = tokens.length;
  const layout = {
    ...baseLayout(t),
    margin: { t: 8, r: 8, b: 8, l: 8 },
    xaxis: { ...tokenTicks(tokens, width, t.font, { slanted: true }), tickangle: -50, automargin: true, tickfont: { family: t.mono, size: t.font } },
    yaxis: {
      tickmode: "array",
      tickvals: resid.stages.map((_, k) => k),
      ticktext: resid.stages.map(plotText),
      autorange: "reversed",
      automargin: true,
    },
    shapes:
      pos === null || pos === undefined || pos >= n
        ? []
        : [{ type: "rect", x0: pos - 0.5, x1: pos + 0.5, y0: -0.5, y1: resid.stages.length - 0.5, line: { color: "#ffffff", width: 2 } }],
  };
  await react(el, [trace], layout, config("residual-norms"));
}
