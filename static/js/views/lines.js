// One head as lines between tokens (the idea of BertViz's head view): the prompt twice, queries on the
// left and keys on the right; a line from query i to key j is as opaque and thick as the weight of that
// attention. Hover a token to see only its lines. Drawn on canvas: thousands of lines stay fast.

import { withoutSink } from "../lib/attention.js";
import { CATEGORY } from "../lib/colors.js";
import { hiDpiContext } from "../lib/dom.js";
import { theme } from "../lib/plot.js";

const state = new WeakMap();

// data: {tokens, matrix, causal, hideSink, highlight}
export function renderLines(el, data) {
  let s = state.get(el);
  if (!s) {
    const canvas = document.createElement("canvas");
    canvas.className = "lines-canvas";
    canvas.setAttribute("role", "img");
    el.replaceChildren(canvas);
    s = { canvas, focus: null };
    state.set(el, s);
    canvas.addEventListener("pointermove", (e) => {
      const f = hit(s, e);
      if (f?.side !== s.focus?.side || f?.i !== s.focus?.i) {
        s.focus = f;
        draw(s);
      }
    });
    canvas.addEventListener("pointerleave", () => {
      s.focus = null;
      draw(s);
    });
  }
  s.data = data;
  s.width = el.clientWidth || 600;
  s.canvas.setAttribute("aria-label", `Attention as lines between ${data.tokens.length} tokens`);
  draw(s);
}

export function highlightLines(el, i) {
  const s = state.get(el);
  if (!s) return;
  s.data = { ...s.data, highlight: i };
  draw(s);
}

export const linesCanvas = (el) => {
  const s = state.get(el);
  if (!s) return null;
  draw(s, { background: true });
  const copy = document.createElement("canvas");
  copy.width = s.canvas.width;
  copy.height = s.canvas.height;
  copy.getContext("2d").drawImage(s.canvas, 0, 0);
  draw(s);
  return copy;
};

const LABEL_MAX = 18;
const label = (tok) => (tok.length > LABEL_MAX ? `${tok.slice(0, LABEL_MAX - 1)}…` : tok);

function geometry(s) {
  const t = theme();
  const font = t.font + 1;
  const row = Math.round(font * 1.55);
  const top = Math.round(font * 2);
  // Each token column is as wide as its longest label (and the header), measured in the real font.
  const ctx = s.canvas.getContext("2d");
  ctx.font = `bold ${font}px ${t.mono}`;
  const widest = Math.max(ctx.measureText("query (looking)").width, ...s.data.tokens.map((x) => ctx.measureText(label(x)).width));
  const colW = Math.min(s.width * 0.3, widest + 12);
  // Lines about as long as BertViz's: slopes stay readable instead of flattening across a wide panel.
  const span = Math.min(s.width - 2 * colW, Math.max(240, font * 26));
  const xL = (s.width - span) / 2;
  return { t, font, row, top, xL, xR: xL + span, height: top + s.data.tokens.length * row + 6 };
}

function hit(s, e) {
  const g = geometry(s);
  const r = s.canvas.getBoundingClientRect();
  const y = e.clientY - r.top - g.top;
  const i = Math.floor(y / g.row);
  if (i < 0 || i >= s.data.tokens.length) return null;
  return { side: e.clientX - r.left < s.width / 2 ? "query" : "key", i };
}

function draw(s, { background = false } = {}) {
  const { tokens, matrix, causal, hideSink } = s.data;
  const n = tokens.length;
  const g = geometry(s);
  const ctx = hiDpiContext(s.canvas, s.width, g.height);
  if (background) {
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, s.width, g.height);
  }
  const first = hideSink ? 1 : 0;
  const values = hideSink ? withoutSink(matrix, n) : matrix;
  const w = n - first;
  // A hovered token in the token strip acts like hovering its query on the left.
  const focus = s.focus || (s.data.highlight !== null && s.data.highlight !== undefined
    ? { side: "query", i: s.data.highlight } : null);
  const y = (i) => g.top + i * g.row + g.row / 2;
  const pad = 8;
  ctx.lineCap = "round";
  for (let i = 0; i < n; i++) {
    for (let jj = 0; jj < w; jj++) {
      const j = jj + first;
      if (causal && j > i) break;
      const v = values[i * w + jj];
      if (!(v > 0.01)) continue;
      const mine = focus && ((focus.side === "query" && focus.i === i) || (focus.side === "key" && focus.i === j));
      ctx.globalAlpha = focus ? (mine ? Math.min(1, 0.15 + v) : v * 0.08) : v * 0.85;
      ctx.strokeStyle = CATEGORY.attention;
      ctx.lineWidth = (mine ? 1.5 : 1) + 3 * v;
      ctx.beginPath();
      ctx.moveTo(g.xL + pad, y(i));
      ctx.lineTo(g.xR - pad, y(j));
      ctx.stroke();
    }
  }
  ctx.globalAlpha = 1;
  ctx.font = `${g.font}px ${g.t.mono}`;
  ctx.textBaseline = "middle";
  ctx.fillStyle = g.t.muted;
  ctx.textAlign = "right";
  ctx.fillText("query (looking)", g.xL, g.top / 2);
  ctx.textAlign = "left";
  ctx.fillText("key (looked at)", g.xR, g.top / 2);
  for (let i = 0; i < n; i++) {
    const text = label(tokens[i]);
    for (const side of ["query", "key"]) {
      const active = focus && focus.side === side && focus.i === i;
      const hidden = side === "key" && i < first;
      ctx.fillStyle = hidden ? "#9aa0a6" : active ? g.t.accent : g.t.ink;
      ctx.font = `${active ? "bold " : ""}${g.font}px ${g.t.mono}`;
      ctx.textAlign = side === "query" ? "right" : "left";
      ctx.fillText(text, side === "query" ? g.xL : g.xR, y(i));
    }
  }
}
