// The logit lens: read the residual stream after every layer through the final norm and unembedding
// as if the model stopped there. Rows are layers, columns the positions of the prompt; each cell shows
// the top guess for the NEXT token and is coloured by its probability (fixed 0..1 Viridis).

import { VIRIDIS } from "../colors.js";
import { baseLayout, config, plotText, react, shorten, theme } from "../plot.js";

export const LENS_COLUMN_PX = 64;

// data: {tokens, lens: {k, tokens: [L][n][k], probs: [L][n][k]}, pos}
export async function renderLens(el, data) {
  const { tokens, lens, pos } = data;
  const L = lens.tokens.length;
  const n = tokens.length;
  const t = theme();
  const z = lens.probs.map((layer) => layer.map((top) => top[0]));
  const text = lens.tokens.map((layer) => layer.map((top) => plotText(shorten(top[0], 8))));
  const hover = lens.tokens.map((layer, l) =>
    layer.map((top, i) => {
      const rows = top.map((tok, r) => `${plotText(tok)}  ${(lens.probs[l][i][r] * 100).toFixed(1)}%`);
      return `after layer ${l}, at token ${i} ${plotText(tokens[i])}<br>${rows.join("<br>")}`;
    }),
  );
  const trace = {
    type: "heatmap",
    x: tokens.map((_, i) => i),
    y: z.map((_, l) => l),
    z,
    zmin: 0,
    zmax: 1,
    colorscale: VIRIDIS,
    xgap: 2,
    ygap: 2,
    text,
    texttemplate: "%{text}",
    textfont: { family: t.mono, size: t.font },
    customdata: hover,
    hovertemplate: "%{customdata}<extra></extra>",
    colorbar: { title: { text: "p(top guess)", side: "right" }, thickness: 12, tickformat: ".1f" },
  };
  // Wide enough that every column's guess is readable; the panel scrolls sideways for long prompts.
  const width = Math.max(el.parentElement.clientWidth - 4, n * LENS_COLUMN_PX * (t.font / 12) + 220);
  el.style.width = `${Math.round(width)}px`;
  const layout = {
    ...baseLayout(t),
    height: Math.round(L * (t.font * 2.6) + 130),
    width: Math.round(width),
    margin: { t: 8, r: 8, b: 8, l: 8 },
    xaxis: {
      tickmode: "array",
      tickvals: tokens.map((_, i) => i),
      ticktext: tokens.map((tok) => plotText(shorten(tok, 10))),
      tickangle: -40,
      automargin: true,
      tickfont: { family: t.mono, size: t.font },
      title: { text: "input token at that position" },
    },
    yaxis: {
      tickmode: "array",
      tickvals: z.map((_, l) => l),
      ticktext: z.map((_, l) => (l === L - 1 ? `after L${l} (output)` : `after L${l}`)),
      autorange: "reversed",
      automargin: true,
    },
    shapes:
      pos === null || pos === undefined || pos >= n
        ? []
        : [{ type: "rect", x0: pos - 0.5, x1: pos + 0.5, y0: -0.5, y1: L - 0.5, line: { color: "#D55E00", width: 3 } }],
  };
  await react(el, [trace], { ...layout, autosize: false }, { ...config("logit-lens"), responsive: false });
}
