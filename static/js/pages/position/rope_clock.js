// The RoPE clock: each pair of dimensions turns at its own speed as the position grows; the score of a
// query and a key depends only on their offset. A GPT-2-style model shows its learned position vectors;
// a model with no positional encoding has neither, and the panel says so.

import * as api from "../../lib/api.js";
import { byId } from "../../lib/dom.js";
import * as store from "../../lib/store.js";
import { renderLearned } from "../../views/learnedpos.js";
import { sci } from "../../views/permutation.js";
import { renderClock, renderCurves } from "../../views/ropeclock.js";
import { fillSelect, layerHead, modelInfo, requester, servedModels } from "./lab.js";

const SCALE_STOPS = 6;
const PLAY_STEP_MS = 70;

const ui = {
  title: byId("rope-title"),
  message: byId("rope-message"),
  body: byId("rope-body"),
  learnedBody: byId("learned-body"),
  play: byId("clock-play"),
  slider: byId("clock-slider"),
  pos: byId("clock-pos"),
  scaleSlider: byId("scale-slider"),
  scaleOut: byId("scale-out"),
  scaleNote: byId("scale-note"),
  clock: byId("clock"),
  readout: byId("clock-readout"),
  layer: byId("rope-layer"),
  head: byId("rope-head"),
  qk: [...document.querySelectorAll("input[name=qk]")],
  curves: byId("curves"),
  curvesCaption: byId("curves-caption"),
  learnedSim: byId("learned-sim"),
  learnedPca: byId("learned-pca"),
  error: byId("rope-error"),
  compare: byId("rope-compare"),
  compareButton: byId("rope-compare-btn"),
};

export const KEYS = ["model", "pi", "qk", "prompt", "layer", "head"];
export const error = ui.error;

let data = null;
let clockIndex = 0;
let playTimer = null;
const fetchRope = requester(ui.error);

const TITLES = {
  rope: "RoPE: a clock with many hands",
  learned: "Learned positions: a vector per position, no clock",
  none: "No positional encoding: no clock and no table",
};

const scaleFor = (index) => modelInfo().rope_scale * 2 ** index;

// The other kind of position, when the server has a model with it (the bundled classroom-gpt2 twin
// learned its positions; classroom turns RoPE's clock): one click shows the same panel for it.
function offerComparison(learned) {
  const other = servedModels().find((m) => (m.positional === "learned") !== learned);
  ui.compare.hidden = !other;
  if (!other) return;
  ui.compareButton.textContent = learned
    ? `Compare: RoPE's clock in ${other.name} →`
    : `Compare: learned position vectors in ${other.name} (GPT-2-style) →`;
  ui.compareButton.onclick = () => store.set({ model: other.name });
}

export async function load() {
  const st = store.get();
  const m = modelInfo();
  const body = { model: st.model || null, source: st.qk, max_offset: 128 };
  if (m.positional === "rope") {
    Object.assign(body, { scale: scaleFor(st.pi), prompt: st.prompt, ...layerHead() });
  }
  const answer = await fetchRope(api.rope, body);
  if (!answer) return;
  data = answer;
  ui.message.textContent = data.message;
  const learned = data.positional === "learned";
  offerComparison(learned);
  ui.title.textContent = TITLES[data.positional];
  ui.body.hidden = data.positional !== "rope";
  ui.learnedBody.hidden = !learned;
  if (!data.clock && !learned) return;
  if (learned) {
    await renderLearned(ui.learnedSim, ui.learnedPca, data.learned);
    return;
  }
  const { clock } = data;
  ui.slider.max = String(clock.positions.length - 1);
  clockIndex = nearestIndex(clock.positions, store.get().clock);
  ui.scaleOut.textContent = `${clock.scale}`;
  ui.scaleNote.textContent =
    clock.scale === clock.trained_scale
      ? `the model's own: positions 0–${clock.context_length - 1} are what it trained on`
      : `hands ${(clock.scale / clock.trained_scale).toFixed(0)}× slower: positions 0–` +
        `${Math.round(clock.trained_positions) - 1} now reuse the angles training saw`;
  draw();
  await renderCurves(ui.curves, data.curves, { scale: clock.scale, trainedScale: clock.trained_scale });
  const c = data.curves;
  ui.curvesCaption.textContent =
    `${c.detail}. The ${c.key_positions.length} curves (key at positions ${c.key_positions.join(", ")}) ` +
    `differ by at most ${sci(c.spread)}: the score depends only on the offset m − n, not on where the pair sits.`;
}

function nearestIndex(positions, p) {
  let best = 0;
  for (let i = 0; i < positions.length; i++) if (Math.abs(positions[i] - p) < Math.abs(positions[best] - p)) best = i;
  return best;
}

export function draw() {
  if (!data?.clock) return;
  const { clock } = data;
  ui.slider.value = String(clockIndex);
  const p = clock.positions[clockIndex];
  ui.pos.textContent = String(p);
  renderClock(ui.clock, clock, clockIndex);
  const deg = (a) => `${((a * 180) / Math.PI).toFixed(1)}°`;
  const last = clock.angles[0].length - 1;
  const beyond = p > clock.trained_positions;
  ui.readout.textContent =
    `position ${p} · fastest hand ${deg(clock.angles[clockIndex][0])} (a turn every ${clock.periods[0].toFixed(1)} ` +
    `positions) · slowest hand ${deg(clock.angles[clockIndex][last])} (a turn every ` +
    `${Math.round(clock.periods[last]).toLocaleString("en")})` +
    (beyond ? " · beyond what training saw: orange hands point where the model has never looked" : "");
}

function setPlaying(on) {
  clearInterval(playTimer);
  playTimer = null;
  ui.play.setAttribute("aria-pressed", String(on));
  ui.play.textContent = on ? "Pause" : "Play";
  if (on) {
    playTimer = setInterval(() => {
      if (!data?.clock) return;
      clockIndex = (clockIndex + 1) % data.clock.positions.length;
      draw();
    }, PLAY_STEP_MS);
  } else if (data?.clock) {
    store.set({ clock: data.clock.positions[clockIndex] }, { history: "replace" });
  }
}

export function sync(st) {
  const m = modelInfo();
  const { layer, head } = layerHead();
  fillSelect(ui.layer, m.n_layer, layer);
  fillSelect(ui.head, m.n_head, head);
  ui.scaleSlider.value = String(st.pi);
  for (const r of ui.qk) r.checked = r.value === st.qk;
}

export function onChange(st, changed) {
  if (KEYS.some((k) => changed.has(k))) load();
  else if (changed.has("clock") && data?.clock) {
    clockIndex = nearestIndex(data.clock.positions, st.clock);
    draw();
  }
}

export function mount() {
  const maxScale = SCALE_STOPS - 1;
  ui.scaleSlider.max = String(maxScale);
  if (store.get().pi > maxScale) store.set({ pi: maxScale }, { history: "replace" });
  ui.layer.addEventListener("change", () => store.set({ layer: Number(ui.layer.value) }));
  ui.head.addEventListener("change", () => store.set({ head: Number(ui.head.value) }));
  ui.play.addEventListener("click", () => setPlaying(!playTimer));
  ui.slider.addEventListener("input", () => {
    if (!data?.clock) return;
    setPlaying(false);
    clockIndex = Number(ui.slider.value);
    draw();
    store.set({ clock: data.clock.positions[clockIndex] }, { history: "replace" });
  });
  ui.scaleSlider.addEventListener("input", () => {
    ui.scaleOut.textContent = String(scaleFor(Number(ui.scaleSlider.value)));
  });
  ui.scaleSlider.addEventListener("change", () => store.set({ pi: Number(ui.scaleSlider.value) }));
  for (const r of ui.qk) r.addEventListener("change", () => r.checked && store.set({ qk: r.value }));
}
