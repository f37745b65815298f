// The RoPE clock: one dial per frequency pair, its hand at the angle the server computed for the chosen
// position (the same cos/sin the model multiplies queries and keys by). Fast hands first. The grey arc
// on a dial is the part of the circle that hand swept during training; a hand outside it (drawn in
// orange) is at an angle the model never saw. Beside it, the score of one query/key pair against the
// offset m - n, one curve per absolute position: they lie on top of each other.

import { VIRIDIS } from "../lib/colors.js";
import { hiDpiContext } from "../lib/dom.js";
import { baseLayout, config, react, theme } from "../lib/plot.js";

// Dial cell size follows the font (presenter mode) so the labels under neighbouring dials never touch.
const dialSize = (font) => Math.max(78, Math.round(font * 7));
const OUTSIDE = "#D55E00";

const viridisAt = (t) => VIRIDIS[Math.round(Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1))][1];

const turnsText = (period) =>
  period < 100 ? `every ${period.toFixed(1)}` : `every ${Math.round(period).toLocaleString("en")}`;

// el: the clock container; clock: the response's clock; index: which sampled position to show.
export function renderClock(el, clock, index) {
  const t = theme();
  const DIAL = dialSize(t.font);
  const R = Math.round(DIAL * 0.35);
  const hands = clock.angles[0].length;
  const width = Math.max(DIAL * 4, el.clientWidth || DIAL * 8);
  const cols = Math.max(1, Math.floor(width / DIAL));
  const rows = Math.ceil(hands / cols);
  let canvas = el.querySelector("canvas");
  if (!canvas) {
    canvas = document.createElement("canvas");
    canvas.setAttribute("role", "img");
    el.replaceChildren(canvas);
  }
  const w = cols * DIAL;
  const h = rows * (DIAL + 6);
  const ctx = hiDpiContext(canvas, w, h);
  const position = clock.positions[index];
  const beyond = position > clock.trained_positions;
  const angles = clock.angles[index];
  for (let k = 0; k < hands; k++) {
    const cx = (k % cols) * DIAL + DIAL / 2;
    const cy = Math.floor(k / cols) * (DIAL + 6) + R + 6;
    const colour = viridisAt((0.85 * k) / Math.max(1, hands - 1));
    drawDial(ctx, { cx, cy, R }, angles[k], clock.turns_in_context[k], beyond, colour, t);
    ctx.fillStyle = t.muted;
    ctx.font = `${Math.max(9, t.font - 2)}px ${t.family}`;
    ctx.textAlign = "center";
    ctx.fillText(turnsText(clock.periods[k]), cx, cy + R + 15);
  }
  const deg = (a) => `${((a * 180) / Math.PI).toFixed(1)}°`;
  el.dataset.position = String(position);
  el.dataset.angle0 = deg(angles[0]);
  el.dataset.angleLast = deg(angles[hands - 1]);
  el.dataset.beyond = String(beyond);
  canvas.setAttribute(
    "aria-label",
    `${hands} clock hands at position ${position}: fastest at ${deg(angles[0])}, slowest at ${deg(angles[hands - 1])}`,
  );
}

function drawDial(ctx, { cx, cy, R }, angle, turns, beyond, colour, t) {
  ctx.lineWidth = 1;
  ctx.strokeStyle = t.grid;
  ctx.beginPath();
  ctx.arc(cx, cy, R, 0, 2 * Math.PI);
  ctx.stroke();
  // The angles training reached: the whole dial for hands that went round at least once.
  const swept = Math.min(1, turns) * 2 * Math.PI;
  ctx.strokeStyle = "rgba(90, 97, 108, 0.35)";
  ctx.lineWidth = 5;
  ctx.beginPath();
  ctx.arc(cx, cy, R - 3, -Math.PI / 2, -Math.PI / 2 + swept);
  ctx.stroke();
  // 12 o'clock tick: where every hand starts at position 0.
  ctx.strokeStyle = t.ink;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.moveTo(cx, cy - R);
  ctx.lineTo(cx, cy - R + 5);
  ctx.stroke();
  // The hand turns clockwise from 12 o'clock as the position grows.
  const outside = beyond && turns < 1;
  ctx.strokeStyle = outside ? OUTSIDE : colour;
  ctx.lineWidth = 3;
  ctx.lineCap = "round";
  ctx.beginPath();
  ctx.moveTo(cx, cy);
  ctx.lineTo(cx + (R - 6) * Math.sin(angle), cy - (R - 6) * Math.cos(angle));
  ctx.stroke();
  ctx.fillStyle = t.ink;
  ctx.beginPath();
  ctx.arc(cx, cy, 2.5, 0, 2 * Math.PI);
  ctx.fill();
}

const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "5px,2px", "1px,3px"];

export async function renderCurves(el, curves, { scale, trainedScale }) {
  const t = theme();
  const traces = curves.scores.map((ys, c) => ({
    type: "scatter",
    mode: "lines",
    x: curves.offsets,
    y: ys,
    name: `key at position ${curves.key_positions[c].toLocaleString("en")}`,
    line: { width: c === 0 ? 6 : 2, dash: DASHES[c % DASHES.length], color: viridisAt((0.85 * c) / Math.max(1, curves.scores.length - 1)) },
    opacity: c === 0 ? 0.45 : 1,
    hovertemplate: "m − n = %{x}<br>score %{y:.4f}<extra>%{fullData.name}</extra>",
  }));
  if (curves.reference) {
    traces.push({
      type: "scatter",
      mode: "lines",
      x: curves.offsets,
      y: curves.reference,
      name: `without interpolation (scale ${trainedScale})`,
      line: { width: 1.5, color: "#888", dash: "dot" },
      hovertemplate: "m − n = %{x}<br>score %{y:.4f}<extra>scale %{fullData.name}</extra>",
    });
  }
  const layout = {
    ...baseLayout(t),
    margin: { t: 8, r: 8, b: 8, l: 8 },
    showlegend: true,
    legend: { orientation: "h", y: -0.22, x: 0, font: { size: t.font - 1 } },
    xaxis: { title: { text: `offset m − n (query position − key position), scale ${scale}` }, automargin: true, zeroline: false, gridcolor: t.grid },
    yaxis: { title: { text: "score q·k / √d" }, automargin: true, gridcolor: t.grid, zerolinecolor: t.grid },
  };
  await react(el, traces, layout, config("rope-offset-scores"));
}
