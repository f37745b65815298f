// Shared Plotly plumbing: lazy loading, theme, PNG export config, safe token labels.

// Plotly's bundle is ~4.8 MB and takes over a second to parse, so the explorer loads it after the
// head grid (drawn on canvas) has painted. The URL comes from the page (data-plotly-src on <body>),
// served by our own server, never a CDN. Pages that load it with a <script> tag get the same object.
let plotlyPromise = null;
export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise) {
    plotlyPromise = new Promise((resolve, reject) => {
      const src = document.body.dataset.plotlySrc;
      const existing = document.querySelector("script[data-plotly]");
      const s = existing || document.createElement("script");
      s.addEventListener("load", () => (window.Plotly ? resolve(window.Plotly) : reject(new Error("no Plotly"))));
      s.addEventListener("error", () => {
        plotlyPromise = null;
        reject(new Error("The plotting library could not be loaded from this server."));
      });
      if (!existing) {
        s.src = src;
        s.dataset.plotly = "";
        document.head.append(s);
      }
    });
  }
  return plotlyPromise;
}

const css = (name, fallback) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

// Fonts and colours follow the page (presenter mode makes them larger and higher-contrast).
export function theme() {
  return {
    font: Number(css("--plot-font", "12")),
    ink: css("--ink", "#1d1f23"),
    muted: css("--muted", "#555"),
    grid: css("--line", "#ddd"),
    accent: css("--accent", "#2857c5"),
    family: css("--font", "sans-serif"),
    mono: css("--mono", "monospace"),
  };
}

export function baseLayout(t = theme()) {
  return {
    font: { family: t.family, size: t.font, color: t.ink },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    hoverlabel: { font: { family: t.mono, size: t.font + 1 } },
    margin: { t: 10, r: 10, b: 10, l: 10 },
  };
}

// Plotly 4 shows a "Share chart" button by default that uploads the chart, and with it the student's
// prompt, to Plotly's cloud. The app is offline and used in schools: no chart may offer that. The PNG
// camera stays.
export const CLOUD_BUTTONS = ["sendChartToCloud", "sendDataToCloud", "editInChartStudio"];

export function config(filename) {
  return {
    displaylogo: false, // the mode bar (with Plotly's PNG camera) appears on hover, as Plotly users expect
    showSendToCloud: false,
    showEditInChartStudio: false, // Plotly 2's name for the same upload; ignored by newer versions
    showLink: false,
    plotlyServerURL: "",
    responsive: true,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d", ...CLOUD_BUTTONS],
    toImageButtonOptions: { format: "png", filename, scale: 2 },
  };
}

// Plotly renders labels and hover text as a small subset of HTML; escape token text so "<b>" or
// "<img ...>" typed by a student is shown literally and never interpreted.
export const plotText = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

// Numeric axes with token tick labels (categorical axes would merge repeated tokens such as "the").
// When tokens are too many to label legibly, label every k-th one; hover still names every cell.
// A label slanted at ~50 degrees takes about 1.3 line heights along its axis, a level one about 1.1.
export function tokenTicks(tokens, pixels, fontSize, { first = 0, slanted = false } = {}) {
  const room = Math.max(1, Math.floor(pixels / (fontSize * (slanted ? 1.45 : 1.1))));
  const stride = Math.max(1, Math.ceil((tokens.length - first) / room));
  const tickvals = [];
  const ticktext = [];
  for (let i = first; i < tokens.length; i += stride) {
    tickvals.push(i);
    ticktext.push(plotText(shorten(tokens[i])));
  }
  return { tickmode: "array", tickvals, ticktext };
}

export const shorten = (s, max = 14) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

// Views call this instead of Plotly.react. Calls on one element run one after another, never overlapping:
// when a call's config differs from the one on screen (ours names the PNG after the token or head
// shown), Plotly.react redraws with newPlot and then calls react again, and two such calls in flight on
// one element with different configs undo each other forever, in promise callbacks that never yield to
// the browser, so the tab freezes. The explorer met it after a model switch and Back, when a view was
// asked to draw twice before the first draw ended.
const lastCall = new WeakMap(); // element -> promise of the newest Plotly call queued on it
export async function react(el, traces, layout, cfg) {
  const Plotly = await loadPlotly();
  const before = lastCall.get(el) || Promise.resolve();
  const mine = before
    .catch(() => {}) // an earlier call's failure belongs to its own caller
    .then(() => {
      el.classList.remove("loading");
      return Plotly.react(el, traces, layout, cfg);
    });
  lastCall.set(el, mine);
  try {
    await mine;
  } finally {
    if (lastCall.get(el) === mine) lastCall.delete(el);
  }
  return Plotly;
}
