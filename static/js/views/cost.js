// The cost lab's charts, all on log-log axes: FLOPs per layer against n, KV-cache bytes against n, and
// the measured timings and peak memory. Each is `render(el, data)`; the data come straight from the server.

import { CATEGORY, MODEL_COLOR } from "../lib/colors.js";
import { fmtBytes, fmtInt } from "../lib/format.js";
import { baseLayout, config, plotText, react, theme } from "../lib/plot.js";

// automargin: Plotly makes room for the tick labels and puts the title beyond them, so "100GB" in
// presenter type never runs into the axis title (a fixed margin did).
const logAxis = (t, title, extra = {}) => ({
  type: "log",
  title: { text: title, font: { size: t.font }, standoff: 6 },
  automargin: true,
  gridcolor: t.grid,
  zeroline: false,
  exponentformat: "SI",
  dtick: 1, // one labelled tick per power of ten: minor "2" and "5" labels read as values
  ...extra,
});

// A vertical marker as a two-point line: shapes on log axes want log10 coordinates, traces do not.
function vline(x, [y0, y1], name, style) {
  return {
    type: "scatter", mode: "lines", x: [x, x], y: [y0, y1], name, hoverinfo: "skip",
    line: { width: 1.5, ...style }, showlegend: Boolean(name),
  };
}

// Legends under the plot, so they never cover the lines.
const BELOW = (t) => ({ orientation: "h", x: 0, y: -0.2, yanchor: "top", font: { size: t.font - 1 } });

const extent = (arrays) => {
  const all = arrays.flat().filter((v) => v > 0);
  return [Math.min(...all), Math.max(...all)];
};

// data: {ns, curve, model (the CostModel entry), n}
export async function renderFlops(el, { ns, curve, model, n }) {
  const t = theme();
  const series = [
    ["attention: n² part (scores + weighted sum)", curve.attention_quadratic, CATEGORY.attention, "solid"],
    ["attention: q, k, v, o projections", curve.attention_projections, "#56B4E9", "dot"],
    ["feed-forward", curve.feed_forward, CATEGORY.mlp, "solid"],
  ];
  const [lo, hi] = extent(series.map((s) => s[1]));
  const traces = series.map(([name, y, color, dash]) => ({
    type: "scatter", mode: "lines", x: ns, y, name, line: { color, width: 3, dash },
    hovertemplate: `n = %{x:,}<br>${name}: %{y:.3s} FLOPs<extra></extra>`,
  }));
  const cross = model.crossover_n;
  if (cross >= ns[0] && cross <= ns[ns.length - 1]) {
    traces.push(vline(cross, [lo, hi], `crossover n = ${fmtInt(cross)}`, { color: t.muted, dash: "dash" }));
  }
  traces.push(vline(n, [lo, hi], `your n = ${fmtInt(n)}`, { color: CATEGORY.chosen, width: 2 }));
  const layout = {
    ...baseLayout(t),
    margin: { t: 8, r: 10, b: 10, l: 10 },
    legend: BELOW(t),
    xaxis: logAxis(t, "tokens n"),
    yaxis: logAxis(t, "FLOPs per layer"),
  };
  await react(el, traces, layout, config(`flops-${model.key}`));
}

// data: {ns, curves, models (CostModel entries, same order), n}
export async function renderKV(el, { ns, curves, models, n }) {
  const t = theme();
  const traces = [];
  curves.forEach((c, i) => {
    const m = models[i];
    const color = MODEL_COLOR[c.key] || t.ink;
    const label = m.live ? `${plotText(c.name)} (live)` : plotText(c.name);
    const gqa = m.config.n_kv_head < m.config.n_head;
    // One legend entry per model; its dotted "as if multi-head" line toggles with it.
    traces.push({
      type: "scatter", mode: "lines", x: ns, y: c.kv_bytes, line: { color, width: 3 }, legendgroup: c.key,
      name: gqa ? `${label}: GQA, ${m.config.n_kv_head} K/V heads (dotted: as MHA)` : `${label}: MHA`,
      hovertemplate: `${label}<br>n = %{x:,}: %{y:.3s}B<extra></extra>`,
    });
    if (gqa) {
      traces.push({
        type: "scatter", mode: "lines", x: ns, y: c.kv_mha_bytes, line: { color, width: 2, dash: "dot" },
        legendgroup: c.key, showlegend: false, name: `${label}, as plain multi-head`,
        hovertemplate: `${label}, as plain multi-head<br>n = %{x:,}: %{y:.3s}B<extra></extra>`,
      });
    }
  });
  const [lo, hi] = extent(curves.flatMap((c) => [c.kv_bytes, c.kv_mha_bytes]));
  traces.push(vline(n, [lo, hi], null, { color: CATEGORY.chosen, width: 2 }));
  const layout = {
    ...baseLayout(t),
    margin: { t: 8, r: 10, b: 10, l: 10 },
    legend: BELOW(t),
    xaxis: logAxis(t, "tokens n (cached)"),
    yaxis: logAxis(t, "KV cache (float16)", { ticksuffix: "B" }),
  };
  await react(el, traces, layout, config("kv-cache"));
}

// data: the /api/cost/timing answer
export async function renderTiming(el, data) {
  const t = theme();
  const styles = { attention: [CATEGORY.attention, "one layer's attention"], block: [CATEGORY.mlp, "one whole block"] };
  const traces = [];
  for (const [key, secs] of Object.entries(data.seconds)) {
    const [color, name] = styles[key] || [t.ink, key];
    traces.push({
      type: "scatter", mode: "lines+markers", x: data.ns, y: secs.map((s) => s * 1000), name,
      line: { color, width: 2 }, marker: { size: 8, color },
      hovertemplate: `${name}<br>n = %{x:,}: %{y:.3f} ms<extra></extra>`,
    });
    const fit = data.fits[key];
    if (fit) {
      traces.push({
        type: "scatter", mode: "lines", x: fit.fit_ns, y: fit.fitted.map((s) => s * 1000),
        name: `fit: time ∝ n^${fit.exponent.toFixed(2)}`, line: { color, width: 6, dash: "dot" }, opacity: 0.45,
        hoverinfo: "skip",
      });
    }
  }
  const layout = {
    ...baseLayout(t),
    margin: { t: 8, r: 10, b: 10, l: 10 },
    legend: BELOW(t),
    xaxis: logAxis(t, "tokens n", { tickvals: data.ns, ticktext: data.ns.map(fmtInt) }),
    yaxis: logAxis(t, "median time (ms)"),
  };
  await react(el, traces, layout, config("attention-timing"));
}

// data: the /api/cost/memory answer. Measured peaks (explicit, fused) and, dotted, the n x n scores and
// probabilities the explicit path must hold: the measured explicit line should sit on it.
export async function renderMemory(el, data) {
  const t = theme();
  const series = [
    [data.explicit, CATEGORY.attention, "explicit (n × n kept)", "lines+markers", "solid"],
    [data.fused, CATEGORY.mlp, "fused scaled_dot_product_attention", "lines+markers", "solid"],
    [data.predicted, t.muted, "n² scores + probabilities, 8 bytes × heads × n²", "lines", "dot"],
  ];
  const traces = series.map(([bytes, color, name, mode, dash]) => ({
    type: "scatter", mode, x: data.ns, y: bytes.map((b) => Math.max(b, 1)), name, line: { color, width: 2, dash }, marker: { size: 8, color },
    hovertemplate: `${name}<br>n = %{x:,}: %{y:.3s}B<extra></extra>`,
  }));
  const layout = {
    ...baseLayout(t),
    margin: { t: 8, r: 10, b: 10, l: 10 },
    legend: BELOW(t),
    xaxis: logAxis(t, "tokens n", { tickvals: data.ns, ticktext: data.ns.map(fmtInt) }),
    yaxis: logAxis(t, "peak memory", { ticksuffix: "B" }),
  };
  await react(el, traces, layout, config("attention-memory"));
}

// One line of the KV list: "Llama-2-70B: 1.34 GB instead of 10.7 GB, 8× less (64 query heads share 8 K/V heads)".
export function kvItem(m, n) {
  const li = document.createElement("li");
  const name = document.createElement("strong");
  name.textContent = m.live ? `${m.name} (live)` : m.name;
  li.append(name);
  if (m.config.n_kv_head < m.config.n_head) {
    const factor = document.createElement("span");
    factor.className = "factor";
    factor.textContent = `${m.kv_cache.saving}× less`;
    li.append(
      `: ${fmtBytes(m.kv_cache.bytes)} instead of ${fmtBytes(m.kv_cache.mha_bytes)} at n = ${fmtInt(n)}, `,
      factor,
      ` (${m.config.n_head} query heads share ${m.config.n_kv_head} K/V heads)`,
    );
  } else {
    li.append(`: ${fmtBytes(m.kv_cache.bytes)} at n = ${fmtInt(n)}, multi-head (every head keeps its own K/V)`);
  }
  return li;
}
