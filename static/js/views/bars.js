// Labelled horizontal bars in plain HTML (no plotting library): the next-token probabilities and the
// residual stream's size stage by stage, where Plotly is not available (the offline export).
// Labels are token text or stage names: they go in through textContent only.

import { el } from "../lib/dom.js";

// data: {rows: [{label, value, text, mark}], max, caption}; bar length = value / max of the row's track.
export function renderBars(target, data) {
  const list = el("ol", "xbars");
  for (const row of data.rows) {
    const li = el("li", row.mark ? "xbar mark" : "xbar");
    const track = el("span", "xbar-track");
    const fill = el("span", "xbar-fill");
    fill.style.width = `${Math.max(0, Math.min(1, row.value / data.max)) * 100}%`;
    track.append(fill);
    li.append(el("span", "xbar-label", row.label), track, el("span", "xbar-num", row.text));
    list.append(li);
  }
  target.replaceChildren(...(data.caption ? [el("p", "caption", data.caption)] : []), list);
}
