// The permutation experiment for one head, in one column (position off, or on): the original attention,
// the shuffled run's attention put back in the original order, and their difference, as three small
// canvas maps; under them the verdict numbers, all computed by the server. Token text never goes in as
// HTML: the maps carry numbers only, and the hover readout is set with textContent.

import { LUT } from "../lib/colors.js";
import { hiDpiContext } from "../lib/dom.js";
import { fmtMeasured } from "../lib/format.js";

// PuOr (ColorBrewer): a diverging scale readable with the common colour-vision deficiencies.
const PUOR = ["#542788", "#998ec3", "#d8daeb", "#f7f7f7", "#fee0b6", "#f1a340", "#b35806"];
// The difference maps share one symmetric range: the largest difference on screen, but never below
// MIN_DIFF_RANGE, so float32 rounding (~1e-8) stays white instead of being blown up into a pattern.
export const MIN_DIFF_RANGE = 0.01;
export const diffRange = (conds) => Math.max(MIN_DIFF_RANGE, ...conds.map((c) => c.head_max_diff));
const MASKED = [238, 238, 238];

const hex = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
const PUOR_RGB = PUOR.map(hex);

export function divergingRgb(v, range) {
  const t = Math.max(-1, Math.min(1, v / range)) * 0.5 + 0.5; // 0..1
  const x = t * (PUOR_RGB.length - 1);
  const k = Math.min(PUOR_RGB.length - 2, Math.floor(x));
  const f = x - k;
  return PUOR_RGB[k].map((c, ch) => Math.round(c + (PUOR_RGB[k + 1][ch] - c) * f));
}

// The CSS gradient of the legend, from the same stops.
export const DIVERGING_CSS = `linear-gradient(90deg, ${PUOR.join(", ")})`;

// Differences span 1 down to float32 rounding (~10⁻⁸): decimals, then engineering notation in plain text.
export const sci = (v) => fmtMeasured(v);

const MAPS = [
  { key: "original", title: "original order" },
  { key: "reordered", title: "shuffled, put back" },
  { key: "diff", title: "difference" },
];

// Which cells the causal mask hid: in the original run key j > query i; in the shuffled run the pair
// sat at positions inverse[i], inverse[j].
function maskedCell(key, i, j, causal, inv) {
  if (!causal) return false;
  if (key === "original") return j > i;
  if (key === "reordered") return inv[j] > inv[i];
  return j > i && inv[j] > inv[i];
}

const LABEL_MAX_CHARS = 8;
const LABEL_MIN_SPACING_PX = 11; // closer labels overlap: label every k-th token instead

// Room for token labels around a map: query tokens left of it (only the first map of a row, the others
// sit beside it), key tokens above it, written upwards. Token text is drawn on the canvas as text.
function labelGutter(ctx, labels, withRows, font) {
  ctx.font = font;
  const w = Math.ceil(Math.max(0, ...labels.map((s) => ctx.measureText(s).width))) + 4;
  return { left: withRows ? w : 0, top: w };
}

const shortLabel = (s) => (s.length > LABEL_MAX_CHARS ? `${s.slice(0, LABEL_MAX_CHARS - 1)}…` : s);

function drawLabels(ctx, labels, px, gutter, font, ink) {
  const n = labels.length;
  const stride = Math.max(1, Math.ceil(LABEL_MIN_SPACING_PX / px));
  ctx.font = font;
  ctx.fillStyle = ink;
  ctx.textBaseline = "middle";
  for (let k = 0; k < n; k += stride) {
    const mid = k * px + px / 2;
    if (gutter.left) {
      ctx.textAlign = "right";
      ctx.fillText(labels[k], gutter.left - 3, gutter.top + mid);
    }
    ctx.save();
    ctx.translate(gutter.left + mid, gutter.top - 3);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "left";
    ctx.fillText(labels[k], 0, 0);
    ctx.restore();
  }
}

function drawMap(canvas, matrix, key, causal, inv, px, range, { tokens, withRows }) {
  const n = matrix.length;
  const size = n * px;
  const style = getComputedStyle(canvas.isConnected ? canvas : document.body);
  const font = `${Math.min(12, Math.max(9, px - 2))}px ${style.getPropertyValue("--mono") || "monospace"}`;
  const labels = tokens.map(shortLabel);
  const gutter = labelGutter(canvas.getContext("2d"), labels, withRows, font);
  const ctx = hiDpiContext(canvas, gutter.left + size, gutter.top + size);
  drawLabels(ctx, labels, px, gutter, font, style.getPropertyValue("--ink") || "#000");
  ctx.translate(gutter.left, gutter.top);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const v = matrix[i][j];
      let rgb;
      if (maskedCell(key, i, j, causal, inv)) rgb = MASKED;
      else if (key === "diff") rgb = divergingRgb(v, range);
      else {
        const b = Math.max(0, Math.min(255, Math.round(v * 255))) * 4;
        rgb = [LUT[b], LUT[b + 1], LUT[b + 2]];
      }
      ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
      ctx.fillRect(j * px, i * px, px - (px > 6 ? 1 : 0), px - (px > 6 ? 1 : 0));
    }
  }
  return gutter;
}

function verdictRow(dl, label, value, { id, help, strong = false } = {}) {
  const dt = document.createElement("dt");
  dt.textContent = label;
  if (help) dt.title = help;
  const dd = document.createElement("dd");
  dd.textContent = sci(value);
  dd.dataset.value = String(value);
  if (id) dd.dataset.metric = id;
  if (strong) dd.classList.add("big");
  dl.append(dt, dd);
}

// col: the column element (holds .maps and .verdict); cond: one of the response's conditions.
// onHover(i, j) is called with the cell under the pointer (or nulls when it leaves).
export function renderPermutationColumn(col, cond, data, { mapPx, range, onHover }) {
  const n = data.n;
  const px = Math.max(3, Math.min(28, Math.floor(mapPx / n)));
  const maps = col.querySelector(".maps");
  const figs = MAPS.map(({ key, title }) => {
    const fig = document.createElement("figure");
    fig.className = `map map-${key}`;
    const canvas = document.createElement("canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", `${title}: attention of layer ${data.layer} head ${data.head}`);
    const gutter = drawMap(canvas, cond[key], key, cond.causal, data.inverse, px, range, {
      tokens: data.tokens,
      withRows: key === MAPS[0].key,
    });
    canvas.onpointermove = (e) => {
      const r = canvas.getBoundingClientRect();
      const j = Math.floor((e.clientX - r.left - gutter.left) / px);
      const i = Math.floor((e.clientY - r.top - gutter.top) / px);
      if (i >= 0 && j >= 0 && i < n && j < n) onHover(i, j);
    };
    canvas.onpointerleave = () => onHover(null, null);
    const cap = document.createElement("figcaption");
    cap.textContent = title;
    fig.append(canvas, cap);
    return fig;
  });
  maps.replaceChildren(...figs);

  const dl = col.querySelector(".verdict");
  dl.replaceChildren();
  verdictRow(dl, "largest change in the output: any next-token probability", cond.probs_max_diff, {
    id: "probs",
    strong: true,
    help: "Every probability the model gives, for every next token, at every token of the prompt.",
  });
  verdictRow(dl, "largest change in any output logit", cond.logits_max_diff, { id: "logits" });
  verdictRow(dl, "largest attention change, this head", cond.head_max_diff, { id: "head" });
  verdictRow(dl, "largest attention change, any head", cond.attention_max_diff, { id: "attention" });
  verdictRow(dl, `largest change in the final residual stream (values reach ${fmtMeasured(cond.resid_scale)})`,
    cond.resid_max_diff, {
      id: "resid",
      help: "float32 keeps about 7 significant digits, so on values this large rounding alone is ~1e-5.",
    });
  col.dataset.equivariant = String(cond.equivariant);
  col.querySelector(".verdict-word")?.remove();
  const word = document.createElement("p");
  word.className = `verdict-word ${cond.equivariant ? "same" : "differs"}`;
  word.textContent = cond.equivariant
    ? "Same outputs, just shuffled: the model cannot tell the orders apart (what is left is float32 rounding)."
    : cond.position
      ? "Different outputs: the model can tell the orders apart."
      : "Different outputs, with no position at all: the causal mask alone lets the model tell the orders apart.";
  dl.after(word);
}
