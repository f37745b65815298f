"""`POST /api/trace` end to end against a real uvicorn: latency at n = 16, 128, 512 tokens, and the
bytes sent (every head's max-pooled thumbnail) compared with every head's attention as JSON floats (what
BertViz-style tools send); then `POST /api/head` for one head of the same prompt, which the server slices
from the trace's cached forward (the page asks for it when a head is opened).

Every request is a different passage, so the server's response cache never answers in the model's place.
"""

from __future__ import annotations

import base64
import gzip
import json
import time

import httpx

from model import load

from .fixture import STANDIN_LABEL, Prompts, served_model, standin
from .server import serve
from .timing import median, percentile

NS = (16, 128, 512)


def attention_values(att: dict) -> int:
    """How many pixels the thumbnails carry: lower triangles when causal, full rows otherwise."""
    L, H, n = att["n_layer"], att["n_head"], att["size"]
    return L * H * (n * (n + 1) // 2 if att["format"] == "u8-tril" else n * n)


def json_floats_size(lm, prompt: str) -> tuple[int, int]:
    """Bytes of every head's full float attention as a JSON list, plain and gzipped."""
    att = lm.trace(prompt).attention  # (L, H, n, n), the same numbers the server encodes
    text = json.dumps(att.tolist()).encode()
    return len(text), len(gzip.compress(text, compresslevel=5))


def measure(client: httpx.Client, prompts: Prompts, model: str, n: int, reps: int) -> dict:
    for _ in range(2):  # warm-up: first-call allocations, thread pool start
        client.post("/api/trace", json={"prompt": prompts.take(n), "model": model}).raise_for_status()
    lat, wire, body, ns, head = [], [], [], [], []
    for _ in range(reps):
        prompt = prompts.take(n)
        t0 = time.perf_counter()
        r = client.post("/api/trace", json={"prompt": prompt, "model": model})
        lat.append(time.perf_counter() - t0)
        r.raise_for_status()
        wire.append(r.num_bytes_downloaded)
        body.append(len(r.content))
        ns.append(r.json()["n"])
        t0 = time.perf_counter()
        client.post(
            "/api/head", json={"prompt": prompt, "model": model, "layer": 0, "head": 0}
        ).raise_for_status()
        head.append(time.perf_counter() - t0)
    data = r.json()["thumbnails"]
    raw = len(base64.b64decode(data["data"]))
    return {
        "n": n, "n_actual": median(ns), "reps": reps, "p50_ms": median(lat) * 1e3, "p99_ms": percentile(lat, 99) * 1e3,
        "head_p50_ms": median(head) * 1e3, "thumb_size": data["size"], "body_bytes": median(body), "wire_bytes_gzip": median(wire), "attention_format": data["format"],
        "attention_values": attention_values(data), "attention_raw_bytes": raw,
        "attention_base64_bytes": len(data["data"]), "last_prompt": prompt,
    }  # fmt: skip


def run(quick: bool = True) -> dict:
    """Each n on the bundled model when it fits its context, else on the long-context stand-in."""
    bundled, label = served_model()
    models = {bundled: load(bundled)}
    if max(NS) > models[bundled].config.context_length:
        models[standin()] = load(standin())
    rows = []
    with (
        serve(list(models), workers=1) as server,
        httpx.Client(base_url=server["url"], timeout=300) as client,
    ):
        for n in NS:
            spec = next(m for m, lm in models.items() if n <= lm.config.context_length)
            lm = models[spec]
            row = measure(client, Prompts(lm), lm.name, n, 8 if quick else 40)
            row["model"] = label if spec == bundled else STANDIN_LABEL
            row["json_floats_bytes"], row["json_floats_gzip_bytes"] = json_floats_size(
                lm, row.pop("last_prompt")
            )
            rows.append(row)
    return {"rows": rows}


def table(result: dict) -> list[str]:
    lines = ["POST /api/trace end to end, real uvicorn, 1 worker (model per row: see the legend)",
             f"{'n':>5} {'reps':>4} {'p50 ms':>8} {'p99 ms':>8} {'body KiB':>9} {'wire KiB':>9} {'thumb':>6} "
             f"{'B/pixel':>8} {'JSON floats KiB':>16} {'floats/ours':>11} {'head p50 ms':>12}  model"]  # fmt: skip
    for r in result["rows"]:
        per_value = r["attention_base64_bytes"] / r["attention_values"]
        lines.append(
            f"{r['n_actual']:>5.0f} {r['reps']:>4} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['body_bytes'] / 1024:>9.1f} "
            f"{r['wire_bytes_gzip'] / 1024:>9.1f} {r['thumb_size']:>6} {per_value:>8.2f} "
            f"{r['json_floats_bytes'] / 1024:>16.1f} {r['json_floats_bytes'] / r['body_bytes']:>10.1f}x "
            f"{r['head_p50_ms']:>12.1f}  {r['model']}"
        )
    lines.append(
        "  thumb: pixels per side of each head's max-pooled thumbnail (= n up to 48: the exact u8 pattern);"
    )
    lines.append(
        "  B/pixel: its bytes in the JSON body per pixel (uint8 in base64 = 4/3; causal: lower triangle)."
    )
    lines.append(
        "  JSON floats: every head's full n x n float matrix as JSON; floats/ours compares that with our"
    )
    lines.append(
        "  whole response body. head: POST /api/head for one head of the prompt just traced (full floats)."
    )
    return lines


def verdicts(result: dict) -> list[str]:
    out = []
    for r in result["rows"]:
        raw = r["attention_raw_bytes"] / r["attention_values"]
        out.append(
            f"payload target (n={r['n_actual']:.0f}): {raw:.2f} raw byte per thumbnail pixel (<= 1: "
            f"{'met' if raw <= 1 else 'MISSED'}), {r['attention_base64_bytes'] / r['attention_values']:.2f} "
            f"in the JSON body, {r['wire_bytes_gzip'] / r['attention_values']:.2f} on the wire (whole gzipped body)"
        )
    return out
