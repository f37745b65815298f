// The lesson page: the chapter as a guided tour, one idea per step (the steps are in lesson/steps.js).
// The step lives in the URL (reload or share a link and land on it); the arrow keys, PageUp/PageDown and
// Space step through it, which is what a presenter's clicker sends. A step's numbers are fetched when it
// opens; an answer that arrives after the class has moved on is dropped.

import { showError } from "../lib/dom.js";
import * as store from "../lib/store.js";
import { STEPS } from "./lesson/steps.js";

store.define({ step: { type: "int", def: 1 } });

const $ = (id) => document.getElementById(id);
const ui = {
  counter: $("lesson-counter"), title: $("lesson-title"), lead: $("lesson-lead"), view: $("lesson-view"),
  tryThis: $("lesson-try"), prev: $("lesson-prev"), next: $("lesson-next"), dots: $("lesson-dots"),
  prompt: $("prompt"), status: $("status"), error: $("lesson-error"),
};
const modelsInfo = JSON.parse(document.body.dataset.models || "{}");
let seq = 0; // the step render in progress; older answers are dropped

const clampStep = (s) => Math.min(STEPS.length, Math.max(1, s || 1));

function info(model) {
  const list = modelsInfo.models || [];
  return list.find((m) => m.name === (model || modelsInfo.default)) || list[0];
}

function drawDots(current) {
  ui.dots.replaceChildren(...STEPS.map((s, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "lesson-dot";
    b.textContent = String(i + 1);
    b.title = s.title;
    b.setAttribute("aria-label", `Step ${i + 1}: ${s.title}`);
    if (i + 1 === current) b.setAttribute("aria-current", "step");
    b.addEventListener("click", () => go(i + 1));
    return b;
  }));
}

async function render() {
  const st = store.get();
  const n = clampStep(st.step);
  const step = STEPS[n - 1];
  const mine = ++seq;
  ui.counter.textContent = `Step ${n} of ${STEPS.length}`;
  ui.title.textContent = step.title;
  document.title = `${step.title} · Lesson · Attention Atlas`;
  ui.prev.disabled = n === 1;
  ui.next.disabled = n === STEPS.length;
  drawDots(n);
  ui.status.textContent = "Running the model…";
  document.body.dataset.lessonStep = step.key;
  document.body.dataset.lessonReady = "";
  const ctx = { prompt: st.prompt || ui.prompt.dataset.default, model: st.model, info: info(st.model) };
  try {
    const out = await step.run(ctx);
    if (mine !== seq) return;
    if (out.title) ui.title.textContent = out.title; // a step that adapts to the model names what it shows
    ui.lead.replaceChildren(...out.lead.map((s) => Object.assign(document.createElement("p"), { textContent: s })));
    ui.view.replaceChildren(out.view);
    const [sentence, link] = out.tryThis;
    const a = link ? Object.assign(document.createElement("a"), { href: link.href, textContent: link.text }) : null;
    ui.tryThis.replaceChildren(Object.assign(document.createElement("strong"), { textContent: "Try this: " }), sentence, ...(a ? [" ", a] : []));
    showError(ui.error, null);
    ui.status.textContent = "";
    document.body.dataset.lessonReady = step.key;
  } catch (e) {
    if (mine !== seq) return;
    ui.status.textContent = "";
    ui.view.replaceChildren();
    showError(ui.error, `This step could not be drawn: ${e.message}`);
  }
}

function go(n) {
  const target = clampStep(n);
  if (target !== clampStep(store.get().step)) store.set({ step: target });
}

// Next: ArrowRight, ArrowDown, PageDown, Space; previous: ArrowLeft, ArrowUp, PageUp, Shift+Space.
// Not while typing in the prompt or a menu, where the keys mean what they always mean.
const NEXT = new Set(["ArrowRight", "ArrowDown", "PageDown"]);
const PREV = new Set(["ArrowLeft", "ArrowUp", "PageUp"]);
document.addEventListener("keydown", (e) => {
  if (e.altKey || e.ctrlKey || e.metaKey || e.target.closest("input, textarea, select, [contenteditable]")) return;
  const space = e.key === " ";
  const dir = NEXT.has(e.key) || (space && !e.shiftKey) ? 1 : PREV.has(e.key) || (space && e.shiftKey) ? -1 : 0;
  if (!dir) return;
  e.preventDefault(); // no scroll, and Space does not also click the focused button
  go(clampStep(store.get().step) + dir);
});
ui.prev.addEventListener("click", () => go(clampStep(store.get().step) - 1));
ui.next.addEventListener("click", () => go(clampStep(store.get().step) + 1));

ui.prompt.addEventListener("change", () => {
  const prompt = ui.prompt.value.trim() ? ui.prompt.value : ui.prompt.dataset.default;
  store.set({ prompt });
});

store.subscribe((_, changed) => {
  if (changed.has("step") || changed.has("model") || changed.has("prompt")) render();
});
window.addEventListener("atlas:presenter", render);

ui.prompt.value = store.get().prompt || ui.prompt.dataset.default;
render();
