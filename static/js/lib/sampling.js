// Drawing the next token from the distribution the page shows. The server sends the top few tokens
// with their probabilities (temperature already applied); "Sample" draws among exactly those bars,
// so what a class sees is what is sampled. Top-k and top-p narrow the bars further; the shares are
// the bars' probabilities renormalised over the tokens left in the draw.
//
// Draws are seeded and depend only on (seed, prompt length in tokens): the same prompt and seed give
// the same token on every machine and every visit, so a class can reproduce a story step by step,
// and changing the seed gives another story.

// mulberry32: a small 32-bit PRNG with good statistics for this use (not for cryptography).
function mulberry32(a) {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A uniform number in [0, 1) for draw number `step` under `seed`.
export function uniform(seed, step) {
  const mixed = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(step + 1, 0xc2b2ae35);
  const next = mulberry32(mixed);
  next(); // the first output of nearby states is correlated; skip it
  return next();
}

// The tokens a draw can pick: the first `k` bars (by probability), without those `usable` rejects
// (pieces of a character, which cannot be appended as text), then the smallest prefix whose
// probability reaches `p` (at least one token). Returns [{id, token, prob, share}] with shares summing
// to 1, or [] when nothing can be drawn.
export function pool(top, { k, p, usable = () => true }) {
  const kept = [];
  let mass = 0;
  for (const t of top.slice(0, Math.max(1, k))) {
    if (!usable(t)) continue;
    kept.push(t);
    mass += t.prob;
    if (mass >= p) break;
  }
  const total = kept.reduce((s, t) => s + t.prob, 0);
  if (!(total > 0)) return [];
  return kept.map((t) => ({ ...t, share: t.prob / total }));
}

// The token of `candidates` (from pool) that a uniform number u lands on.
export function pick(candidates, u) {
  let cum = 0;
  for (const c of candidates) {
    cum += c.share;
    if (u < cum) return c;
  }
  return candidates[candidates.length - 1] ?? null;
}
