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
