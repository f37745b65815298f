// Behaviour shared by every page's frame (templates/base.html): presenter mode and the model selector.

import * as store from "./store.js";

const PRESENTER_KEY = "atlas.presenter";
const root = document.documentElement;

function setPresenter(on) {
  root.classList.toggle("presenter", on);
  const button = document.getElementById("presenter-toggle");
  if (button) button.setAttribute("aria-pressed", String(on));
  try {
    window.localStorage.setItem(PRESENTER_KEY, on ? "1" : "0");
  } catch {
    // storage disabled: the mode still applies to this page
  }
  // Views that draw text on canvas or in Plotly re-render with the new sizes.
  window.dispatchEvent(new CustomEvent("atlas:presenter", { detail: { on } }));
}

const toggle = document.getElementById("presenter-toggle");
if (toggle) {
  toggle.setAttribute("aria-pressed", String(root.classList.contains("presenter")));
  toggle.addEventListener("click", () => setPresenter(!root.classList.contains("presenter")));
}

// The model selector exists only when the server runs several models; the choice lives in the URL.
const select = document.getElementById("model-select");
if (select) {
  // No model in the URL means the server's default (the option rendered as selected).
  const sync = () => {
    const m = store.get().model;
    const opts = [...select.options];
    select.value = (opts.find((o) => o.value === m) || opts.find((o) => o.defaultSelected) || opts[0]).value;
  };
  sync();
  store.subscribe((_, changed) => changed.has("model") && sync());
  select.addEventListener("change", () => store.set({ model: select.value }));
}
