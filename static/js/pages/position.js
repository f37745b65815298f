// The position lab page: three experiments on one page, each its own part (pages/position/*) with its
// controls, its request and its views. This file only starts them and routes the shared state: every
// change of the URL state goes to each part, which reloads or redraws what depends on it.

import * as api from "../lib/api.js";
import { showError } from "../lib/dom.js";
import { loadPlotly } from "../lib/plot.js";
import * as store from "../lib/store.js";
import { setModels } from "./position/lab.js";
import * as permutation from "./position/permutation.js";
import * as probe from "./position/probe.js";
import * as ropeClock from "./position/rope_clock.js";
import * as stretch from "./position/stretch.js";
import * as wordOrder from "./position/word_order.js";

const PARTS = [permutation, wordOrder, ropeClock];

// The stretching curves and the position probe are not in PARTS: they load when their panel comes into
// view (expensive the first time), never in the first paint that `ready` waits for.
window.addEventListener("atlas:presenter", () => [...PARTS, stretch, probe].forEach((part) => part.draw()));

async function init() {
  try {
    setModels(await api.getModels());
  } catch (e) {
    showError(permutation.error, e.message);
    return;
  }
  for (const part of PARTS) part.mount();
  stretch.mount();
  probe.mount();
  // Listen only after mounting: a part filling in its defaults (the example prompt) must not start a
  // load of its own before the one below, or every request of the first paint goes out twice.
  store.subscribe((st, changed) => {
    for (const part of PARTS) part.sync(st);
    for (const part of PARTS) part.onChange(st, changed);
    stretch.onChange(st, changed);
  });
  for (const part of PARTS) part.sync(store.get());
  loadPlotly().catch((e) => showError(ropeClock.error, e.message));
  await Promise.all(PARTS.map((part) => part.load()));
  document.body.dataset.ready = "1";
}

init();
