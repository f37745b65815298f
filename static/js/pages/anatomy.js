// The anatomy page: one prompt -> /api/anatomy -> the block diagram, the whole-model pipeline and the
// parameter census. Choosing a token or a layer only redraws (every layer and position came in the one
// answer). Typing races like the explorer's: a newer keystroke aborts the older request.

import * as api from "../lib/api.js";
import { byId, showError } from "../lib/dom.js";
import * as store from "../lib/store.js";
import { markTokens, renderTokens } from "../views/tokens.js";
import { renderBlock, renderCensus, renderPipeline } from "../views/anatomy.js";

store.define({
  pos: { type: "int", def: null }, // followed token; null = the last
});

const TYPING_DEBOUNCE_MS = 300;

const ui = {
  prompt: byId("prompt"),
  promptError: byId("prompt-error"),
  tokens: byId("tokens"),
  status: byId("status"),
  layers: byId("layer-pick"),
  blockTitle: byId("block-title"),
  block: byId("block-diagram"),
  pipeline: byId("pipeline"),
  modelCaption: byId("model-caption"),
  census: byId("census-plot"),
  censusCaption: byId("census-caption"),
};

let current = null;
const anatomyRequests = api.latest();
let timer = null;

const pct = (x) => `${(100 * x).toFixed(1)}%`;

function chosen() {
  const st = store.get();
  const n = current.n;
  const L = current.config.n_layer;
  const pos = st.pos === null || st.pos < 0 || st.pos >= n ? n - 1 : st.pos;
  const layer = st.layer === null || st.layer < 0 || st.layer >= L ? 0 : st.layer;
  return { pos, layer };
}

async function load() {
  const st = store.get();
  const prompt = st.prompt ?? ui.prompt.dataset.default;
  if (!prompt.trim()) {
    // Say so, and dim what is left, instead of quietly showing another prompt's numbers.
    anatomyRequests.cancel();
    showError(ui.promptError, "The prompt is empty: type one to see its numbers flow through the model.");
    ui.status.textContent = current ? "Showing the last prompt (dimmed)." : "";
    document.body.classList.toggle("stale", Boolean(current));
    return;
  }
  ui.status.textContent = "Running the model…";
  const r = await anatomyRequests.run((signal) => api.anatomy({ prompt, model: st.model || null }, { signal }));
  if (!r) return;
  showError(ui.promptError, r.error?.message);
  document.body.classList.toggle("stale", Boolean(r.error && current));
  if (r.error) {
    ui.status.textContent = current ? "Showing the last prompt that worked (dimmed)." : "";
    return;
  }
  const data = r.data;
  current = data;
  drawAll();
  document.body.dataset.ready = "1";
  ui.status.textContent = `${data.n} tokens through ${data.model}. Click a token to follow it.`;
}

function drawAll() {
  const { pos } = chosen();
  renderTokens(ui.tokens, current.tokens, { selected: pos, onSelect: (i) => store.set({ pos: i }) });
  drawLayerButtons();
  drawChosen();
  drawCensus();
}

function drawLayerButtons() {
  const L = current.config.n_layer;
  if (ui.layers.childElementCount !== L) {
    const label = document.createElement("span");
    label.className = "hint";
    label.textContent = "Layer";
    const buttons = Array.from({ length: L }, (_, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "chip";
      b.dataset.layer = String(i);
      b.textContent = `L${i}`;
      b.addEventListener("click", () => store.set({ layer: i }));
      return b;
    });
    ui.layers.replaceChildren(label, ...buttons);
  }
}

function drawChosen() {
  const { pos, layer } = chosen();
  markTokens(ui.tokens, { selected: pos });
  for (const b of ui.layers.querySelectorAll("[data-layer]")) {
    b.setAttribute("aria-pressed", String(Number(b.dataset.layer) === layer));
  }
  ui.blockTitle.textContent = `Block L${layer} (of L0–L${current.config.n_layer - 1}), token ${pos}: “${current.tokens[pos]}”`;
  renderBlock(ui.block, current, layer, pos);
  const c = current.config;
  ui.modelCaption.textContent =
    `From token ids to next-word probabilities for ${current.model}: d_model ${c.d_model}, ` +
    `vocabulary ${c.vocab_size.toLocaleString("en-US")}, ${c.n_layer} identical blocks. Shapes on the arrows are ` +
    `for this prompt's ${current.n} tokens; numbers are for token ${pos}. Click a block to open it on the left.`;
  renderPipeline(ui.pipeline, current, pos, layer, (i) => store.set({ layer: i }));
}

function drawCensus() {
  const live = current.census[0];
  const l7 = current.census.find((c) => c.key === "llama-2-7b");
  ui.censusCaption.textContent =
    `Counted from each configuration (a tied output layer shares the embedding matrix and is counted once). ` +
    `Inside the blocks the feed-forward holds ${pct(l7.feed_forward_share)} of Llama-2-7B's parameters, the chapter's ` +
    `“roughly two thirds”; in ${live.name} it holds ${pct(live.feed_forward_share)}.`;
  renderCensus(ui.census, current.census).catch((e) => showError(ui.promptError, `The census chart failed: ${e.message}`));
}

// ---- wiring ----

// No prompt in the URL: the page's example. An empty prompt typed by the reader stays empty.
const initial = new URLSearchParams(window.location.search).has("prompt");
if (!initial) store.set({ prompt: ui.prompt.dataset.default }, { history: "none" });
ui.prompt.value = store.get().prompt;
ui.prompt.addEventListener("input", () => {
  clearTimeout(timer);
  timer = setTimeout(() => store.set({ prompt: ui.prompt.value, pos: null }, { history: "replace" }), TYPING_DEBOUNCE_MS);
});
window.addEventListener("atlas:presenter", () => current && drawCensus());

store.subscribe((st, changed, source) => {
  if (source === "pop" && changed.has("prompt")) ui.prompt.value = st.prompt;
  if (changed.has("prompt") || changed.has("model")) load();
  else if (current && (changed.has("pos") || changed.has("layer"))) drawChosen();
});

load();
