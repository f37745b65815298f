// The token strip: the prompt as the model sees it (display strings from the server already show
// spaces as "·" and newlines as "⏎"). Token text is untrusted user input: it only ever goes into the
// page through textContent, never as HTML.
//
// Tokens that are each only part of one character (an emoji's four UTF-8 bytes) share one box showing
// the character; its bytes are in the tooltip. The groups come from the server (/api/trace `groups`).
// A long prompt scrolls inside the strip (app.css bounds its height) and the chosen token is kept in
// view. Keyboard: the strip is one tab stop; arrow keys move between tokens, Enter or Space chooses.

// groups: [{start, end, text, pieces}] -> one box per token or per group: {first, last, text, title}
export function tokenUnits(tokens, groups = []) {
  const byStart = new Map(groups.map((g) => [g.start, g]));
  const units = [];
  for (let i = 0; i < tokens.length; ) {
    const g = byStart.get(i);
    if (g && g.end > g.start + 1) {
      const n = g.end - g.start;
      units.push({
        first: g.start,
        last: g.end - 1,
        text: g.text,
        title: `“${g.text}” is ${n} tokens ${g.start}–${g.end - 1}, one byte each of its UTF-8 code: ${g.pieces.join(" ")}`,
      });
      i = g.end;
    } else {
      units.push({ first: i, last: i, text: tokens[i], title: "" });
      i += 1;
    }
  }
  return units;
}

export function renderTokens(el, tokens, { groups = [], selected = null, onHover = () => {}, onSelect = () => {} } = {}) {
  // Typing changes only the last token or two: keep the boxes that still say the same thing and rewrite
  // the rest in place, so a keystroke costs a few DOM writes instead of rebuilding every box.
  const units = tokenUnits(tokens, groups);
  const old = [...el.querySelectorAll(":scope > .tok")];
  if (old.length !== el.children.length) {
    el.replaceChildren();
    old.length = 0;
  }
  const frag = document.createDocumentFragment();
  units.forEach((u, k) => {
    const b = old[k] || tokenBox();
    const cls = u.first === u.last ? "tok" : "tok tok-group";
    if (b.className !== cls) b.className = cls;
    // A group stands for its last token: there the character is complete, and the model predicts on.
    b.dataset.i = String(u.last);
    b.dataset.first = String(u.first);
    if (u.title) b.title = u.title;
    else b.removeAttribute("title");
    const [text, idx] = b.children;
    if (text.textContent !== u.text) text.textContent = u.text;
    const label = u.first === u.last ? String(u.first) : `${u.first}–${u.last}`;
    if (idx.textContent !== label) idx.textContent = label;
    if (!old[k]) frag.append(b);
  });
  for (let k = units.length; k < old.length; k++) old[k].remove();
  el.append(frag);
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
  el.onkeydown = (e) => moveFocus(el, e);
  delete el.dataset.shown; // new boxes: bring the chosen one into view again
  markTokens(el, { selected });
}

function tokenBox() {
  const b = document.createElement("button");
  b.type = "button";
  b.tabIndex = -1;
  const text = document.createElement("span");
  text.className = "tok-text";
  const idx = document.createElement("span");
  idx.className = "tok-i";
  b.append(text, idx);
  return b;
}

const holds = (b, i) => i !== null && i !== undefined && i >= Number(b.dataset.first) && i <= Number(b.dataset.i);

export function markTokens(el, { hover = null, selected = null }) {
  let chosen = null;
  for (const b of el.querySelectorAll(".tok")) {
    b.classList.toggle("hover", holds(b, hover));
    const on = holds(b, selected);
    b.setAttribute("aria-pressed", String(on));
    if (on) chosen = b;
  }
  // Roving tab stop: the chosen token (or the first) is the strip's one place in the tab order.
  const stop = chosen || el.querySelector(".tok");
  if (stop && stop.tabIndex !== 0) {
    for (const b of el.querySelectorAll(".tok[tabindex='0']")) b.tabIndex = -1;
    stop.tabIndex = 0;
  }
  // Only when the choice changes: a hover must never move the strip under the pointer (the reader would
  // click a token that slid in under it).
  const key = chosen ? chosen.dataset.i : "";
  if (chosen && el.dataset.shown !== key && !el.contains(document.activeElement)) scrollIntoStrip(el, chosen);
  el.dataset.shown = key;
}

// Scroll the strip (never the page) so that box b is visible (the strip is positioned: app.css).
function scrollIntoStrip(el, b) {
  const top = b.offsetTop;
  const pad = 3;
  if (top < el.scrollTop) el.scrollTop = top - pad;
  else if (top + b.offsetHeight > el.scrollTop + el.clientHeight) el.scrollTop = top + b.offsetHeight - el.clientHeight + pad;
}

function moveFocus(el, e) {
  const boxes = [...el.querySelectorAll(".tok")];
  const at = boxes.indexOf(document.activeElement);
  if (at < 0 || !boxes.length) return;
  let to = null;
  if (e.key === "ArrowLeft") to = at - 1;
  else if (e.key === "ArrowRight") to = at + 1;
  else if (e.key === "Home") to = 0;
  else if (e.key === "End") to = boxes.length - 1;
  else if (e.key === "ArrowUp" || e.key === "ArrowDown") to = sameColumn(boxes, at, e.key === "ArrowUp" ? -1 : 1);
  if (to === null) return;
  e.preventDefault();
  const b = boxes[Math.max(0, Math.min(boxes.length - 1, to))];
  boxes[at].tabIndex = -1;
  b.tabIndex = 0;
  b.focus({ preventScroll: true });
  scrollIntoStrip(el, b);
}

// The box in the row above or below whose centre is nearest this one's (a wrapped strip has rows).
function sameColumn(boxes, at, dir) {
  const here = boxes[at];
  const x = here.offsetLeft + here.offsetWidth / 2;
  let row = null;
  let best = null;
  for (let k = at + dir; k >= 0 && k < boxes.length; k += dir) {
    const b = boxes[k];
    if (b.offsetTop === here.offsetTop) continue;
    if (row === null) row = b.offsetTop;
    if (b.offsetTop !== row) break;
    const d = Math.abs(b.offsetLeft + b.offsetWidth / 2 - x);
    if (best === null || d < best.d) best = { k, d };
  }
  return best ? best.k : at;
}

// Axis labels for views that show every token (heatmaps): a token that is part of a character is
// labelled with the character and which byte of it it is ("🙂 2/4") instead of "<9F>".
export function tokenLabels(tokens, groups = []) {
  const out = tokens.slice();
  for (const g of groups) {
    const n = g.end - g.start;
    for (let i = g.start; i < g.end; i++) out[i] = n > 1 ? `${g.text} ${i - g.start + 1}/${n}` : g.text;
  }
  return out;
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
