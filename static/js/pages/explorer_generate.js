// The explorer's generation controls: Append (the top token, or a bar the student clicked), Sample
// (a seeded draw among the bars shown), and Generate N steps with Stop, the views following each step.
//
// Tokens are appended as text, because the prompt box, the URL and every endpoint take text. Text is
// split into tokens again on the next run, and a few pieces (a word fragment after a fragment, say)
// merge differently when read back; the page checks every step against the token ids it expected and
// says so when the model now reads something other than what was chosen. Tokens that are only part of
// a character (a byte such as <E2>) are not text on their own, so they are never offered: Append is
// disabled for them with a sentence, and the draw leaves them out (its shares say so).

import * as store from "../lib/store.js";
import { pick, pool, uniform } from "../lib/sampling.js";
import { displayToText } from "../views/tokens.js";

export const MAX_STEPS = 32;

store.define({
  k: { type: "int", def: 10 }, // top-k of the draw, at most the number of bars shown
  p: { type: "float", def: 1 }, // top-p of the draw
  seed: { type: "int", def: 1 },
  gen: { type: "string", def: "top" }, // what Generate appends at each step: "top" or "sample"
});

const usable = (t) => displayToText(t.token) !== null;

let ui = null;
let page = null; // {live(): trace on screen if it answers the prompt in the box, selectedPos(), topAt(cur, pos), setPrompt}
let chosen = null; // {key, id}: a clicked bar, for the trace and position it was clicked on only
let expected = null; // {prompt, ids, token}: what the next trace should read after an append
let run = null; // {mode, total, done, resplit}: a Generate in progress

const keyOf = (cur, pos) => `${cur.seq}:${pos}`;

function settings() {
  const st = store.get();
  const k = Math.min(Math.max(1, st.k), ui.k.max ? Number(ui.k.max) : st.k);
  const p = Math.min(Math.max(0.01, st.p), 1);
  return { k, p, seed: st.seed >>> 0, mode: st.gen === "sample" ? "sample" : "top" };
}

// What Append adds now: the clicked bar if it belongs to this prediction, else the top token.
function appendChoice(top, key) {
  if (chosen?.key === key) {
    const c = top.find((t) => t.id === chosen.id);
    if (c) return c;
  }
  return top[0] ?? null;
}

function drawFor(top) {
  const s = settings();
  return pool(top, { k: s.k, p: s.p, usable });
}

// For the bars: the token Append would add and each token's share of the draw.
export function barState(cur, pos, top) {
  const shares = new Map(drawFor(top).map((c) => [c.id, c.share]));
  return { chosen: appendChoice(top, keyOf(cur, pos))?.id ?? null, shares };
}

export function choose(cur, pos, id) {
  chosen = { key: keyOf(cur, pos), id };
}

// Buttons and the sentence about the draw, for the prediction on screen.
export function update() {
  const cur = page.live();
  const pos = cur ? page.selectedPos() : null;
  const last = cur && pos === cur.data.n - 1;
  const top = (cur && page.topAt(cur, pos)) || [];
  const c = cur ? appendChoice(top, keyOf(cur, pos)) : null;
  const canAppend = Boolean(last && c && usable(c));
  const candidates = cur ? drawFor(top) : [];
  const busy = run !== null;
  ui.append.disabled = busy || !canAppend;
  ui.append.textContent = c ? `Append “${c.token}”` : "Append";
  ui.sample.disabled = busy || !last || !candidates.length;
  ui.generate.disabled = busy || !last;
  ui.stop.hidden = !busy;
  ui.generate.hidden = busy;
  if (!cur) {
    ui.draw.textContent = "";
    return;
  }
  if (!last) {
    ui.append.title = ui.sample.title = ui.generate.title =
      "Generation continues from the last token: click it in the token strip.";
  } else {
    ui.append.title = "Add this token to the prompt and run the model again";
    ui.sample.title = "Draw one token from the bars at this temperature, top-k, top-p and seed";
    ui.generate.title = "Add tokens one at a time, the views following each step";
  }
  if (!top.length) {
    ui.draw.textContent = ""; // this token's prediction is still on its way
    return;
  }
  const s = settings();
  const mass = candidates.reduce((a, t) => a + t.prob, 0);
  const parts = c && !usable(c)
    ? [`“${c.token}” is only part of a character (a byte), so it cannot be appended as text on its own.`]
    : [];
  parts.push(candidates.length
    ? `Sample draws among ${candidates.length} of these ${top.length} bars (together ${(mass * 100).toFixed(1)}% ` +
      `of the probability), each by its share of that; seed ${s.seed}.`
    : "None of these bars can be appended as text, so there is nothing to sample.");
  ui.draw.textContent = parts.join(" ");
}

// When a run ends, the Stop button disappears: give its focus back to Generate.
function refocus() {
  if (document.activeElement === ui.stop || document.activeElement === document.body) ui.generate.focus();
}

function say(text) {
  ui.note.textContent = text;
}

function appendToken(cur, token, history) {
  const prompt = cur.prompt + displayToText(token.token);
  expected = { prompt, ids: [...cur.data.token_ids, token.id], token: token.token };
  page.setPrompt(prompt, history);
}

// One step from the trace on screen; returns the token appended, or null with the reason said.
function step(mode, history) {
  const cur = page.live();
  if (!cur) return null;
  const n = cur.data.n;
  const top = page.topAt(cur, n - 1); // always in the trace: the page asks for the last position
  let token;
  if (mode === "top") {
    token = run ? top[0] : appendChoice(top, keyOf(cur, n - 1));
    if (!token || !usable(token)) {
      say(`The top token “${token?.token ?? ""}” is only part of a character (a byte), so it cannot be appended as text.`);
      return null;
    }
  } else {
    const s = settings();
    const u = uniform(s.seed, n);
    token = pick(drawFor(top), u);
    if (!token) {
      say("None of the bars can be appended as text, so there is nothing to sample.");
      return null;
    }
    if (!run) say(`Added “${token.token}” by sampling: ${(token.share * 100).toFixed(1)}% of the draw (seed ${s.seed}, draw ${n}, u = ${u.toFixed(3)}).`);
  }
  appendToken(cur, token, history);
  return token;
}

export function stop(reason) {
  if (!run) return;
  const r = run;
  run = null;
  if (reason) say(`${reason} after ${r.done} of ${r.total} tokens.${resplitNote(r)}`);
  update();
  refocus();
}

const resplitNote = (r) =>
  r.resplit ? ` ${r.resplit} step${r.resplit > 1 ? "s were" : " was"} read back as different tokens (see above).` : "";

function generate() {
  const n = Math.min(MAX_STEPS, Math.max(1, Math.round(Number(ui.n.value) || 1)));
  ui.n.value = String(n);
  run = { mode: settings().mode, total: n, done: 0, resplit: 0 };
  update();
  ui.stop.focus(); // Generate is hidden while it runs: keep the keyboard on the button that ends it
  say(`Generating 1 of ${n}…`);
  if (!step(run.mode, "push")) stop(null);
}

// Called when the newest trace and its views are on screen: check the last append, then go on.
export function afterTrace(cur) {
  if (expected && expected.prompt === cur.prompt) {
    const got = cur.data.token_ids;
    const same = got.length === expected.ids.length && got.every((id, i) => id === expected.ids[i]);
    if (!same) {
      let from = 0;
      while (from < got.length && got[from] === expected.ids[from]) from++;
      const seen = cur.data.tokens.slice(from).map((t) => `“${t}”`).join(" ");
      say(`Read back as text, the end splits differently: you chose “${expected.token}”, the model now reads ${seen}. ` +
        "Appending text always re-tokenises it.");
      if (run) run.resplit += 1;
    } else if (!run && ui.note.textContent.startsWith("Read back")) {
      say("");
    }
  }
  expected = null;
  if (!run) return update();
  run.done += 1;
  if (run.done >= run.total) {
    const r = run;
    run = null;
    const how = r.mode === "sample" ? `by sampling (seed ${settings().seed})` : "by taking the top token each time";
    say(`Generated ${r.total} tokens ${how}.${resplitNote(r)}`);
    update();
    return refocus();
  }
  say(`Generating ${run.done + 1} of ${run.total}…`);
  if (!step(run.mode, "replace")) stop("Stopped");
}

function syncControls() {
  const st = store.get();
  ui.k.value = String(st.k);
  ui.p.value = String(st.p);
  ui.seed.value = String(st.seed);
  ui.mode.value = st.gen === "sample" ? "sample" : "top";
}

export function mount(elements, pageApi) {
  ui = elements;
  page = pageApi;
  ui.n.max = String(MAX_STEPS);
  syncControls();
  const num = (input, type) => {
    const v = type === "int" ? Math.round(Number(input.value)) : Number(input.value);
    return input.value.trim() !== "" && Number.isFinite(v) ? v : null;
  };
  const onNumber = (input, field, type) =>
    input.addEventListener("change", () => {
      const v = num(input, type);
      if (v === null) return syncControls();
      store.set({ [field]: v }, { history: "replace" });
    });
  onNumber(ui.k, "k", "int");
  onNumber(ui.p, "p", "float");
  onNumber(ui.seed, "seed", "int");
  ui.mode.addEventListener("change", () => store.set({ gen: ui.mode.value }, { history: "replace" }));
  store.subscribe((_, changed, source) => {
    if (source === "pop") syncControls();
    if (["k", "p", "seed", "gen"].some((f) => changed.has(f))) {
      syncControls();
      page.redrawBars();
    }
  });
  ui.append.addEventListener("click", () => step("top", "push") && update());
  ui.sample.addEventListener("click", () => step("sample", "push") && update());
  ui.generate.addEventListener("click", generate);
  ui.stop.addEventListener("click", () => stop("Stopped"));
}
