// The head grid: every layer x head as a small heatmap on <canvas> (a canvas per head is ~50x faster
// than Plotly subplots for this many small pictures). Layers are rows, query heads are columns; with
// grouped-query attention the query heads that share one key/value head sit together in a shaded band
// (query head h uses K/V head floor(h / n_rep), n_rep = n_head / n_kv_head, as in Llama).
//
// From 32 heads (the classroom model) to 512 (16 layers x 32 heads): the grid scrolls inside its box
// with the layer and head labels held in place, and is one tab stop whose arrow keys move between heads
// (sizes, scrolling and keys: grid_layout.js). Enter or Space opens the focused head (it is a button).

import { LUT } from "../lib/colors.js";
import { fitGrid, keyTarget, reveal, visibleHeads } from "./grid_layout.js";

const state = new WeakMap(); // el -> {key, buttons, canvases, ...}
const baseCache = new WeakMap(); // Attention -> Map(head index -> n x n canvas)

// data: {att, nKvHead, open, highlight, badges, onOpen, zoom (steps of 1.25x from the fitted size)}
export function renderGrid(el, data) {
  const { att, nKvHead } = data;
  let s = state.get(el);
  const key = `${att.nLayer}x${att.nHead}/${nKvHead}`;
  if (!s || s.key !== key) {
    s = build(el, att.nLayer, att.nHead, nKvHead);
    s.key = key;
    state.set(el, s);
  }
  s.data = data;
  watchAbove(el);
  fit(el, s, true);
}

// Size the grid to its box; repaint only when the thumbnail size changed (or `paint`). A new head, size
// or box may have left the open head out of view: scroll the box to it.
function fit(el, s, paint) {
  const before = s.fit;
  s.fit = fitGrid(el, s, s.data.zoom ?? 0);
  s.thumb = s.fit.thumb;
  const resized = before?.thumb !== s.fit.thumb || before?.box !== s.fit.box;
  if (mark(s) || resized) showOpen(el, s); // first: drawAll paints what the box shows after this
  if (paint || before?.thumb !== s.fit.thumb) drawAll(s);
  fitLabels(s);
}

// A K/V group's label spans its heads' columns. Where small pictures (presenter mode's larger text, two
// heads per group) leave less room than "K/V head 3", the centred label lost both ends ("/V hea"), so
// it steps down to "KV 3", then "3"; the full sentence stays in its tooltip.
// Measured only when the pictures' size or presenter mode (the text's size) changed: it forces a layout.
function fitLabels(s) {
  const key = `${s.fit.thumb} ${document.documentElement.classList.contains("presenter")}`;
  if (s.labelKey === key || !s.groups[0]?.clientWidth) return; // no groups, or not laid out yet
  s.labelKey = key;
  for (const [g, label] of s.groups.entries()) {
    for (const text of [`K/V head ${g}`, `KV ${g}`, `${g}`]) {
      label.textContent = text;
      if (label.scrollWidth <= label.clientWidth) break;
    }
  }
}

// The box ends inside the window, so it must be fitted again when what sits above it in its panel
// changes height (a caption that wraps differently, a control filled in later).
const watched = new WeakSet();
function watchAbove(el) {
  if (watched.has(el) || !el.parentElement) return;
  watched.add(el);
  let frame = 0;
  const observer = new ResizeObserver(() => {
    cancelAnimationFrame(frame); // next frame: never resize inside the observer's own callback
    frame = requestAnimationFrame(() => {
      const s = state.get(el);
      if (s?.fit) fit(el, s, false);
    });
  });
  for (const e of el.parentElement.children) {
    if (e === el) break;
    observer.observe(e);
  }
}

// Cheap updates that do not change the pictures' data: hover highlight and the opened head.
export function updateGrid(el, patch) {
  const s = state.get(el);
  if (!s) return;
  s.data = { ...s.data, ...patch };
  if ("highlight" in patch) drawAll(s);
  if (mark(s)) showOpen(el, s);
}

// The zoom the grid is drawn at, and how far it can go each way (0 = fitted to the box).
export function gridZoom(el) {
  const f = state.get(el)?.fit;
  return f ? { zoom: f.zoom, min: f.zoomMin, max: f.zoomMax } : { zoom: 0, min: 0, max: 0 };
}

function showOpen(el, s) {
  const { open } = s.data;
  if (open && open.layer < s.L && open.head < s.H) reveal(el, s, open.layer * s.H + open.head);
}

function build(el, L, H, nKv) {
  const nRep = H / nKv;
  const grouped = nKv < H;
  const root = document.createElement("div");
  root.className = grouped ? "hg grouped" : "hg";
  root.setAttribute("role", "group");
  root.setAttribute("aria-label",
    `${L} layers by ${H} heads; arrow keys, Home, End, Page Up and Page Down move, Enter opens a head`);
  // Columns: layer label, then each K/V group's heads, with a gap column between groups.
  const cols = ["var(--hg-label)"];
  const colOf = [];
  for (let h = 0; h < H; h++) {
    if (grouped && h > 0 && h % nRep === 0) cols.push("var(--hg-group-gap)");
    cols.push("var(--thumb)");
    colOf.push(cols.length);
  }
  root.style.gridTemplateColumns = cols.join(" ");
  // Rows: the header rows, a thin spacer (room for the open head's outline below the sticky header),
  // then each layer: a picture plus the strip under it where role badges go (app.css: .thumb).
  const headerRows = grouped ? 2 : 1;
  const first = headerRows + 2; // the grid row of layer 0
  root.style.gridTemplateRows =
    `repeat(${headerRows}, var(--hg-head-row)) 0px repeat(${L}, calc(var(--thumb) + var(--badge-row)))`;
  const add = (tag, cls, row, col, span = 1, text = "") => {
    const e = document.createElement(tag);
    e.className = cls;
    e.style.gridRow = String(row);
    e.style.gridColumn = `${col} / span ${span}`;
    if (text) e.textContent = text;
    root.append(e);
    return e;
  };
  // Opaque backgrounds behind the sticky labels, so pictures scrolled under them do not show through.
  add("div", "hg-cover", `1 / span ${headerRows}`, 1, cols.length);
  add("div", "hg-side", `${first} / span ${L}`, 1);
  add("div", "hg-corner", `1 / span ${headerRows}`, 1);
  const groups = []; // the K/V group labels, shortened where their band is too narrow (fitLabels)
  if (grouped) {
    for (let g = 0; g < nKv; g++) {
      const col = colOf[g * nRep];
      add("div", "hg-band", `1 / span ${L + first - 1}`, col, nRep).setAttribute("aria-hidden", "true");
      add("div", "hg-band-top", `1 / span ${headerRows}`, col, nRep).setAttribute("aria-hidden", "true");
      const label = add("div", "hg-group", 1, col, nRep, `K/V head ${g}`);
      label.title = `Query heads ${g * nRep}–${g * nRep + nRep - 1} share key/value head ${g}`;
      groups.push(label);
    }
  }
  for (let h = 0; h < H; h++) add("div", "hg-head", headerRows, colOf[h], 1, `H${h}`);
  const buttons = [];
  const canvases = [];
  for (let l = 0; l < L; l++) {
    add("div", "hg-layer", l + first, 1, 1, `L${l}`);
    for (let h = 0; h < H; h++) {
      const b = add("button", "thumb", l + first, colOf[h]);
      b.type = "button";
      b.dataset.layer = String(l);
      b.dataset.head = String(h);
      b.tabIndex = -1;
      const share = grouped ? `, shares K/V head ${Math.floor(h / nRep)}` : "";
      b.setAttribute("aria-label", `Layer ${l}, head ${h}${share}`);
      b.title = `Layer ${l}, head ${h}${share}. Click to open.`;
      const c = document.createElement("canvas");
      b.append(c);
      buttons.push(b);
      canvases.push(c);
    }
  }
  el.replaceChildren(root);
  el.scrollTop = el.scrollLeft = 0;
  const s = { el, root, buttons, canvases, groups, L, H, nKv, grouped, cursor: 0, openKey: null, later: 0, laterTask: 0 };
  root.addEventListener("click", (e) => {
    const b = e.target.closest(".thumb");
    if (!b) return;
    s.cursor = buttons.indexOf(b);
    s.data.onOpen?.(Number(b.dataset.layer), Number(b.dataset.head));
  });
  root.addEventListener("keydown", (e) => move(el, s, e));
  root.addEventListener("focusin", (e) => {
    const b = e.target.closest(".thumb");
    if (b) s.cursor = buttons.indexOf(b);
  });
  return s;
}

function move(el, s, e) {
  if (e.altKey || e.shiftKey) return;
  const k = keyTarget(el, s, e, s.cursor);
  if (k === null) return;
  e.preventDefault();
  s.buttons[s.cursor].tabIndex = -1;
  s.cursor = k;
  s.buttons[k].tabIndex = 0;
  s.buttons[k].focus({ preventScroll: true });
  reveal(el, s, k);
}

function bases(att) {
  let m = baseCache.get(att);
  if (!m) {
    m = new Map();
    baseCache.set(att, m);
  }
  return m;
}

// The head's picture coloured through the Viridis table: one pixel per attention weight, or, when the
// prompt has more tokens than the thumbnail has pixels, each pixel shows the LARGEST weight of the
// block it covers. Averaging would wash a sharp one-token stripe (previous-token, induction) into the
// dark background at exactly the lengths where a class looks for it.
// Returned as ImageData: when it is exactly the thumbnail's size (pooled, or n equal to the size) it
// goes straight onto the thumbnail with putImageData, with no canvas in between (`drawBase`).
function base(att, l, h, size) {
  const m = bases(att);
  const n = att.side; // the picture's rows: n tokens, or a thumbnail's pixels (already max-pooled)
  const side = Math.min(n, size);
  const k = `${l},${h},${side}`;
  let img = m.get(k);
  if (img) return img;
  const bytes = att.bytes(l, h);
  img = new ImageData(side, side);
  const px = img.data;
  const edges = new Int32Array(side + 1); // first token of pixel p's block
  for (let p = 0; p <= side; p++) edges[p] = Math.floor((p * n) / side);
  const causal = att.causal;
  for (let pi = 0; pi < side; pi++) {
    const i0 = edges[pi];
    const i1 = Math.max(i0 + 1, edges[pi + 1]);
    for (let pj = 0; pj < side; pj++) {
      const j0 = edges[pj];
      const j1 = Math.max(j0 + 1, edges[pj + 1]);
      const p = (pi * side + pj) * 4;
      px[p + 3] = 255;
      if (causal && j0 > i1 - 1) {
        px[p] = px[p + 1] = px[p + 2] = 238; // masked future: light grey, not "zero attention" purple
        continue;
      }
      let v = 0;
      for (let i = i0; i < i1; i++) {
        const jEnd = causal && j1 > i + 1 ? i + 1 : j1;
        for (let j = i * n + j0, end = i * n + jEnd; j < end; j++) if (bytes[j] > v) v = bytes[j];
      }
      px[p] = LUT[v * 4];
      px[p + 1] = LUT[v * 4 + 1];
      px[p + 2] = LUT[v * 4 + 2];
    }
  }
  m.set(k, img);
  return img;
}

// ImageData -> a canvas, for drawImage's scaling (kept with the ImageData: made once per picture).
const canvasOf = new WeakMap();
function asCanvas(img) {
  let c = canvasOf.get(img);
  if (!c) {
    c = document.createElement("canvas");
    c.width = img.width;
    c.height = img.height;
    c.getContext("2d").putImageData(img, 0, 0);
    canvasOf.set(img, c);
  }
  return c;
}

// Paint the heads the box shows now, then the others a few at a time in the next frames: at 512 heads
// the visible ones reach the screen without waiting for the rest. `data-painting` is set on the
// grid's element until every head is painted.
function drawAll(s) {
  const dpr = window.devicePixelRatio || 1;
  const size = Math.round(s.thumb * dpr);
  cancelAnimationFrame(s.later);
  clearTimeout(s.laterTask);
  const seen = visibleHeads(s.el, s);
  const rest = [];
  for (let k = s.canvases.length - 1; k >= 0; k--) {
    if (seen(k)) drawHead(s, k, size);
    else rest.push(k);
  }
  // Each slice runs as a task after the next frame has started (so the frame holding the visible
  // heads is painted first, and whoever waits for that frame is not kept waiting by a slice).
  const next = () => {
    s.later = requestAnimationFrame(() => {
      s.later = requestAnimationFrame(() => {
        s.laterTask = setTimeout(step, 0);
      });
    });
  };
  const step = () => {
    const end = performance.now() + PAINT_SLICE_MS;
    while (rest.length && performance.now() < end) drawHead(s, rest.pop(), size);
    if (rest.length) next();
    else delete s.el.dataset.painting;
  };
  if (rest.length) {
    s.el.dataset.painting = "";
    next();
  } else delete s.el.dataset.painting;
}
const PAINT_SLICE_MS = 12; // of each frame, so scrolling and typing stay smooth meanwhile

// One head's picture on its canvas.
function drawHead(s, k, size) {
  const { att, highlight } = s.data;
  const c = s.canvases[k];
  if (c.width !== size) {
    c.width = size;
    c.height = size;
  }
  drawBase(c.getContext("2d"), base(att, Math.floor(k / s.H), k % s.H, size), att.n, size, highlight);
}

function drawBase(ctx, img, n, size, highlight) {
  if (img.width === size) {
    ctx.putImageData(img, 0, 0); // already the thumbnail's size: no scaling, no intermediate canvas
    drawHighlight(ctx, n, size, highlight);
  } else drawThumb(ctx, asCanvas(img), n, size, highlight);
}

export function drawThumb(ctx, img, n, size, highlight) {
  ctx.imageSmoothingEnabled = false; // crisp cells when enlarged; long prompts arrive already pooled
  ctx.drawImage(img, 0, 0, size, size);
  drawHighlight(ctx, n, size, highlight);
}


function drawHighlight(ctx, n, size, highlight) {
  if (highlight === null || highlight === undefined || highlight >= n) return;
  // The hovered token's row (what it attends to) and column (what attends to it).
  const cell = size / n;
  const w = Math.max(cell, 2);
  const at = highlight * cell + cell / 2 - w / 2;
  ctx.fillStyle = "rgba(255,255,255,0.45)";
  ctx.fillRect(0, at, size, w);
  ctx.fillRect(at, 0, w, size);
  ctx.strokeStyle = "rgba(0,0,0,0.7)";
  ctx.lineWidth = 1;
  ctx.strokeRect(0.5, at - 0.5, size - 1, w + 1);
  ctx.strokeRect(at - 0.5, 0.5, w + 1, size - 1);
}

// Outline the open head and keep the tab stop on it when it changes; true when it changed.
function mark(s) {
  const { open, badges } = s.data;
  const openKey = open ? open.layer * s.H + open.head : null;
  const changed = openKey !== s.openKey;
  s.openKey = openKey;
  if (changed && openKey !== null && openKey < s.buttons.length) s.cursor = openKey;
  s.buttons.forEach((b, k) => {
    const isOpen = k === openKey;
    b.classList.toggle("open", isOpen);
    b.setAttribute("aria-pressed", String(isOpen));
    b.tabIndex = k === s.cursor ? 0 : -1;
    renderBadges(b, badges?.get(`${Math.floor(k / s.H)},${k % s.H}`));
  });
  return changed;
}

// Role badges (previous-token, induction, ...) supplied by the head atlas: [{label, title}] per head.
function renderBadges(button, list) {
  let holder = button.querySelector(".badges");
  if (!list || !list.length) {
    holder?.remove();
    return;
  }
  if (!holder) {
    holder = document.createElement("span");
    holder.className = "badges";
    button.append(holder);
  }
  holder.replaceChildren(
    ...list.map(({ label, title }) => {
      const span = document.createElement("span");
      span.className = "badge";
      span.textContent = label;
      if (title) span.title = title;
      return span;
    }),
  );
}

// One picture of the whole grid, labels and K/V groups included, for the PNG button.
export function gridCanvas(el) {
  const s = state.get(el);
  if (!s) return null;
  // Sticky labels sit where the scroll box holds them: read every position with the box unscrolled.
  const { scrollTop, scrollLeft } = el;
  el.scrollTop = el.scrollLeft = 0;
  const scale = 2;
  const rootBox = s.root.getBoundingClientRect();
  const c = document.createElement("canvas");
  c.width = Math.ceil(rootBox.width * scale);
  c.height = Math.ceil(rootBox.height * scale);
  const ctx = c.getContext("2d");
  ctx.scale(scale, scale);
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, rootBox.width, rootBox.height);
  const cs = getComputedStyle(s.root);
  for (const e of s.root.children) {
    const r = e.getBoundingClientRect();
    const x = r.left - rootBox.left;
    const y = r.top - rootBox.top;
    if (e.classList.contains("hg-band")) {
      ctx.fillStyle = getComputedStyle(e).backgroundColor;
      ctx.fillRect(x, y, r.width, r.height);
    } else if (e.classList.contains("thumb")) {
      const k = s.buttons.indexOf(e);
      const size = Math.round(s.thumb * scale);
      const tmp = document.createElement("canvas");
      tmp.width = tmp.height = size;
      drawBase(tmp.getContext("2d"), base(s.data.att, Math.floor(k / s.H), k % s.H, size), s.data.att.n, size,
        s.data.highlight);
      ctx.drawImage(tmp, x, y, s.thumb, s.thumb);
    } else if (e.textContent) {
      ctx.fillStyle = "#000000";
      ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillText(e.textContent, x + r.width / 2, y + r.height / 2);
    }
  }
  el.scrollTop = scrollTop;
  el.scrollLeft = scrollLeft;
  return c;
}
