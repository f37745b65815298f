// The lesson's steps, one idea each, in the chapter's order. Each step fetches its numbers from the
// running model (the same endpoints the labs use) and returns what the page shows:
//   { lead: [sentences], view: an element, tryThis: [sentence, {href, text}?] }
// Sentences are built from the answers, so they say what THIS model does (a GPT-2-style model without
// RoPE, a model without induction heads): a step never claims what the numbers do not show.

import * as api from "../../lib/api.js";
import { el } from "../../lib/dom.js";
import { fmtBytes, fmtInt, fmtMeasured, positionName } from "../../lib/format.js";
import { randomSetsNote } from "../../lib/heads.js";
import { renderClock } from "../../views/ropeclock.js";
import { renderScore } from "../../views/score.js";

const pct = (p) => `${(p * 100).toFixed(p < 0.1 ? 1 : 0)}%`;
const link = (href, text) => ({ href, text });
const q = (params) => `?${new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v !== null))}`;

// A few rows of "label: value" in large type, for the numbers a class reads out.
function facts(rows) {
  const dl = el("dl", "lesson-facts");
  for (const [k, v] of rows) dl.append(el("dt", null, k), el("dd", "num", v));
  return dl;
}

// Horizontal bars of [label, value, text] against a shared maximum.
function bars(rows, { max } = {}) {
  const top = max ?? Math.max(1e-12, ...rows.map((r) => r[1]));
  const box = el("div", "lesson-bars");
  for (const [label, value, text] of rows) {
    const row = el("div", "lesson-bar");
    const fill = el("span", "lesson-bar-fill");
    fill.style.width = `${Math.max(0.5, (100 * value) / top)}%`;
    const track = el("span", "lesson-bar-track");
    track.append(fill);
    row.append(el("span", "lesson-bar-label", label), track, el("span", "lesson-bar-num num", text));
    box.append(row);
  }
  return box;
}

async function rolesOf(ctx) {
  ctx.heads ??= api.heads(ctx.model);
  return ctx.heads;
}

const role = (heads, key) => heads.roles.find((r) => r.key === key);
const headName = (h) => `L${h.layer}H${h.head}`;

async function whole(ctx) {
  const a = await api.anatomy({ prompt: ctx.prompt, model: ctx.model || null, top_k: 3 });
  const list = el("ol", "lesson-pipeline");
  for (const s of a.pipeline) {
    const li = el("li");
    li.append(el("span", "lesson-step-name", s.name), el("span", "lesson-shape num", `[${s.shape.join(" × ")}]`));
    list.append(li);
  }
  const last = a.pipeline.at(-1).top.at(-1);
  const view = el("div", "lesson-two");
  view.append(list, bars(last.map((t) => [t.token, t.prob, pct(t.prob)]), { max: 1 }));
  const blocks = a.pipeline.filter((s) => s.layer !== undefined && s.layer !== null).length;
  return {
    lead: [
      `${a.n} tokens go in as ids. Each id picks a row of the embedding: a vector of ${a.config.d_model} numbers.`,
      `${blocks} identical blocks each add to those vectors; a final ${a.norm} and the output layer turn the last one ` +
        `into ${fmtInt(a.config.vocab_size)} scores, and softmax makes them probabilities.`,
      `After “${a.tokens.at(-1)}” the model's top guess is “${last[0].token}” at ${pct(last[0].prob)}.`,
    ],
    view,
    tryThis: ["Change the prompt above and watch the top guess move.", link(`/anatomy${q({ prompt: ctx.prompt, model: ctx.model })}`, "Open the anatomy page")],
  };
}

async function score(ctx) {
  const heads = await rolesOf(ctx);
  const prev = role(heads, "previous_token");
  const h = prev.heads[0] || prev.best;
  const body = { prompt: ctx.prompt, model: ctx.model || null, layer: h.layer, head: h.head, vectors: 12 };
  const last = await api.score(body);
  // A query two tokens before the end, so the class also sees the mask hide the tokens after it.
  const s = last.n > 3 ? await api.score({ ...body, index: last.n - 3 }) : last;
  const view = el("div", "lesson-score");
  renderScore(view, s, { maxRows: 9, stripPx: 96 });
  const top = s.keys.reduce((a, b) => (b.weight > a.weight ? b : a));
  const kind = prev.heads.length ? "a previous-token head" : "the head nearest to a previous-token head";
  return {
    lead: [
      `Head ${headName(h)} is ${kind}. Its query for “${s.tokens[s.index]}” is compared with every key by a dot product q·k.`,
      `Each score is divided by √${s.d_head} = ${s.sqrt_d.toFixed(2)}, later tokens are masked, and softmax turns the ` +
        `scores into weights that add up to 1: here “${top.token}” gets ${pct(top.weight)}.`,
      "The output is the weighted sum of the value vectors.",
    ],
    view,
    tryThis: ["Open any head in the explorer and pick the Score tab; hover a strip for its numbers.",
      link(`/${q({ prompt: ctx.prompt, model: ctx.model, layer: h.layer, head: h.head, view: "score" })}`, "This head in the explorer")],
  };
}

async function many(ctx) {
  const heads = await rolesOf(ctx);
  const rows = heads.roles.map((r) => [r.name, r.heads.length ? r.heads.slice(0, 4).map(headName).join(" ") + (r.heads.length > 4 ? ` +${r.heads.length - 4}` : "") : "no head in this model"]);
  const earned = heads.roles.filter((r) => r.heads.length);
  const n = heads.n_layer * heads.n_head;
  const busy = new Set(earned.flatMap((r) => r.heads.map(headName))).size;
  return {
    lead: [
      `This model has ${heads.n_layer} layers × ${heads.n_head} heads = ${n} heads, each with its own W_Q, W_K and W_V.`,
      `${busy ? `${busy} of them earn` : "None of them earns"} a role on our probes (a role counts only if knocking its heads out hurts what it is for); ` +
        `${heads.roles.length - earned.length} of ${heads.roles.length} roles have no head in this model.`,
    ],
    view: facts(rows),
    tryThis: ["Knock out a role's heads in the head atlas and read what breaks.", link(`/atlas${q({ model: ctx.model })}`, "Open the head atlas")],
  };
}

async function gqa(ctx) {
  const c = await api.cost({ n: ctx.info.context_length, model: ctx.model || null });
  const live = c.models.find((m) => m.live);
  const { n_head: H, n_kv_head: K } = live.config;
  const groups = el("div", "lesson-groups");
  for (let g = 0; g < K; g++) {
    const box = el("div", "lesson-group");
    box.append(el("span", "lesson-kv", `K/V ${g}`));
    for (let h = g * (H / K); h < (g + 1) * (H / K); h++) box.append(el("span", "lesson-q", `Q${h}`));
    groups.append(box);
  }
  const others = c.models.filter((m) => !m.live).map((m) => [m.name, `${m.config.n_head} Q / ${m.config.n_kv_head} K/V: ×${fmtMeasured(m.kv_cache.saving)}`]);
  const view = el("div");
  view.append(groups, facts([[`KV cache at n = ${fmtInt(c.n)}`, `${fmtBytes(live.kv_cache.bytes)} (every head its own: ${fmtBytes(live.kv_cache.mha_bytes)})`], ...others]));
  const lead = K < H
    ? [`${H} query heads share ${K} key/value heads: every ${H / K} query heads read the same keys and values.`,
      `While generating, the model keeps every key and value it computed: ${fmtBytes(live.kv_cache.bytes)} instead of ` +
        `${fmtBytes(live.kv_cache.mha_bytes)} at ${fmtInt(c.n)} tokens, ${fmtMeasured(live.kv_cache.saving)}× less.`]
    : [`In this model every one of the ${H} heads has its own keys and values (no grouping), so nothing is saved: ` +
        `${fmtBytes(live.kv_cache.bytes)} of KV cache at ${fmtInt(c.n)} tokens.`,
      "Grouped-query attention lets several query heads share one key/value head; the models on the right show what it saves."];
  return { lead, view, tryThis: ["Slide n in the cost lab and watch the KV cache grow.", link(`/cost${q({ model: ctx.model })}`, "Open the cost lab")] };
}

async function position(ctx) {
  const [p, w] = await Promise.all([
    api.permutation({ prompt: ctx.prompt, model: ctx.model || null, permutation: "shuffle" }),
    api.wordOrder({ model: ctx.model || null }),
  ]);
  const cond = (list, pos) => list.find((c) => c.position === pos && !c.causal);
  const off = cond(p.conditions, false), on = cond(p.conditions, true);
  const woff = cond(w.conditions, false), won = cond(w.conditions, true);
  const a = w.tokens_a.join("").replace(/·/g, " "), b = w.tokens_b.join("").replace(/·/g, " ");
  const view = facts([
    ["shuffled, position off: largest change", fmtMeasured(off.head_max_diff)],
    ["shuffled, position on: largest change", fmtMeasured(on.head_max_diff)],
    [`“${a}” vs “${b}”, position off`, `next-token change ${fmtMeasured(woff.next.max_diff)}`],
    ["the same, position on", `next-token change ${fmtMeasured(won.next.max_diff)}`],
  ]);
  return {
    lead: [
      "Attention is a weighted sum, and sums do not care about order. We shuffle the prompt's tokens and put the " +
        "attention back in the original order (no causal mask, so every token sees every other).",
      `Without position information the head's attention changes by at most ${fmtMeasured(off.head_max_diff)}: only rounding. ` +
        (p.positional === "none"
          ? `This model has no position information to turn on (${positionName(p.positional)}), so “position on” changes nothing either: up to ${fmtMeasured(on.head_max_diff)}.`
          : `With it (${p.positional === "rope" ? "RoPE" : "learned position vectors"}) it changes by up to ${fmtMeasured(on.head_max_diff)}.`),
      p.positional === "none"
        ? `So without the mask, “${a}” and “${b}” predict the same next token whatever the switch says (largest difference ` +
          `${fmtMeasured(won.next.max_diff)}): only the causal mask can tell them apart here, and the position lab turns it on.`
        : `So without position, “${a}” and “${b}” predict the same next token (largest difference ${fmtMeasured(woff.next.max_diff)}); ` +
          `with it, their predictions differ by up to ${fmtMeasured(won.next.max_diff)}.`,
    ],
    view,
    tryThis: ["Swap two words yourself in the position lab.", link(`/position${q({ prompt: ctx.prompt, model: ctx.model })}`, "Open the position lab")],
  };
}

async function rope(ctx) {
  const r = await api.rope({ model: ctx.model || null });
  const view = el("div", "lesson-rope");
  if (!r.clock && !r.learned) {
    return {
      title: "No positional encoding: no clock and no table",
      lead: [r.message, "Only the causal mask tells its tokens apart by order: token i sees i + 1 tokens. The position lab measures how much of the order that gives back."],
      view,
      tryThis: ["Probe where this model keeps position in the position lab.", link(`/position${q({ model: ctx.model })}`, "Open the position lab")],
    };
  }
  if (!r.clock) {
    const L = r.learned;
    view.append(facts([["learned position vectors", `${fmtInt(L.positions.length)} shown`],
      ["cosine of neighbours (0 vs 1)", fmtMeasured(L.similarity[0][1])],
      [`cosine of 0 vs ${L.positions.at(-1)}`, fmtMeasured(L.similarity[0].at(-1))]]));
    return {
      title: "Learned positions: no RoPE clock",
      lead: [`This model (${r.positional} positions) has no clock: each position 0–${ctx.info.context_length - 1} has its own learned vector, added to the token's embedding.`,
        "So it cannot be stretched: there is no vector for a position it never learned. RoPE models turn a clock instead."],
      view,
      tryThis: ["See how similar the learned position vectors are in the position lab.", link(`/position${q({ model: ctx.model })}`, "Open the position lab")],
    };
  }
  const c = r.clock;
  const index = Math.min(c.positions.length - 1, Math.max(0, c.positions.indexOf(Math.min(c.context_length - 1, 100))));
  const dial = el("div", "lesson-clock");
  view.append(dial);
  requestAnimationFrame(() => renderClock(dial, c, index)); // after layout: the dials fill the width they get
  return {
    lead: [`RoPE turns each query and key by its position: ${c.angles[0].length} hands, one per pair of the ${c.head_dim} numbers ` +
        `(drawn at position ${c.positions[index]}).`,
      `The fastest hand turns once every ${c.periods[0].toFixed(1)} positions, the slowest once every ${fmtInt(c.periods.at(-1))}: ` +
        "fast hands tell fine position, slow ones the rough place.",
      "Turning both by their positions makes q·k depend only on their distance; dividing positions by a scale stretches the clock to longer texts."],
    view,
    tryThis: [`In the position lab, move the position past the training length (${c.context_length}) and watch the hands leave the grey arcs.`,
      link(`/position${q({ model: ctx.model })}`, "See the stretch curves in the position lab")],
  };
}

async function block(ctx) {
  const a = await api.anatomy({ prompt: ctx.prompt, model: ctx.model || null, top_k: 1 });
  const L = a.block.norms.length - 1;
  const i = a.n - 1;
  const stages = a.block.stages.map((s, k) => [s.label, a.block.norms[L][k][i], a.block.norms[L][k][i].toFixed(1)]);
  const live = a.census.find((c) => c.live);
  const ref = a.census.find((c) => c.key === "llama-2-7b") || a.census.find((c) => !c.live);
  const view = el("div", "lesson-two");
  view.append(bars(stages), facts([[`feed-forward share, ${live.name}`, pct(live.feed_forward_share)],
    [`feed-forward share, ${ref.name}`, pct(ref.feed_forward_share)]]));
  return {
    lead: [
      `x is a shared notepad: in block L${L} the attention adds to x, then the feed-forward adds to it again; nothing is replaced. ` +
        `Bars: the length of “${a.tokens[i]}”'s vector at each step.`,
      "Attention moves information between tokens; the feed-forward works on each token alone, and holds " +
        `${live.feed_forward_share > 0.5 ? "most of the weights" : "this share of the weights"}: ` +
        `${pct(live.feed_forward_share)} of this model's block parameters, ${pct(ref.feed_forward_share)} in ${ref.name}.`,
    ],
    view,
    tryThis: ["Click another block or token on the anatomy page.", link(`/anatomy${q({ prompt: ctx.prompt, model: ctx.model })}`, "Open the anatomy page")],
  };
}

async function induction(ctx) {
  const heads = await rolesOf(ctx);
  const ind = role(heads, "induction");
  const target = ind.heads.length ? { role: "induction" } : { heads: [[ind.best.layer, ind.best.head]] };
  const ab = await api.headAblation({ prompt: ctx.prompt, model: ctx.model || null, ...target });
  const r = ab.repeat;
  const view = bars([
    ["second copy, every head", r.second_copy_loss, `${r.second_copy_loss.toFixed(2)} nats`],
    [`without ${ab.heads.length} head${ab.heads.length > 1 ? "s" : ""}`, r.second_copy_loss_ablated, `${r.second_copy_loss_ablated.toFixed(2)} nats`],
    [`without as many random heads${randomSetsNote(r)}`, r.second_copy_loss_random ?? 0, r.second_copy_loss_random === null ? "—" : `${r.second_copy_loss_random.toFixed(2)} nats`],
    ["first copy (nothing to copy)", r.first_copy_loss, `${r.first_copy_loss.toFixed(2)} nats`],
  ]);
  const who = ind.heads.length
    ? `${ind.heads.length} head${ind.heads.length > 1 ? "s" : ""} earn the induction role here (${ind.heads.slice(0, 4).map(headName).join(", ")}${ind.heads.length > 4 ? ", …" : ""}).`
    : `No head in this model earns the induction role; we knock out the nearest, ${headName(ind.best)}.`;
  return {
    lead: [
      `An induction head spots “A B … A” and predicts “B”. We feed ${r.length} random tokens twice: the second copy is easy only for a model that copies.`,
      who,
      `Loss on the second copy: ${r.second_copy_loss.toFixed(2)} nats with every head, ${r.second_copy_loss_ablated.toFixed(2)} ` +
        `without ${ab.heads.length > 1 ? "them" : "it"}` + (r.second_copy_loss < r.first_copy_loss / 2
        ? "."
        : `; the first copy costs ${r.first_copy_loss.toFixed(2)}, so this model does not copy at all.`),
    ],
    view,
    tryThis: [ab.prompt.sentence, link(`/atlas${q({ model: ctx.model })}`, "Knock out other heads in the atlas")],
  };
}

async function cost(ctx) {
  const n = ctx.info.context_length;
  const [c, half] = await Promise.all([n, Math.max(1, Math.floor(n / 2))].map((m) => api.cost({ n: m, model: ctx.model || null })));
  const live = c.models.find((m) => m.live), liveHalf = half.models.find((m) => m.live);
  const rows = c.chapter.map((r) => [`${fmtInt(r.n)} tokens, one head`, `${fmtInt(r.scores)} scores, ${fmtBytes(r.fp32_bytes)}`]);
  for (const [cc, m] of [[half, liveHalf], [c, live]]) {
    rows.push([`this model, ${fmtInt(cc.n)} tokens`, `${fmtInt(m.scores.total)} scores (${m.config.n_head} heads × ${m.config.n_layer} layers)`]);
  }
  return {
    lead: [
      "Every token scores every token before it: n tokens make an n × n table, per head, per layer.",
      `Doubling the context quadruples the scores: from ${fmtInt(half.n)} to ${fmtInt(c.n)} tokens this model goes from ` +
        `${fmtInt(liveHalf.scores.total)} to ${fmtInt(live.scores.total)}, ×${fmtMeasured(live.scores.total / liveHalf.scores.total)}. ` +
        "At the chapter's sizes, one head alone (float32):",
    ],
    view: facts(rows),
    tryThis: ["Time the live model's attention on this server and read the fitted exponent.", link(`/cost${q({ model: ctx.model })}`, "Time it in the cost lab")],
  };
}

export const STEPS = [
  { key: "model", title: "The whole model", run: whole },
  { key: "score", title: "One head: how a score is made", run: score },
  { key: "heads", title: "Many heads, different jobs", run: many },
  { key: "gqa", title: "Grouped-query attention", run: gqa },
  { key: "position", title: "Position: order matters", run: position },
  { key: "rope", title: "The RoPE clock", run: rope },
  { key: "block", title: "The block: a shared notepad", run: block },
  { key: "induction", title: "Induction heads, knocked out", run: induction },
  { key: "cost", title: "The catch: attention is quadratic", run: cost },
];
