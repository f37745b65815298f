// GPT-2-style models have no clock: each absolute position has a learned vector. Two pictures of them,
// from the server: how similar position vectors are to each other (cosine), and the positions traced
// on their top three principal components.

import { baseLayout, config, react, theme } from "../lib/plot.js";

export async function renderLearned(simEl, pcaEl, learned) {
  const t = theme();
  const pos = learned.positions;
  await react(
    simEl,
    [{
      type: "heatmap", x: pos, y: pos, z: learned.similarity, zmin: -1, zmax: 1, colorscale: "RdBu",
      reversescale: true, colorbar: { title: { text: "cosine", side: "right" }, thickness: 14 },
      hovertemplate: "position %{y} vs %{x}<br>cosine %{z:.3f}<extra></extra>",
    }],  // prettier-ignore
    {
      ...baseLayout(t),
      margin: { t: 44, r: 8, b: 8, l: 8 },
      title: { text: "similarity of the position vectors", x: 0, xanchor: "left", font: { size: t.font + 1 } },
      xaxis: { title: { text: "position" }, automargin: true },
      yaxis: { title: { text: "position" }, automargin: true, autorange: "reversed" },
    },
    config("learned-position-similarity"),
  );
  const names = learned.explained.map((e, k) => `component ${k + 1} (${(e * 100).toFixed(1)}% of variance)`);
  await react(
    pcaEl,
    names.map((name, k) => ({
      type: "scatter", mode: "lines", x: pos, y: learned.pca.map((p) => p[k]), name,
      hovertemplate: "position %{x}<br>%{y:.3f}<extra>%{fullData.name}</extra>",
    })),  // prettier-ignore
    {
      ...baseLayout(t),
      margin: { t: 44, r: 8, b: 8, l: 8 },
      title: { text: "position vectors on their top principal components", x: 0, xanchor: "left", font: { size: t.font + 1 } },
      legend: { orientation: "h", y: -0.25 },
      xaxis: { title: { text: "position" }, automargin: true },
      yaxis: { title: { text: "projection" }, automargin: true },
    },
    config("learned-position-pca"),
  );
}
