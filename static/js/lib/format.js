// Display helpers shared by the cost lab and the anatomy page. Formatting only: every number they are
// given was computed by the server.

export const fmtInt = (x) => Math.round(x).toLocaleString("en-US");

// Decimal units (1 KB = 1000 B), as the server's human_bytes and the chapter's "40 GB" use.
export function fmtBytes(b) {
  const units = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
  let i = 0;
  while (Math.abs(b) >= 1000 && i < units.length - 1) {
    b /= 1000;
    i++;
  }
  return i === 0 ? `${Math.round(b)} B` : `${b.toPrecision(3)} ${units[i]}`;
}

// Big counts in words ("17.2 billion"), so a table of 10^9..10^16 stays readable.
export function fmtWords(x) {
  const names = [[1e15, "quadrillion"], [1e12, "trillion"], [1e9, "billion"], [1e6, "million"]];
  for (const [v, name] of names) if (Math.abs(x) >= v) return `${(x / v).toPrecision(3)} ${name}`;
  return fmtInt(x);
}

export const fmtRatio = (x) => (x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toPrecision(2));

// Okabe-Ito colours per model, readable with colour-vision deficiencies; the live model stands out.
export const MODEL_COLOR = {
  live: "#D55E00",
  "gpt2-small": "#7f7f7f",
  "llama-2-7b": "#0072B2",
  "llama-2-70b": "#009E73",
  "llama-3-8b": "#CC79A7",
};

export function showError(el, message) {
  el.textContent = message || "";
  el.hidden = !message;
}

// The element with the given id, or a clear failure if the template and the script disagree.
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id} in the page`);
  return el;
}
