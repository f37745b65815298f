// "Dog bites man" vs "man bites dog", one column per condition: the focus token's final representation in
// both sentences as strips of colour (one cell per dimension), their difference, and both sentences'
// next-token predictions. Everything is the server's numbers; token text goes in through textContent.

import { el, hiDpiContext } from "../lib/dom.js";
import { divergingRgb, sci } from "./permutation.js";


// A vector as a strip of cells on a shared symmetric colour range (the range is a drawing choice).
function strip(values, range, label) {
  const canvas = document.createElement("canvas");
  const cell = Math.max(1, Math.min(4, Math.floor(520 / values.length)));
  const w = values.length * cell;
  const h = 18;
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", label);
  const ctx = hiDpiContext(canvas, w, h);
  values.forEach((v, k) => {
    const [r, g, b] = divergingRgb(v, range);
    ctx.fillStyle = `rgb(${r},${g},${b})`;
    ctx.fillRect(k * cell, 0, cell, h);
  });
  return canvas;
}

function predictions(title, top) {
  const box = el("div", "preds");
  box.append(el("div", "preds-title", title));
  const max = Math.max(...top.map((t) => t.prob), 1e-9);
  for (const t of top) {
    const row = el("div", "pred");
    row.append(el("span", "pred-tok mono", t.token));
    const bar = el("span", "pred-bar");
    bar.style.width = `${Math.round((t.prob / max) * 100)}%`;
    const barBox = el("span", "pred-barbox");
    barBox.append(bar);
    row.append(barBox, el("span", "pred-p mono", t.prob.toFixed(3)));
    box.append(row);
  }
  return box;
}

export function renderOrderColumn(col, cond, data, { title }) {
  const word = data.tokens_a[data.focus];
  const { a, b } = cond.focus;
  // Colours saturate at the 95th percentile of |value|: a few huge dimensions would otherwise wash out
  // every other cell (and the difference strip, drawn on the same range).
  const mags = [...a, ...b].map(Math.abs).sort((x, y) => x - y);
  const range = Math.max(mags[Math.floor(0.95 * (mags.length - 1))], 1e-9);
  const diff = a.map((v, k) => v - b[k]);
  const same = cond.focus.max_diff <= 1e-5 * Math.max(1, mags[mags.length - 1]);

  const head = el("h3");
  head.append(el("span", null, `${title}: `), el("span", "mono", word));
  const strips = el("div", "vec-strips");
  const rows = [
    ["first sentence", a],
    ["second sentence", b],
    ["difference", diff],
  ];
  for (const [label, values] of rows) {
    const row = el("div", "vec-row");
    row.append(el("span", "vec-label", label), strip(values, range, `${label}: ${values.length} numbers`));
    strips.append(row);
  }
  strips.append(el("p", "hint", `${a.length} numbers, one cell each; colours saturate at ±${sci(range)}`));
  const numbers = el("dl", "verdict small");
  const add = (label, value, metric, text) => {
    const dd = el("dd", null, text ?? sci(value));
    dd.dataset.value = String(value);
    dd.dataset.metric = metric;
    numbers.append(el("dt", null, label), dd);
  };
  add(`largest difference in ${word}'s representation`, cond.focus.max_diff, "focus");
  add("cosine similarity", cond.focus.cosine, "cosine", cond.focus.cosine.toFixed(6));
  add("largest change in a next-token probability", cond.next.max_diff, "next");

  const verdict = el("p", `verdict-word ${same ? "same" : "differs"}`);
  verdict.textContent = same
    ? `Identical: ${word} ends up the same in both sentences, and so does the prediction.`
    : cond.position
      ? "Different: the model knows who did what to whom."
      : `Different, but only because of the mask: ${word} sees different words before it (see the note above).`;

  const preds = el("div", "preds-pair");
  preds.append(predictions("next token after the first", cond.next.a), predictions("after the second", cond.next.b));
  col.replaceChildren(head, strips, numbers, verdict, preds);
  col.dataset.same = String(same);
}
