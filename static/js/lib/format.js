// Number formats for the pages. Formatting only: every number they are given was computed by the server.

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

// A measured number a class can read on a projector: plain decimals from 0.001 up ("0.79", "10.0",
// "1,234"), and below that engineering notation in plain text ("24 × 10⁻⁹"), never "7.9e-1".
const SUPERSCRIPT = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };
export function fmtMeasured(v, digits = 2) {
  if (v === 0) return "0";
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString("en-US");
  if (a >= 0.001) {
    const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(a)));
    return v.toFixed(Math.min(decimals, 6));
  }
  let exp = 3 * Math.floor(Math.log10(a) / 3);
  let m = Number((v / 10 ** exp).toPrecision(digits));
  if (Math.abs(m) >= 1000) {
    m /= 1000;
    exp += 3;
  }
  const sup = String(exp).replace(/[-0-9]/g, (c) => SUPERSCRIPT[c]);
  return `${m} × 10${sup}`;
}

// How a model knows the order of its tokens, in words (the server's `positional`).
const POSITION_NAMES = { rope: "RoPE", learned: "learned positions", none: "no positional encoding" };
export const positionName = (positional) => POSITION_NAMES[positional] ?? positional;
