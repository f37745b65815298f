// The explorer page: type a prompt, see every head, open one, follow a token to its next-token guess.
// This module only wires things together: api.js fetches, store.js keeps the state in the URL, the
// views draw. Every keystroke is sent at once when no trace is in flight; otherwise the newest text
// waits for the answer in flight (api.latest()), so the views follow typing without a fixed pause.
// Generation (Append, Sample, Generate N) lives in explorer_generate.js.

import * as api from "../lib/api.js";
import { decodeThumbnails, decodeU16 } from "../lib/attention.js";
import { loadPlotly } from "../lib/plot.js";
import { pngButton } from "../lib/png.js";
import { showError } from "../lib/dom.js";
import * as gen from "./explorer_generate.js";
import * as store from "../lib/store.js";
import { markTokens, renderTokens } from "../views/tokens.js";
import { showScore } from "./explorer_score.js";
import { gridBadges, mountHeadKnockout, mountRoleFilter, resetHeadKnockout, scoreText, showRoles } from "./explorer_roles.js";
import { gridCanvas, gridZoom, renderGrid, updateGrid } from "../views/grid.js";
import { highlightHeatmap, renderHeatmap } from "../views/heatmap.js";
import { renderLens } from "../views/lens.js";
import { highlightLines, linesCanvas, renderLines } from "../views/lines.js";
import { renderNext } from "../views/nexttoken.js";
import { renderResidualMap, renderResidualStory } from "../views/residual.js";

store.define({
  pos: { type: "int", def: null }, // the token followed by the residual and next-token views; null = last
  temp: { type: "float", def: 1 },
  sink: { type: "bool", def: false }, // true: hide token 0 and renormalise the rows
  zoom: { type: "int", def: 0 }, // head grid: steps of 1.25x from the size that fits the window
});

const TOP_K = 10; // bars in the next-token view, and the most a draw can choose among
const SLIDER_DEBOUNCE_MS = 150;

const $ = (id) => document.getElementById(id);
const ui = {
  prompt: $("prompt"),
  presets: $("presets"),
  status: $("status"),
  tokens: $("tokens"),
  grid: $("head-grid"),
  smaller: $("grid-smaller"),
  larger: $("grid-larger"),
  gridCaption: $("grid-caption"),
  detailTitle: $("detail-title"),
  detailHint: $("detail-hint"),
  detailBody: $("detail-body"),
  precision: $("detail-precision"),
  heatmap: $("detail-heatmap"),
  lines: $("detail-lines"),
  score: $("detail-score"),
  linesPng: $("lines-png"),
  scores: $("head-scores"),
  sink: $("sink-toggle"),
  viewButtons: [...document.querySelectorAll("#detail-panel [data-view]")],
  nextCaption: $("next-caption"),
  nextPlot: $("next-plot"),
  temperature: $("temperature"),
  tempOut: $("temp-out"),
  residStory: $("resid-story"),
  residMap: $("resid-map"),
  lens: $("lens-plot"),
};
const errors = {
  prompt: $("prompt-error"),
  detail: $("detail-error"),
  next: $("next-error"),
  resid: $("resid-error"),
  lens: $("lens-error"),
};

let models = null; // /api/models
let current = null; // the trace on screen: {seq, data, att (thumbnails), prompt, model, temp, nKvHead, lens, preds}
let exact = null; // full-precision pattern of the open head from /api/head: {key, pattern, scores, kvHead}
let lensVisible = false; // the lens panel is on screen: its data is fetched only then
let hover = null; // token index under the pointer
// Answers that a newer keystroke has superseded are still drawn (grid and tokens only), so the views
// keep up with a fast typist; they arrive in order, and the newest always lands last.
const traces = api.latest({ stale: true });
const exactHeads = api.latest();
const lenses = api.latest();
const allPredictions = api.latest();

// ---- the trace: one request per prompt, everything on the page is drawn from it ----

async function runTrace() {
  const st = store.get();
  if (!st.prompt.trim()) {
    traces.cancel();
    gen.stop("Stopped: the prompt is empty,");
    document.body.classList.remove("busy");
    showError(errors.prompt, "The prompt is empty: type a prompt (or pick a class demo) to see the model's attention.");
    // Whatever is on screen belongs to an older prompt: dim it and say so.
    document.body.classList.add(current ? "stale" : "failed");
    ui.status.textContent = current ? `The views below still show “${short(current.prompt)}” (dimmed).` : "";
    gen.update();
    return;
  }
  const t0 = performance.now();
  // A keystroke asks for the last position's prediction only (a third of the forward on an 8k vocabulary);
  // the other positions' come with one more request when a student selects an earlier token.
  const body = { prompt: st.prompt, model: st.model || null, temperature: st.temp, top_k: TOP_K, predict: "last" };
  // Sent before the page touches the DOM, so the server starts while the browser restyles.
  const answer = traces.run((signal) => api.trace(body, { signal }));
  document.body.classList.add("busy");
  ui.status.textContent = "Running the model…";
  gen.update(); // the views now belong to an older prompt: nothing to append to until the answer
  const r = await answer;
  if (!r) return; // replaced by a newer keystroke before it was answered, or cancelled
  const seq = r.id;
  if (r.error) {
    document.body.classList.remove("busy");
    gen.stop("Stopped by an error");
    showError(errors.prompt, r.error.message);
    ui.status.textContent = current ? `The views below still show “${short(current.prompt)}” (dimmed).` : "";
    // With something on screen, dim it; with nothing yet, the empty views say where the problem is.
    document.body.classList.add(current ? "stale" : "failed");
    gen.update();
    return;
  }
  if (!r.stale) document.body.classList.remove("busy");
  const data = r.data;
  const t1 = performance.now();
  const att = decodeThumbnails(data.thumbnails);
  const info = models?.models.find((m) => m.name === data.model);
  openShowcase(data.showcase);
  current = {
    seq, data, att, prompt: body.prompt, model: st.model, temp: body.temperature,
    nKvHead: info?.n_kv_head ?? att.nHead, preds: new Map(data.predictions.map((p) => [p.position, p.top])),
  };
  exact = null;
  showError(errors.prompt, null);
  document.body.classList.remove("stale", "failed");
  drawFast();
  const t2 = performance.now();
  ui.grid.dataset.seq = String(seq);
  if (r.stale) {
    window.dispatchEvent(new CustomEvent("atlas:grid", { detail: { seq, n: data.n, stale: true, prompt: body.prompt } }));
    return; // the newest text is already on its way; its answer draws the rest
  }
  ui.status.textContent = `${data.n} tokens · ${data.model}: model and transfer ${Math.round(t1 - t0)} ms, grid drawn in ${Math.round(t2 - t1)} ms`;
  window.dispatchEvent(new CustomEvent("atlas:grid", {
    detail: { seq, n: data.n, fetchMs: t1 - t0, drawMs: t2 - t1, stale: false, prompt: body.prompt },
  }));
  // Plotly's views after the grid has reached the screen, so typing feels instant.
  requestAnimationFrame(() => setTimeout(async () => {
    if (!traces.isCurrent(seq)) return;
    await drawPlots();
    if (!traces.isCurrent(seq)) return;
    ui.grid.dataset.settled = String(seq); // every view shows this trace (tests and bench/ wait for it)
    gen.afterTrace(current);
  }, 0));
}

const short = (s, max = 40) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

// First load with no head in the URL: open the head the server picked for this prompt (the one that
// most sharply picks out one earlier token, labs/showcase.py), before `current` is set so that the
// store's listeners do not draw it twice.
let showcaseDone = false;
function openShowcase(show) {
  if (showcaseDone) return;
  showcaseDone = true;
  const st = store.get();
  if (st.layer !== null || st.head !== null || !show) return;
  store.set({ layer: show.layer, head: show.head }, { history: "replace" });
  $("detail-why").textContent = `Opened first: L${show.layer} H${show.head}, the head that most sharply picks out one ` +
    `earlier token on this prompt (on average ${Math.round(show.score * 100)}% of a row's attention on one token).`;
}

const selectedPos = () => {
  const p = store.get().pos;
  const n = current.data.n;
  return p === null || p < 0 || p >= n ? n - 1 : p;
};

function openHead() {
  const { layer, head } = store.get();
  if (!current || layer === null || head === null) return null;
  if (layer >= current.att.nLayer || head >= current.att.nHead) return null;
  return { layer, head };
}

// Token strip and head grid: canvas and DOM only, no Plotly, so they paint within a frame.
function drawFast() {
  const { data, att, nKvHead } = current;
  renderTokens(ui.tokens, data.tokens, {
    groups: data.groups,
    selected: selectedPos(),
    onHover: setHover,
    onSelect: (i) => store.set({ pos: i }),
  });
  hover = null;
  renderGrid(ui.grid, {
    att,
    nKvHead,
    open: openHead(),
    highlight: null,
    zoom: store.get().zoom,
    badges: gridBadges(current.model),
    onOpen: (layer, head) => {
      $("detail-why").textContent = "";
      store.set({ layer, head });
      if (ui.detailPanel?.getBoundingClientRect().top > window.innerHeight) ui.detailPanel.scrollIntoView();
    },
  });
  ui.gridCaption.textContent = gridCaption(att, nKvHead);
  // The score names come from /api/heads, which may answer after the open head's scores.
  showRoles(ui.grid, current.model).then(() => renderScores(shownScores));
  const zoom = gridZoom(ui.grid);
  ui.smaller.disabled = zoom.zoom <= zoom.min;
  ui.larger.disabled = zoom.zoom >= zoom.max;
}

function gridCaption(att, nKvHead) {
  const nRep = att.nHead / nKvHead;
  const rows = `Each square is one head's attention pattern: rows are layers 0–${att.nLayer - 1} (input side at the top), columns are heads`;
  const groups = nKvHead < att.nHead
    ? `. Grouped-query attention: the ${nRep} heads in each shaded box share one key/value head.`
    : "; every head has its own keys and values.";
  const pixels = parseFloat(ui.grid.style.getPropertyValue("--thumb")) * (window.devicePixelRatio || 1);
  const pooled = att.n > Math.min(pixels, att.side)
    ? ` With ${att.n} tokens, each pixel shows the largest weight among the tokens it covers.` : "";
  return rows + groups + pooled;
}
ui.detailPanel = $("detail-panel");

function drawPlots() {
  return Promise.all([renderDetail(), renderPosViews(), renderLensView()]);
}

async function guarded(errorEl, fn) {
  try {
    await fn();
    showError(errorEl, null);
  } catch (e) {
    showError(errorEl, `This view could not be drawn: ${e.message}`);
  }
}

// ---- head detail ----

async function renderDetail() {
  if (!current) return;
  const h = openHead();
  updateGrid(ui.grid, { open: h });
  ui.detailHint.hidden = Boolean(h);
  ui.detailBody.hidden = !h;
  const st = store.get();
  for (const b of ui.viewButtons) b.setAttribute("aria-pressed", String(b.dataset.view === st.view));
  ui.sink.checked = st.sink;
  if (!h) {
    ui.detailTitle.textContent = "One head";
    ui.linesPng.hidden = true;
    return;
  }
  const { layer, head } = h;
  resetHeadKnockout();
  const kv = Math.floor(head / (current.att.nHead / current.nKvHead));
  ui.detailTitle.textContent =
    current.nKvHead < current.att.nHead ? `Layer ${layer}, head ${head} (K/V head ${kv})` : `Layer ${layer}, head ${head}`;
  const key = `${current.seq}:${layer}:${head}`;
  const precise = exact && exact.key === key;
  const matrix = precise ? exact.pattern : current.att.matrix(layer, head);
  const help = st.view === "lines"
    ? "Each line joins a token (left) to a token it looks at (right); darker = more attention. Hover a token."
    : "Rows: the token looking; columns: the token looked at. Hover a cell for its exact weight.";
  ui.precision.textContent = precise ? help : current.att.exact
    ? "8-bit preview (within 0.002); loading exact values…"
    : `Preview: each cell shows the largest weight of its ${current.att.block} x ${current.att.block} block of tokens; loading exact values…`;
  ui.precision.dataset.precision = precise ? "exact" : "preview";
  const data = {
    tokens: current.data.tokens,
    groups: current.data.groups,
    matrix,
    causal: current.att.causal,
    hideSink: st.sink,
    highlight: hover,
    filename: `attention-L${layer}H${head}`,
  };
  const lines = st.view === "lines";
  const score = st.view === "score";
  ui.heatmap.hidden = lines || score;
  ui.lines.hidden = !lines;
  ui.linesPng.hidden = !lines;
  ui.score.hidden = !score;
  if (score) ui.precision.textContent = `The query is the selected token (${selectedPos()}); click a token to change it. Hover a strip for its numbers.`;
  await guarded(errors.detail, async () => {
    if (score) await showScore(ui.score, errors.detail, { prompt: current.prompt, model: current.model, layer, head, index: selectedPos() });
    else if (lines) renderLines(ui.lines, data);
    else await renderHeatmap(ui.heatmap, data);
  });
  renderScores(precise ? exact.scores : null);
  if (!precise) await fetchExact(key, layer, head); // the views are settled once the exact matrix is drawn
}

async function fetchExact(key, layer, head) {
  const body = { prompt: current.prompt, model: current.model || null, layer, head, encoding: "u16" };
  const r = await exactHeads.run((signal) => api.head(body, { signal }));
  if (!r) return;
  if (r.error) {
    ui.precision.textContent = "";
    showError(errors.detail, `Exact values for this head are unavailable (${r.error.message}); showing the 8-bit preview.`);
    return;
  }
  if (!current || key !== `${current.seq}:${layer}:${head}`) return;
  const res = r.data;
  exact = { key, pattern: decodeU16(res.exact), scores: res.scores, kvHead: res.kv_head };
  return renderDetail();
}

let shownScores = null; // the open head's summary scores, as last drawn

function renderScores(scores) {
  shownScores = scores;
  if (!scores) {
    ui.scores.replaceChildren();
    return;
  }
  const items = [];
  const text = scoreText(current?.model); // names and help from /api/heads
  for (const [k, v] of Object.entries(scores)) {
    const [name, help] = text.get(k) || [k.replace(/_/g, " "), ""];
    const dt = document.createElement("dt");
    dt.textContent = name;
    dt.title = help;
    const dd = document.createElement("dd");
    dd.textContent = v === null ? "–" : k === "entropy" ? `${v.toFixed(2)} bits` : v.toFixed(3);
    dd.title = help;
    items.push(dt, dd);
  }
  ui.scores.replaceChildren(...items);
}

// ---- the selected token: residual stream and next-token prediction ----

// Top-k next tokens after token `pos` of a trace, or null until they have been fetched.
const topAt = (cur, pos) => cur.preds.get(pos) ?? null;

async function fetchAllPredictions(cur) {
  const body = { prompt: cur.prompt, model: cur.model || null, temperature: cur.temp, top_k: TOP_K, predict: "all" };
  const r = await allPredictions.run((signal) => api.trace(body, { signal }));
  if (!r || cur !== current) return; // a newer prompt replaced this one
  if (r.error) {
    showError(errors.next, `The predictions at earlier tokens could not be computed: ${r.error.message}`);
    return;
  }
  for (const p of r.data.predictions) cur.preds.set(p.position, p.top);
  return renderPosViews();
}

function renderPosViews() {
  if (!current) return;
  const { data } = current;
  const pos = selectedPos();
  markTokens(ui.tokens, { hover, selected: pos });
  const top = topAt(current, pos);
  const r = { tokens: data.tokens, resid: data.resid, writes: data.writes, pos };
  const resid = guarded(errors.resid, async () => {
    await renderResidualStory(ui.residStory, r);
    await renderResidualMap(ui.residMap, r);
  });
  gen.update();
  if (!top) {
    // Shown dimmed with a sentence until this token's prediction arrives (one request per prompt).
    ui.nextPlot.classList.add("stale");
    ui.nextCaption.textContent = `Computing what the model predicted after token ${pos} “${data.tokens[pos]}”…`;
    return Promise.all([fetchAllPredictions(current), resid]);
  }
  ui.nextPlot.classList.remove("stale");
  const last = pos === data.n - 1;
  const actual = last ? null : data.token_ids[pos + 1];
  const after = `After token ${pos} “${data.tokens[pos]}”`;
  ui.nextCaption.textContent = last
    ? `${after}, the last one, the model predicts (temperature ${store.get().temp.toFixed(2)}):`
    : `${after} the model predicted this; the prompt actually continues with “${data.tokens[pos + 1]}” (outlined if in the top ${top.length}).`;
  const bars = gen.barState(current, pos, top);
  const next = guarded(errors.next, () =>
    renderNext(ui.nextPlot, {
      top,
      chosen: bars.chosen,
      shares: bars.shares,
      actual,
      pos,
      onChoose: (id) => {
        gen.choose(current, pos, id);
        renderPosViews();
      },
    }),
  );
  return Promise.all([next, resid]);
}

// The logit lens costs several forwards on a large vocabulary, so it is fetched only while its panel is
// on screen (or scrolled to later); until its answer for this prompt arrives the panel is dimmed.
function renderLensView() {
  if (!current) return;
  const cur = current;
  if (!cur.lens) {
    ui.lensPanel.classList.add("stale");
    ui.lensPanel.dataset.seq = "";
    if (lensVisible) return fetchLens(cur);
    return;
  }
  return guarded(errors.lens, async () => {
    await renderLens(ui.lens, { tokens: cur.data.tokens, lens: cur.lens, pos: selectedPos() });
    ui.lensPanel.classList.remove("stale");
    ui.lensPanel.dataset.seq = String(cur.seq); // drawn for this trace (tests wait for it)
  });
}

async function fetchLens(cur) {
  const body = { prompt: cur.prompt, model: cur.model || null };
  const r = await lenses.run((signal) => api.lens(body, { signal }));
  if (!r || cur !== current) return; // a newer prompt: its own trace asks again
  if (r.error) {
    showError(errors.lens, `The logit lens could not be computed: ${r.error.message}`);
    return;
  }
  cur.lens = r.data.lens;
  return renderLensView();
}

ui.lensPanel = $("lens-panel");
new IntersectionObserver((entries) => {
  lensVisible = entries.some((e) => e.isIntersecting);
  if (lensVisible && current && !current.lens) renderLensView();
}).observe(ui.lensPanel);

// ---- hover: one token lights up everywhere ----

let hoverFrame = 0;
function setHover(i) {
  hover = i;
  cancelAnimationFrame(hoverFrame);
  hoverFrame = requestAnimationFrame(() => {
    if (!current) return;
    markTokens(ui.tokens, { hover, selected: selectedPos() });
    updateGrid(ui.grid, { highlight: hover });
    if (!ui.heatmap.hidden) highlightHeatmap(ui.heatmap, hover);
    if (!ui.lines.hidden) highlightLines(ui.lines, hover);
  });
}

// ---- input ----

// History while typing: the first keystroke of a typing burst adds one entry, later ones update it, so
// Back returns to the prompt before the edit instead of stepping through every keystroke. Anything
// else that adds an entry (opening a head, Enter, a preset, a generated token) ends the burst.
let typingEntry = false;
let typingNow = false;
ui.prompt.addEventListener("input", () => {
  gen.stop("Stopped by typing");
  typingNow = true;
  store.set({ prompt: ui.prompt.value, pos: null }, { history: typingEntry ? "replace" : "push" });
  typingNow = false;
  typingEntry = true;
});
ui.prompt.addEventListener("keydown", (e) => {
  if (e.key !== "Enter") return;
  e.preventDefault();
  const changed = store.set({ prompt: ui.prompt.value, pos: null }, { history: typingEntry ? "replace" : "push" });
  typingEntry = false;
  if (!changed.has("prompt")) runTrace(); // same text: run again (e.g. after an error)
});
ui.presets.addEventListener("change", () => {
  const prompt = ui.presets.value;
  ui.presets.value = "";
  if (!prompt) return;
  gen.stop("Stopped: a class demo was picked");
  ui.prompt.value = prompt;
  store.set({ prompt, pos: null });
});
let sliderTimer = 0;
ui.temperature.addEventListener("input", () => {
  const t = Number(ui.temperature.value);
  ui.tempOut.textContent = t.toFixed(2);
  clearTimeout(sliderTimer);
  sliderTimer = setTimeout(() => store.set({ temp: t }, { history: "replace" }), SLIDER_DEBOUNCE_MS);
});
for (const b of ui.viewButtons) b.addEventListener("click", () => store.set({ view: b.dataset.view }));
for (const [button, step] of [[ui.smaller, -1], [ui.larger, 1]]) {
  button.addEventListener("click", () => store.set({ zoom: gridZoom(ui.grid).zoom + step }, { history: "replace" }));
}
ui.sink.addEventListener("change", () => store.set({ sink: ui.sink.checked }));
pngButton($("grid-png"), () => gridCanvas(ui.grid), () => `heads-${current?.data.model || "model"}`);
pngButton(ui.linesPng, () => linesCanvas(ui.lines), () => {
  const h = openHead();
  return h ? `attention-lines-L${h.layer}H${h.head}` : "attention-lines";
});

function syncControls(st) {
  if (ui.prompt.value !== st.prompt) ui.prompt.value = st.prompt;
  ui.temperature.value = String(st.temp);
  ui.tempOut.textContent = st.temp.toFixed(2);
}

store.subscribe((st, changed, source) => {
  if (!typingNow) typingEntry = false;
  if (source === "pop") {
    syncControls(st);
    gen.stop("Stopped by Back");
  }
  if (changed.has("prompt") || changed.has("model") || changed.has("temp")) {
    runTrace();
    return;
  }
  if (!current) return;
  if (changed.has("zoom")) drawFast();
  if (changed.has("layer") || changed.has("head") || changed.has("view") || changed.has("sink")) renderDetail();
  if (changed.has("pos")) {
    if (st.view === "score") renderDetail();
    renderPosViews();
    renderLensView();
  }
});

// Text sizes change with presenter mode and the window: redraw everything from the trace in hand.
function redrawAll() {
  if (!current) return;
  drawFast();
  drawPlots();
}
window.addEventListener("atlas:presenter", redrawAll);
let resizeTimer = 0;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(redrawAll, 200);
});

gen.mount(
  {
    append: $("append"), sample: $("sample"), generate: $("generate"), stop: $("stop"), n: $("gen-n"),
    mode: $("gen-mode"), k: $("top-k"), p: $("top-p"), seed: $("seed"), draw: $("draw-note"), note: $("gen-note"),
  },
  {
    // The trace on screen, when it answers the prompt in the box (not while a newer one is pending).
    live: () => (current && current.prompt === store.get().prompt && !document.body.classList.contains("stale") ? current : null),
    selectedPos: () => selectedPos(),
    topAt: (cur, pos) => topAt(cur, pos),
    setPrompt: (prompt, history) => {
      ui.prompt.value = prompt;
      store.set({ prompt, pos: null }, { history });
    },
    redrawBars: () => current && renderPosViews(),
  },
);
mountRoleFilter($("role-filter"));
mountHeadKnockout({ button: $("head-ko"), result: $("head-ko-result"), error: $("head-ko-error") }, () => {
  const h = current && openHead();
  return h ? { prompt: current.prompt, model: current.model, ...h } : null;
});

async function init() {
  try {
    models = await api.getModels();
  } catch (e) {
    showError(errors.prompt, e.message);
  }
  const st = store.get();
  syncControls(st);
  if (!st.prompt) {
    ui.prompt.value = ui.prompt.dataset.default;
    store.set({ prompt: ui.prompt.dataset.default }, { history: "replace" });
  }
  else runTrace();
  // Start fetching Plotly once the first grid is on screen (or soon, if the first trace fails).
  const warm = () => loadPlotly().catch((e) => showError(errors.detail, e.message));
  window.addEventListener("atlas:grid", () => requestAnimationFrame(() => setTimeout(warm, 0)), { once: true });
  setTimeout(warm, 3000);
}

init();
