// Decode the compact attention payloads: every head's thumbnail from /api/trace (Thumbnails), the
// atlas's probes and the lesson file's full patterns (Attention), into per-head matrices.
//
// Payload: {format: "u8-tril" | "u8-full", n_layer, n_head, n, data: base64}. Heads are stored
// layer-major (L0H0, L0H1, ..., L1H0, ...); inside a head, query rows 0..n-1 in order. With "u8-tril"
// (causal models) row i holds keys 0..i, so i+1 bytes; with "u8-full" every row holds n bytes.
// Each byte is round(p * 255), so decoded values are within 0.002 of the model's (invisible on a
// 0..1 colour scale; the head detail fetches exact floats from /api/head).
//
// Matrices are decoded lazily per head and cached: decoding every head up front would cost
// n_layer * n_head * n^2 * 4 bytes (600 MB for 144 heads at n = 1024).

export function decodeBase64(b64) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(b64);
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

export class Attention {
  constructor({ format, n_layer: nLayer, n_head: nHead, n, data }) {
    if (format !== "u8-tril" && format !== "u8-full") throw new Error(`unknown attention format ${format}`);
    this.format = format;
    this.causal = format === "u8-tril";
    this.nLayer = nLayer;
    this.nHead = nHead;
    this.n = n; // tokens
    this.side = n; // rows and columns of each head's picture (fewer in a thumbnail)
    this.raw = decodeBase64(data);
    this.perHead = this.causal ? (n * (n + 1)) / 2 : n * n;
    const expected = nLayer * nHead * this.perHead;
    if (this.raw.length !== expected) {
      throw new Error(`attention payload has ${this.raw.length} bytes, expected ${expected}`);
    }
    this.byteCache = new Map();
    this.floatCache = new Map();
  }

  check(layer, head) {
    if (!(layer >= 0 && layer < this.nLayer && head >= 0 && head < this.nHead)) {
      throw new Error(`no head L${layer}H${head} in a ${this.nLayer} x ${this.nHead} model`);
    }
  }

  // Uint8Array(side * side), row-major, zeros above the diagonal for causal models: ready for a colour LUT.
  bytes(layer, head) {
    this.check(layer, head);
    const key = layer * this.nHead + head;
    let out = this.byteCache.get(key);
    if (out) return out;
    const n = this.side;
    const base = key * this.perHead;
    if (!this.causal) {
      out = this.raw.subarray(base, base + n * n);
    } else {
      out = new Uint8Array(n * n);
      for (let i = 0, src = base; i < n; i++) {
        out.set(this.raw.subarray(src, src + i + 1), i * n);
        src += i + 1;
      }
    }
    this.byteCache.set(key, out);
    return out;
  }

  // Float32Array(n * n) of probabilities in 0..1, row i = query i, column j = key j.
  matrix(layer, head) {
    const key = layer * this.nHead + head;
    let out = this.floatCache.get(key);
    if (out) return out;
    const b = this.bytes(layer, head);
    out = new Float32Array(b.length);
    for (let i = 0; i < b.length; i++) out[i] = b[i] / 255;
    this.floatCache.set(key, out);
    return out;
  }
}

export const decodeAttention = (payload) => new Attention(payload);

// Every head's thumbnail from /api/trace: {format, n_layer, n_head, n (tokens), size, block, data}.
// Pixel (a, b) is the LARGEST weight from queries a*block..(a+1)*block-1 to keys b*block..: a one-token
// stripe stays as bright as it is. At block 1 the pictures are the exact 8-bit patterns.
export class Thumbnails extends Attention {
  constructor(payload) {
    super({ ...payload, n: payload.size });
    this.n = payload.n;
    this.block = payload.block;
    this.exact = payload.block === 1;
  }

  // Float32Array(n * n): each token pair gets its block's pixel (the heatmap's preview until /api/head
  // answers); the causal future stays 0.
  matrix(layer, head) {
    const key = layer * this.nHead + head;
    let out = this.floatCache.get(key);
    if (out) return out;
    const { n, side, block, causal } = this;
    const b = this.bytes(layer, head);
    out = new Float32Array(n * n);
    for (let i = 0; i < n; i++) {
      const row = Math.floor(i / block) * side;
      const end = causal ? i + 1 : n;
      for (let j = 0; j < end; j++) out[i * n + j] = b[row + Math.floor(j / block)] / 255;
    }
    this.floatCache.set(key, out);
    return out;
  }
}

export const decodeThumbnails = (payload) => new Thumbnails(payload);

// /api/head's exact pattern with `encoding: "u16"`: {format: "u16-tril" | "u16-full", n, data}, each value
// round(p * 65535) little-endian (within 8e-6), rows in order, keys 0..i of row i when "u16-tril".
// Returns the n x n Float32Array row-major, zeros in the causal future.
export function decodeU16({ format, n, data }) {
  const bytes = decodeBase64(data);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tril = format === "u16-tril";
  if (!tril && format !== "u16-full") throw new Error(`unknown pattern format ${format}`);
  const expected = (tril ? (n * (n + 1)) / 2 : n * n) * 2;
  if (bytes.length !== expected) throw new Error(`pattern has ${bytes.length} bytes, expected ${expected}`);
  const out = new Float32Array(n * n);
  let src = 0;
  for (let i = 0; i < n; i++) {
    const end = tril ? i + 1 : n;
    for (let j = 0; j < end; j++, src += 2) out[i * n + j] = view.getUint16(src, true) / 65535;
  }
  return out;
}

// Hide the first-token "sink" column and renormalise each row over the remaining keys.
// Returns an (n x (n-1)) row-major Float32Array; a row with nothing left (query 0 in a causal model
// sees only itself) is NaN, drawn blank rather than as a misleading zero.
export function withoutSink(matrix, n) {
  const out = new Float32Array(n * (n - 1));
  for (let i = 0; i < n; i++) {
    let rest = 0;
    for (let j = 1; j < n; j++) rest += matrix[i * n + j];
    for (let j = 1; j < n; j++) out[i * (n - 1) + j - 1] = rest > 1e-6 ? matrix[i * n + j] / rest : NaN;
  }
  return out;
}
