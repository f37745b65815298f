// The only module that talks to the server: one exported function per endpoint.
// Every failure is thrown as an Error whose message is a sentence a person can read, because the page
// shows it in words next to whatever caused it. Aborted requests re-throw the AbortError untouched so
// callers can ignore requests they cancelled themselves.
//
// To add an endpoint: `export const myThing = (body, opts) => post("/api/my-thing", body, opts);`

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

// FastAPI answers schema errors with a list of {loc, msg}; turn it into one sentence.
export function describeDetail(detail, status) {
  if (typeof detail === "string" && detail.trim()) return detail;
  if (Array.isArray(detail) && detail.length) {
    return detail
      .map((d) => {
        const where = (d.loc || []).filter((p) => p !== "body").join(" → ");
        const msg = d.msg || "is not valid";
        return where ? `${where}: ${msg}` : msg;
      })
      .join("; ");
  }
  return `The server answered with an error (HTTP ${status}).`;
}

export async function request(path, { method = "GET", body, signal } = {}) {
  const init = { method, signal, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  let text;
  try {
    res = await fetch(path, init);
    text = await res.text();
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError("Could not reach the Attention Atlas server. Is it still running?", 0);
  }
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    if (data && data.detail !== undefined) throw new ApiError(describeDetail(data.detail, res.status), res.status);
    if (res.status >= 500) {
      throw new ApiError(`The server failed while answering (HTTP ${res.status}). Try again or a shorter prompt.`,
        res.status);
    }
    throw new ApiError(`The server refused the request (HTTP ${res.status} ${res.statusText}).`, res.status);
  }
  if (data === null) throw new ApiError("The server sent an answer that is not JSON.", res.status);
  return data;
}

export const post = (path, body, opts = {}) => request(path, { ...opts, method: "POST", body });

// "One request in flight, the newest wins", for anything a person can re-ask before the answer is back
// (typing, sliders, clicks). A run starts at once when nothing is in flight; otherwise it waits, and a
// newer run replaces the waiting one, so at most one request runs and one waits. When the answer in
// flight arrives, the waiting run is sent before the answer is handed back, so the server is already
// working on the newest text while the page draws. This beats a fixed pause: a lone keystroke is sent
// at once, and a fast typist never has more than one stale request queued behind the server.
// Each `run(call)` resolves to
//   {id, data}               the answer to the newest run,
//   {id, data, stale: true}  with `latest({ stale: true })`, an answer a newer run has superseded (the
//                            page may draw it so the views keep up with typing; it arrives in order),
//   {id, error}              the newest run's failure (an Error with a sentence),
//   null                     superseded (without `stale`), replaced while waiting, or cancelled.
// `call(signal)` makes the request; `cancel()` aborts the one in flight and drops the waiting one;
// `isCurrent(id)` says whether a run is still the newest (for work that continues after it resolved).
export function latest({ stale = false } = {}) {
  let seq = 0; // id of the newest run
  let dropped = 0; // runs with an id up to this were cancelled: their answers are never handed back
  let ctl = null; // the request in flight
  let waiting = null; // {id, call, resolve}: the newest run, until the one in flight is done
  let running = false; // a request is in flight (or an aborted one has not yet settled)
  const isCurrent = (id) => id === seq;
  function cancel() {
    ctl?.abort();
    ctl = null;
    waiting?.resolve(null);
    waiting = null;
    dropped = ++seq;
    return seq;
  }
  async function pump() {
    if (running) return;
    running = true;
    while (waiting) {
      const { id, call, resolve } = waiting;
      waiting = null;
      const mine = new AbortController();
      ctl = mine;
      let out;
      try {
        const data = await call(mine.signal);
        out = id <= dropped ? null : isCurrent(id) ? { id, data } : stale ? { id, data, stale: true } : null;
      } catch (error) {
        out = error.name === "AbortError" || !isCurrent(id) ? null : { id, error };
      }
      if (ctl === mine) ctl = null;
      resolve(out); // the caller runs after this loop has sent the next request
    }
    running = false;
  }
  function run(call) {
    const id = ++seq;
    waiting?.resolve(null); // replaced before it was sent
    const answer = new Promise((resolve) => {
      waiting = { id, call, resolve };
    });
    pump();
    return answer;
  }
  return { run, cancel, isCurrent };
}

// The model list rarely changes while a page is open. The page template embeds it (data-models on
// <body>) so the first paint needs no round trip; otherwise fetch it once, and again after a failure.
let modelsPromise = null;
export function getModels() {
  const embedded = document.body?.dataset.models;
  if (!modelsPromise && embedded) {
    try {
      modelsPromise = Promise.resolve(JSON.parse(embedded));
    } catch {
      modelsPromise = null;
    }
  }
  if (!modelsPromise) {
    modelsPromise = request("/api/models").catch((e) => {
      modelsPromise = null;
      throw e;
    });
  }
  return modelsPromise;
}

// POST /api/trace: what a keystroke's first paint needs: tokens, every head's thumbnail (compact),
// residual norms, predictions.
export const trace = (body, opts) => post("/api/trace", body, opts);

// POST /api/head: one head's full-resolution attention and its role scores.
export const head = (body, opts) => post("/api/head", body, opts);

// POST /api/lens: the logit lens (fetched when its panel is on screen: it costs several forwards).
export const lens = (body, opts) => post("/api/lens", body, opts);

// Head atlas. GET /api/heads: every head's role scores, thresholds and labels (computed once per model).
export const heads = (model, opts) => request(`/api/heads${model ? `?model=${encodeURIComponent(model)}` : ""}`, opts);

// GET /api/heads/probe: every head's attention on one of the atlas's probes ("prose", "repeat", "pronoun").
export const headsProbe = (probe, model, opts) =>
  request(`/api/heads/probe?${new URLSearchParams(model ? { probe, model } : { probe })}`, opts);

// POST /api/heads/ablation: knock out heads (or a role group); next-token and repeated-sequence effects.
export const headAblation = (body, opts) => post("/api/heads/ablation", body, opts);

// POST /api/heads/prompt: the role scores that make sense on any text, measured on this prompt.
export const headRolesOnPrompt = (body, opts) => post("/api/heads/prompt", body, opts);

// Cost lab. POST /api/cost: the n^2 arithmetic at n for the live model and the reference configs.
export const cost = (body, opts) => post("/api/cost", body, opts);

// POST /api/cost/timing: the live model's attention and block timed on the server (a few seconds).
export const costTiming = (body, opts) => post("/api/cost/timing", body, opts);

// POST /api/cost/memory: peak memory of explicit and fused attention at growing n, measured.
export const costMemory = (body, opts) => post("/api/cost/memory", body, opts);

// POST /api/anatomy: the block diagram's numbers, the whole-model shapes and the parameter census.
export const anatomy = (body, opts) => post("/api/anatomy", body, opts);

// Position lab. POST /api/permutation: a head's attention on the prompt and on a permutation put back in
// order, with position off/on and the causal mask off/on, and the largest differences.
export const permutation = (body, opts) => post("/api/permutation", body, opts);

// POST /api/word-order: two sentences of the same tokens ("The dog bites the man." / "The man bites the
// dog."): one token's final representation and the next-token predictions, with position off/on.
export const wordOrder = (body, opts) => post("/api/word-order", body, opts);

// POST /api/rope: the RoPE clock's hands over the positions and the score-vs-offset curves (or, for a
// GPT-2-style model, its learned position vectors).
export const rope = (body, opts) => post("/api/rope", body, opts);

// POST /api/score: how one head's score for one query is made (q, k, q·k, √d, mask, softmax, values, output).
export const score = (body, opts) => post("/api/score", body, opts);

// POST /api/rope/stretch: loss by position past the training length, with and without interpolation.
export const ropeStretch = (body, opts) => post("/api/rope/stretch", body, opts);

// POST /api/position/probe: where the residual stream keeps each token's position, mask on and off.
export const positionProbe = (body, opts) => post("/api/position/probe", body, opts);
