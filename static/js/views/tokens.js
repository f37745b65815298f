// The token strip: the prompt as the model sees it (display strings from the server already show
// spaces as "·" and newlines as "⏎"). Token text is untrusted user input: it only ever goes into the
// page through textContent, never as HTML.

export function renderTokens(el, tokens, { selected = null, onHover = () => {}, onSelect = () => {} } = {}) {
  const frag = document.createDocumentFragment();
  tokens.forEach((tok, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "tok";
    b.dataset.i = String(i);
    b.setAttribute("aria-pressed", String(i === selected));
    const text = document.createElement("span");
    text.className = "tok-text";
    text.textContent = tok;
    const idx = document.createElement("span");
    idx.className = "tok-i";
    idx.textContent = String(i);
    b.append(text, idx);
    frag.append(b);
  });
  el.replaceChildren(frag);
  el.setAttribute("data-n", String(tokens.length));
  // One set of listeners per strip (delegated), so re-rendering never stacks handlers.
  el.onpointerover = (e) => {
    const t = e.target.closest(".tok");
    if (t) onHover(Number(t.dataset.i));
  };
  el.onpointerleave = () => onHover(null);
  el.onfocusin = (e) => {
    const t = e.target.closest(".tok");
    if (t) onHover(Number(t.dataset.i));
  };
  el.onfocusout = () => onHover(null);
  el.onclick = (e) => {
    const t = e.target.closest(".tok");
    if (t) onSelect(Number(t.dataset.i));
  };
}

export function markTokens(el, { hover = null, selected = null }) {
  for (const b of el.querySelectorAll(".tok")) {
    const i = Number(b.dataset.i);
    b.classList.toggle("hover", i === hover);
    b.setAttribute("aria-pressed", String(i === selected));
  }
}

// Turn a display string back into the text it stands for, so a predicted token can be appended to the
// prompt. Returns null for a byte fragment ("<E2>"): part of a character, not text on its own.
export function displayToText(display) {
  if (/^(<[0-9A-F]{2}>)+$/.test(display)) return null;
  return display
    .replace(/·/g, " ")
    .replace(/⏎/g, "\n")
    .replace(/⇥/g, "\t")
    .replace(/␡/g, "\x7f")
    .replace(/[\u2400-\u241f]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0x2400));
}
