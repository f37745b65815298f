// One head's attention as a large heatmap on <canvas>, with no plotting library: query tokens down the
// left (rows), key tokens along the bottom (columns), the same fixed 0..1 Viridis scale as the grid,
// the masked future light grey, and the exact weight of the cell under the pointer in a caption.
// Used where Plotly is not available (the offline export); token text is drawn with fillText, never HTML.

import { LUT } from "../lib/colors.js";
import { hiDpiContext } from "../lib/dom.js";

const state = new WeakMap(); // el -> {canvas, readout, geometry, data}
const LABEL_MAX = 12; // characters of a token label before it is shortened

const short = (s) => (s.length > LABEL_MAX ? `${s.slice(0, LABEL_MAX - 1)}…` : s);

// data: {tokens, matrix: Float32Array(n*n) (row = query), causal, title}
export function renderHeadmap(el, data) {
  let s = state.get(el);
  if (!s) {
    s = build(el);
    state.set(el, s);
  }
  s.data = data;
  draw(s, el.clientWidth || 600);
  s.readout.textContent = "Point at a cell for its exact weight.";
}

function build(el) {
  const canvas = document.createElement("canvas");
  canvas.className = "headmap-canvas";
  const readout = document.createElement("p");
  readout.className = "headmap-readout";
  readout.setAttribute("aria-live", "polite");
  el.replaceChildren(canvas, readout);
  const s = { canvas, readout };
  canvas.addEventListener("pointermove", (e) => hover(s, e));
  canvas.addEventListener("pointerleave", () => {
    s.readout.textContent = "Point at a cell for its exact weight.";
  });
  return s;
}

function draw(s, width) {
  const { tokens, matrix, causal } = s.data;
  const n = tokens.length;
  const font = 12;
  const probe = s.canvas.getContext("2d");
  probe.font = `${font}px monospace`;
  const labelW = Math.ceil(Math.max(...tokens.map((t) => probe.measureText(short(t)).width))) + 26;
  const barW = 56;
  const side = Math.max(120, Math.min(width - labelW - barW - 8, 720));
  const cell = side / n;
  const labelH = labelW * 0.75; // column labels are slanted at 45 degrees
  const ctx = hiDpiContext(s.canvas, labelW + side + barW, side + labelH + 8);
  const img = ctx.createImageData(n, n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const p = (i * n + j) * 4;
      const masked = causal && j > i;
      const o = Math.round(Math.min(1, Math.max(0, matrix[i * n + j])) * 255) * 4;
      img.data[p] = masked ? 238 : LUT[o];
      img.data[p + 1] = masked ? 238 : LUT[o + 1];
      img.data[p + 2] = masked ? 238 : LUT[o + 2];
      img.data[p + 3] = 255;
    }
  }
  const pic = document.createElement("canvas");
  pic.width = pic.height = n;
  pic.getContext("2d").putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(pic, labelW, 0, side, side);
  ctx.fillStyle = getComputedStyle(s.canvas).color || "#000";
  // Labels stay readable (at least 9 px): when cells are smaller, every `step`-th token is labelled
  // and the caption under the picture names the cell under the pointer.
  const size = Math.min(font, Math.max(9, cell - 1));
  const step = Math.ceil((size + 1) / cell);
  ctx.font = `${size}px monospace`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  tokens.forEach((t, i) => i % step || ctx.fillText(`${short(t)} ${i}`, labelW - 4, (i + 0.5) * cell));
  tokens.forEach((t, j) => {
    if (j % step) return;
    ctx.save();
    ctx.translate(labelW + (j + 0.5) * cell, side + 4);
    ctx.rotate(-Math.PI / 4);
    ctx.fillText(`${short(t)} ${j}`, 0, 0);
    ctx.restore();
  });
  colourBar(ctx, labelW + side + 12, side);
  s.geometry = { x0: labelW, side, cell, n };
}

function colourBar(ctx, x, h) {
  for (let y = 0; y < h; y++) {
    const o = Math.round((1 - y / h) * 255) * 4;
    ctx.fillStyle = `rgb(${LUT[o]},${LUT[o + 1]},${LUT[o + 2]})`;
    ctx.fillRect(x, y, 12, 1.5);
  }
  ctx.textAlign = "left";
  ctx.fillStyle = "#000";
  ctx.fillText("1", x + 16, 6);
  ctx.fillText("0", x + 16, h - 6);
}

function hover(s, e) {
  const { x0, side, cell, n } = s.geometry;
  const r = s.canvas.getBoundingClientRect();
  const x = e.clientX - r.left - x0;
  const y = e.clientY - r.top;
  if (x < 0 || y < 0 || x >= side || y >= side) return;
  const i = Math.floor(y / cell);
  const j = Math.floor(x / cell);
  const { tokens, matrix, causal } = s.data;
  const what = causal && j > i ? "masked: a token cannot look ahead" : `weight ${matrix[i * n + j].toFixed(4)}`;
  s.readout.textContent = `query ${i} “${tokens[i]}” → key ${j} “${tokens[j]}”: ${what}`;
  s.canvas.dataset.hover = `${i},${j}`;
}
