// Where the head grid's pictures go, and how the keyboard and the scroll box reach them.
//
// Sizes: the grid lives in a box that ends inside the window, so the open head beside it stays in view.
// The thumbnails show the whole model at once when that keeps them at a readable size (--hg-min-thumb-px,
// larger in presenter mode) and not much smaller than the width allows; otherwise they fill the box's
// width, or stay at that minimum, and the box scrolls, with the layer labels and head labels held in
// place (sticky, app.css). A zoom step makes them 1.25x larger or smaller than that fit, never below
// the minimum.
//
// Keyboard (the grid is one tab stop, a roving tabindex): arrows move one head, Home/End to the first or
// last head of the layer (with Ctrl: of the grid), PageUp/PageDown by as many layers as the box shows.

const GAP = 4; // px between cells: `.hg { gap }` in app.css
const MAX_THUMB = 150;
export const ZOOM_STEP = 1.25;
const WHOLE_MODEL_SHRINK = 0.7; // the most the pictures shrink to show every layer without scrolling

const cssPx = (cs, name, fallback) => parseFloat(cs.getPropertyValue(name)) || fallback;

// Thumbnail size, header heights and the scroll box's height for a grid `s` ({L, H, nKv, grouped})
// drawn in `el`; writes them as CSS variables on `el` and returns them.
export function fitGrid(el, s, zoom = 0) {
  const cs = getComputedStyle(el);
  const fs = parseFloat(cs.fontSize) || 15;
  const label = cssPx(cs, "--hg-label-px", 38);
  const groupGap = cssPx(cs, "--hg-group-gap-px", 16);
  const min = cssPx(cs, "--hg-min-thumb-px", 28);
  const gaps = s.grouped ? s.nKv - 1 : 0;
  // Header rows ("K/V head g", then "H h") and the strip under each picture for role badges.
  const headRow = Math.round(fs * 1.3);
  // From the grid's top to layer 0: padding (6, app.css .hg), header rows, the empty spacer row.
  const header = 6 + (s.grouped ? 2 : 1) * (headRow + GAP) + GAP;
  const badge = Math.round(fs * 0.7);
  const width = el.clientWidth || 600;
  const widthFit = Math.floor((width - label - gaps * groupGap - (s.H + gaps + 1) * GAP - 14) / s.H);
  const room = roomInWindow(el);
  const heightFit = Math.floor((room - header - 4) / s.L - GAP - badge);
  // The whole model at once if that keeps the pictures readable and not much smaller than the box's
  // width allows; else as wide as the box allows, and the box scrolls.
  const all = Math.min(widthFit, heightFit);
  const fit = all >= min && all >= WHOLE_MODEL_SHRINK * widthFit ? all : widthFit;
  const start = Math.max(min, Math.min(MAX_THUMB, fit));
  const zoomMin = Math.ceil(Math.log(min / start) / Math.log(ZOOM_STEP) - 1e-9);
  const zoomMax = Math.floor(Math.log(MAX_THUMB / start) / Math.log(ZOOM_STEP) + 1e-9);
  const z = Math.max(zoomMin, Math.min(zoomMax, zoom));
  const thumb = Math.max(min, Math.min(MAX_THUMB, Math.round(start * ZOOM_STEP ** z)));
  const pitch = thumb + badge + GAP;
  const full = header + s.L * pitch + 8;
  // Never shorter than a third of the window (a short window scrolls the page instead), never taller
  // than the grid.
  const box = Math.min(full, Math.max(room, Math.round(window.innerHeight * 0.35)));
  el.style.setProperty("--thumb", `${thumb}px`);
  el.style.setProperty("--badge-row", `${badge}px`);
  el.style.setProperty("--hg-head-row", `${headRow}px`);
  el.style.maxHeight = `${box}px`;
  return { thumb, pitch, header, label, box, zoom: z, zoomMin, zoomMax };
}

// Height left for the grid's box between its top and the window's bottom, measured from the page's
// top so that scrolling changes nothing. The legend and hint under it may need a scroll: the pictures
// come first.
function roomInWindow(el) {
  return Math.floor(window.innerHeight - (el.getBoundingClientRect().top + window.scrollY) - 12);
}

// Scroll the box (never the page) the least that brings head k whole into its visible part, clear of
// the sticky labels.
export function reveal(el, s, k) {
  const b = s.buttons[k];
  if (!b) return;
  const f = s.fit;
  const outline = 8; // the open head's outline (6 px) and a little air
  const top = b.offsetTop - f.header - 2;
  const bottom = b.offsetTop + f.pitch;
  const left = b.offsetLeft - f.label - outline;
  const right = b.offsetLeft + f.thumb + outline;
  if (top < el.scrollTop) el.scrollTop = top;
  else if (bottom > el.scrollTop + el.clientHeight) el.scrollTop = bottom - el.clientHeight;
  if (left < el.scrollLeft) el.scrollLeft = left;
  else if (right > el.scrollLeft + el.clientWidth) el.scrollLeft = right - el.clientWidth;
}

// Whether head k is (even partly) inside the box's visible part: a test, k -> bool.
export function visibleHeads(el, s) {
  const top = el.scrollTop;
  const bottom = top + el.clientHeight;
  const left = el.scrollLeft;
  const right = left + el.clientWidth;
  const f = s.fit;
  // Rows and columns from the first head of each: one layout read per row and column, not per head.
  const rowsSeen = [];
  for (let l = 0; l < s.L; l++) {
    const y = s.buttons[l * s.H].offsetTop;
    rowsSeen.push(y < bottom && y + f.pitch > top);
  }
  const colsSeen = [];
  for (let h = 0; h < s.H; h++) {
    const x = s.buttons[h].offsetLeft;
    colsSeen.push(x < right && x + f.thumb > left);
  }
  return (k) => rowsSeen[Math.floor(k / s.H)] && colsSeen[k % s.H];
}

// How many layers the box shows at once: PageUp/PageDown move by that many.
const layersShown = (el, s) => Math.max(1, Math.floor((el.clientHeight - s.fit.header) / s.fit.pitch));

// The head a key moves the focus to from head `k` (layer-major index), or null for keys the grid
// leaves to the browser.
export function keyTarget(el, s, e, k) {
  const l = Math.floor(k / s.H);
  const h = k % s.H;
  const at = (layer, head) =>
    Math.min(s.L - 1, Math.max(0, layer)) * s.H + Math.min(s.H - 1, Math.max(0, head));
  const ctrl = e.ctrlKey || e.metaKey;
  switch (e.key) {
    case "ArrowLeft": return at(l, h - 1);
    case "ArrowRight": return at(l, h + 1);
    case "ArrowUp": return at(l - 1, h);
    case "ArrowDown": return at(l + 1, h);
    case "Home": return ctrl ? 0 : at(l, 0);
    case "End": return ctrl ? s.L * s.H - 1 : at(l, s.H - 1);
    case "PageUp": return at(l - layersShown(el, s), h);
    case "PageDown": return at(l + layersShown(el, s), h);
    default: return null;
  }
}
