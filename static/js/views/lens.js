// The logit lens: read the residual stream after every layer through the final norm and unembedding
// as if the model stopped there. Rows are layers, columns the positions of the prompt; each cell shows
// the top guess for the NEXT token and is coloured by its probability (fixed 0..1 Viridis).

import { VIRIDIS } from "../lib/colors.js";
import { baseLayout, config, plotText, react, shorten, theme } from "../lib/plot.js";

export const LENS_COLUMN_PX = 64; // at a 12 px font: room for an 8-character guess
const LENS_FRAME_PX = 230; // layer names on the left, colour bar on the right

// The positions to show: all of a short prompt; for a long one as many as fit the panel, placed so
// the selected token is inside, with most of the window's context to its left.
export function lensWindow(n, pos, size) {
  if (n <= size) return [0, n];
  const end = Math.min(n, Math.max(size, (pos ?? n - 1) + 1 + Math.floor(size / 4)));
  return [end - size, end];
}

// data: {tokens, lens: {k, tokens: [L][n][k], probs: [L][n][k]}, pos}
export async function renderLens(el, data) {
  const { tokens, lens, pos } = data;
  const L = lens.tokens.length;
  const n = tokens.length;
  const column = LENS_COLUMN_PX * (theme().font / 12);
  const fit = Math.max(6, Math.floor((el.parentElement.clientWidth - LENS_FRAME_PX) / column));
  const [a, b] = lensWindow(n, pos, fit);
  const cols = Array.from({ length: b - a }, (_, c) => a + c);
  const t = theme();
  const z = lens.probs.map((layer) => cols.map((i) => layer[i][0]));
  const text = lens.tokens.map((layer) => cols.map((i) => plotText(shorten(layer[i][0], 8))));
  const hover = lens.tokens.map((layer, l) =>
    cols.map((i) => {
      const rows = layer[i].map((tok, r) => `${plotText(tok)}  ${(lens.probs[l][i][r] * 100).toFixed(1)}%`);
      return `after layer ${l}, at token ${i} ${plotText(tokens[i])}<br>${rows.join("<br>")}`;
    }),
  );
  const trace = {
    type: "heatmap",
    x: cols,
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
  // Wide enough that every column's guess is readable; the panel scrolls sideways if it must.
  const width = Math.max(el.parentElement.clientWidth - 4, cols.length * column + LENS_FRAME_PX);
  el.style.width = `${Math.round(width)}px`;
  el.dataset.window = `${a}-${b - 1}`;
  const layout = {
    ...baseLayout(t),
    height: Math.round(L * (t.font * 2.6) + 130),
    width: Math.round(width),
    margin: { t: 8, r: 8, b: 8, l: 8 },
    xaxis: {
      tickmode: "array",
      tickvals: cols,
      ticktext: cols.map((i) => plotText(shorten(tokens[i], 10))),
      tickangle: -40,
      automargin: true,
      tickfont: { family: t.mono, size: t.font },
      title: {
        text: b - a < n ? `input token at that position (positions ${a}–${b - 1} of ${n}: click a token to move)` : "input token at that position",
      },
    },
    yaxis: {
      tickmode: "array",
      tickvals: z.map((_, l) => l),
      ticktext: z.map((_, l) => (l === L - 1 ? `after L${l} (output)` : `after L${l}`)),
      autorange: "reversed",
      automargin: true,
    },
    shapes:
      pos === null || pos === undefined || pos < a || pos >= b
        ? []
        : [{ type: "rect", x0: pos - 0.5, x1: pos + 0.5, y0: -0.5, y1: L - 0.5, line: { color: "#D55E00", width: 3 } }],
  };
  await react(el, [trace], { ...layout, autosize: false }, { ...config("logit-lens"), responsive: false });
}
