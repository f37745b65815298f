"""The real shapes people bring, with random weights built from their configs (no download): GPT-2
small, Qwen2.5-0.5B and Llama-3.2-1B at n = 128, 512 and 1024.

Per shape: (a) capture (every head's pattern stored) and full trace against a plain SDPA forward on the
same weights, interleaved in one run; (b) load time and peak RSS of `load()` in a fresh process, in
float32 and bfloat16, from a folder saved in our format; (c) `POST /api/trace` p50/p99 and bytes
against a real server on that folder, and `POST /api/head` for one head once the trace is cached
(where the server has it); (d) a typed character to the painted head grid in Chromium, at n = 128.

A 1B-parameter forward takes seconds on two cores, so every measurement has a time budget: a first
call is timed, repetitions are fitted into what is left, and what does not fit is skipped with the
reason printed in the table, never silently. `--tiny` runs the same code on a tiny shape, without the browser (the test).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

import httpx
import torch

from model import LanguageModel, ModelConfig, Run, Transformer, save
from model.tokenizer import Tokenizer
from model.trace import capture_names, run_trace

from .fixture import Prompts, standin
from .plain import check_plain_forward, plain_forward
from .server import ROOT, serve
from .timing import interleaved, median, percentile

LLAMA3_ROPE = dict(
    factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192
)
SHAPES = {
    "GPT-2 small": dict(arch="gpt2", vocab_size=50257, n_layer=12, n_head=12, n_kv_head=12, d_model=768,
                        d_ff=3072, context_length=1024),
    "Qwen2.5-0.5B": dict(arch="llama", vocab_size=151936, n_layer=24, n_head=14, n_kv_head=2, d_model=896,
                         d_ff=4864, context_length=32768, rope_base=1e6, norm_eps=1e-6, qkv_bias=True),
    "Llama-3.2-1B": dict(arch="llama", vocab_size=128256, n_layer=16, n_head=32, n_kv_head=8, d_model=2048,
                         d_ff=8192, head_dim=64, context_length=131072, rope_base=500000.0,
                         rope_llama3=LLAMA3_ROPE),
}  # fmt: skip
TINY = {
    "tiny GQA": dict(arch="llama", vocab_size=4096, n_layer=2, n_head=4, n_kv_head=2, d_model=32, d_ff=64,
                     context_length=128, qkv_bias=True),
}  # fmt: skip
NS, TINY_NS = (128, 512, 1024), (16, 40)
BROWSER_N = 128


@dataclass
class Budget:
    """Seconds each kind of measurement may take per shape and n; what does not fit is skipped."""

    ratios: float
    api: float
    browser: float
    reps: int


QUICK, FULL, TINY_BUDGET = Budget(14, 10, 20, 3), Budget(60, 40, 60, 9), Budget(5, 5, 0, 2)


def random_shape(name: str, shape: dict) -> Transformer:
    torch.manual_seed(0)
    net = Transformer(ModelConfig(name=name, **shape))
    with torch.no_grad():  # GPT-2's init, without a generator: 1B normal draws take seconds either way
        for name, p in net.named_parameters():
            p.normal_(0, 0.02) if p.dim() > 1 else p.fill_(1.0 if name.endswith("weight") else 0.0)
    return net.eval()


def params(net: Transformer) -> int:
    return sum(p.numel() for p in net.parameters())


def first_call(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def ratios(net: Transformer, n: int, budget: Budget, expected_s: float | None = None) -> dict:
    """Plain SDPA forward, every pattern captured, and the full trace, timed interleaved."""
    idx = torch.randint(0, net.cfg.vocab_size, (1, n), generator=torch.Generator().manual_seed(n))
    ids = idx[0].tolist()
    lm = LanguageModel(net, tokenizer=None, name=net.cfg.name)
    names = [x for x in capture_names(net.cfg.n_layer) if x.endswith("hook_pattern")]
    fns = {
        "sdpa": lambda: plain_forward(net, idx),
        "capture": lambda: lm.run_with_cache(idx, names),
        "trace": lambda: run_trace(net, ids, [str(i) for i in ids], Run(), lens_k=5),
    }
    row, skipped = {"n": n}, {}
    if expected_s == float("inf"):
        return {**row, "skip": "the shorter n was already over the budget"}
    if expected_s is not None and 2 * expected_s > budget.ratios:  # do not spend a minute to learn it
        return {**row, "skip": f"a plain forward would take ~{expected_s:.0f} s (from the shorter n): "
                f"over the {budget.ratios:.0f} s budget"}  # fmt: skip
    first = {"sdpa": first_call(fns["sdpa"])}
    if first["sdpa"] > budget.ratios / 2:  # a first call is slower than the rest (allocations)
        return {
            **row,
            "skip": f"one plain forward takes {first['sdpa']:.1f} s: over the {budget.ratios:.0f} s budget",
        }
    for name in ("capture", "trace"):
        # A trace adds the logit lens: (L - 1) extra unembeddings, which dwarf a big vocabulary's forward.
        lens = (net.cfg.n_layer - 1) * net.cfg.vocab_size * net.cfg.d_model if name == "trace" else 0
        guess = first["sdpa"] * (2 + lens / max(1, params(net)))
        if sum(first.values()) + guess > budget.ratios:
            skipped[name] = f"~{guess:.0f} s a call (estimated): over the {budget.ratios:.0f} s budget"
            fns.pop(name)
            continue
        first[name] = first_call(fns[name])
    reps = max(1, min(budget.reps, int(budget.ratios / sum(first.values())) - 1))
    times = {k: median(v) for k, v in interleaved(fns, reps, warmup=0).items()}
    return {**row, "reps": reps, "sdpa_ms": times["sdpa"] * 1e3, "skipped": skipped,
            "ratio": {k: v / times["sdpa"] for k, v in times.items() if k != "sdpa"}}  # fmt: skip


# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child forked from this multi-GB bench
# process would report the bench's size. VmHWM belongs to the new address space exec makes.
LOAD = """import sys, time, torch
from model import load
def hwm():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
before = hwm()
t0 = time.perf_counter()
lm = load(sys.argv[1], dtype=getattr(torch, sys.argv[2]))
seconds = time.perf_counter() - t0
peak = hwm()  # KiB: this process's high-water mark
print(seconds, before, peak, next(lm.net.parameters()).dtype)
"""


def load_cost(folder: Path, dtype: str) -> dict:
    """`load()` in a fresh process: seconds, and its peak resident memory (VmHWM of that child)."""
    proc = subprocess.Popen([sys.executable, "-c", LOAD, str(folder), dtype], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    out, err = proc.communicate()
    if proc.returncode != 0:
        return {"dtype": dtype, "skip": f"load failed: {(err.strip().splitlines() or ['?'])[-1][:160]}"}
    seconds, before_kib, peak_kib, got = out.split()
    return {"dtype": dtype, "got": got, "seconds": float(seconds), "import_rss_mib": int(before_kib) / 1024,
            "peak_rss_mib": int(peak_kib) / 1024}  # fmt: skip


def trace_s(r: dict) -> float | None:
    """A trace's seconds as timed in (a), or infinity when (a) found it over its budget."""
    if "ratio" in r and "trace" in r["ratio"]:
        return r["sdpa_ms"] / 1e3 * r["ratio"]["trace"]
    return float("inf") if "skip" in r or "trace" in r.get("skipped", {}) else None


def api_cost(client: httpx.Client, model: str, prompts: Prompts, n: int, budget: Budget,
             expected_s: float | None = None) -> dict:  # fmt: skip
    """`POST /api/trace` for distinct prompts of n tokens, then one head of the last (cached) trace."""
    if expected_s is not None and expected_s > budget.api:
        return {
            "n": n,
            "skip": f"the trace behind one answer is over the {budget.api:.0f} s budget (see ratios)",
        }
    body = lambda: {"prompt": prompts.take(n), "model": model}  # noqa: E731
    t0 = time.perf_counter()
    r = client.post("/api/trace", json=body())  # warm-up, and the time of one answer
    one = time.perf_counter() - t0
    if r.status_code != 200:  # e.g. a prompt longer than the server accepts: say so in the table
        return {"n": n, "skip": f"HTTP {r.status_code}: {r.text[:160]}"}
    reps = min(budget.reps * 3, int(budget.api / one))
    if reps < 1:
        return {"n": n, "skip": f"one answer takes {one:.1f} s: over the {budget.api:.0f} s budget"}
    lat, body_bytes, wire = [], [], []
    for _ in range(reps):
        req = body()
        t0 = time.perf_counter()
        r = client.post("/api/trace", json=req)
        lat.append(time.perf_counter() - t0)
        r.raise_for_status()
        body_bytes.append(len(r.content))
        wire.append(r.num_bytes_downloaded)
    row = {"n": n, "n_actual": r.json().get("n"), "reps": reps, "p50_ms": median(lat) * 1e3,
           "p99_ms": percentile(lat, 99) * 1e3, "body_bytes": median(body_bytes), "wire_bytes": median(wire)}  # fmt: skip
    return {**row, **head_cost(client, req)}


def head_cost(client: httpx.Client, trace_request: dict) -> dict:
    """One head's full matrix for a prompt whose trace is cached, where the server offers it."""
    req = {**trace_request, "layer": 0, "head": 0}
    t0 = time.perf_counter()
    r = client.post("/api/head", json=req)
    ms = (time.perf_counter() - t0) * 1e3
    if r.status_code != 200:
        return {"head": f"HTTP {r.status_code} for POST /api/head"}
    return {"head": {"ms": ms, "body_bytes": len(r.content), "wire_bytes": r.num_bytes_downloaded}}


def guarded(measure) -> dict:
    """One measurement's failure (a timeout on a slow shape) is a row that says so, not a lost part."""
    try:
        return measure()
    except Exception as e:  # noqa: BLE001 - reported in the table with its first line
        return {"skip": f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"}


def browser_cost(url: str, prompts: Prompts, budget: Budget, expected_s: float | None) -> dict:
    """The browser part's measurement (typed character to painted grid) on this server's model."""
    from playwright.sync_api import sync_playwright

    if expected_s is not None and 3 * expected_s > budget.browser:  # page load, warm-up and one sample
        return {"skip": f"each keystroke waits for a trace over a third of the {budget.browser:.0f} s budget"}

    from .browser import ARGS, CHROMIUM, one

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(url) else r.abort())
        page.goto(f"{url}/?prompt={quote(prompts.take(BROWSER_N))}")
        page.wait_for_selector("#head-grid[data-settled]", timeout=180000)
        page.locator("#prompt").focus()
        t0 = time.perf_counter()
        one(page, prompts.take(BROWSER_N))  # warm-up, and the time one sample takes
        each = time.perf_counter() - t0
        reps = min(budget.reps * 3, int(budget.browser / each))
        ms = [one(page, prompts.take(BROWSER_N))["ms"] for _ in range(max(reps, 1))]
        browser.close()
    return {"n": BROWSER_N, "reps": len(ms), "p50_ms": median(ms), "p95_ms": percentile(ms, 95)}


def one_shape(label: str, shape: dict, ns: tuple, budget: Budget, tokenizer: Tokenizer, tmp: Path,
              browser: bool) -> dict:  # fmt: skip
    out = {
        "shape": label,
        **{k: shape[k] for k in ("n_layer", "n_head", "n_kv_head", "d_model", "vocab_size")},
    }
    t0 = time.perf_counter()
    net = random_shape(label, shape)
    out["params"], out["build_s"] = params(net), time.perf_counter() - t0
    check_plain_forward(net, torch.randint(0, net.cfg.vocab_size, (1, 33)))
    out["ratios"] = []
    for n in ns:  # each length's plain forward predicted from the previous one's (a bit worse than linear)
        last = out["ratios"][-1] if out["ratios"] else None
        expected = (
            None
            if last is None
            else float("inf")
            if "skip" in last
            else last["sdpa_ms"] / 1e3 * (n / last["n"]) ** 1.2
        )
        out["ratios"].append(ratios(net, n, budget, expected))
    folder = tmp / label.replace(" ", "-").replace(".", "_")
    save(net, tokenizer, folder)
    del net
    gc.collect()
    out["load"] = [load_cost(folder, dtype) for dtype in ("float32", "bfloat16")]
    words = Prompts(SimpleNamespace(encode=tokenizer.encode))  # only the tokenizer is needed here
    with serve(str(folder), workers=1, timeout_s=600) as server:
        with httpx.Client(base_url=server["url"], timeout=600) as client:
            out["api"] = [
                api_cost(client, folder.name, words, n, budget, trace_s(r))
                for n, r in zip(ns, out["ratios"], strict=True)
            ]
        expected = trace_s(out["ratios"][0])
        out["browser"] = (
            guarded(lambda: browser_cost(server["url"], words, budget, expected))
            if browser
            else {"skip": "not in --tiny"}
        )
    return out


def run(quick: bool = True, tiny: bool = False, shapes: dict | None = None) -> dict:
    shapes = shapes or (TINY if tiny else SHAPES)
    budget = TINY_BUDGET if tiny else QUICK if quick else FULL
    tokenizer = Tokenizer.from_file(Path(standin()) / "tokenizer.json")
    with tempfile.TemporaryDirectory(prefix="atlas-shapes-") as tmp:
        rows = [one_shape(label, shape, TINY_NS if tiny else NS, budget, tokenizer, Path(tmp), not tiny)
                for label, shape in shapes.items()]  # fmt: skip
    return {"rows": rows, "threads": torch.get_num_threads(), "tokenizer": "BPE of generated stories"}


def cell(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def table(result: dict) -> list[str]:
    lines = ["Real shapes, random weights (markdown). Ratios: to a plain SDPA forward in the same run;",
             "capture = every head's pattern stored; trace = the app's run_trace (capture, norms, logit lens).", "",
             "| shape | params | n | plain SDPA | capture | trace | /api/trace p50 / p99 | body / wire | /api/head |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for s in result["rows"]:
        name = f"{s['shape']} ({s['n_layer']}x{s['n_head']}, {s['n_kv_head']} KV, d {s['d_model']})"
        for i, (r, a) in enumerate(zip(s["ratios"], s["api"], strict=True)):
            q = r.get("ratio", {})
            sk = r.get("skipped", {})
            comp = [f"skipped: {r['skip']}"] * 3 if "skip" in r else [
                f"{r['sdpa_ms']:.0f} ms ({r['reps']} reps)",
                f"{q['capture']:.2f}x" if "capture" in q else f"skipped: {sk.get('capture')}",
                f"{q['trace']:.2f}x" if "trace" in q else f"skipped: {sk.get('trace')}"]  # fmt: skip
            if "skip" in a:
                api = [f"skipped: {a['skip']}", "", ""]
            else:
                h = a["head"]
                head = h if isinstance(h, str) else f"{h['ms']:.0f} ms, {h['wire_bytes'] / 1024:.0f} KiB"
                api = [f"{a['p50_ms']:.0f} / {a['p99_ms']:.0f} ms ({a['reps']})",
                       f"{a['body_bytes'] / 1024:.0f} / {a['wire_bytes'] / 1024:.0f} KiB", head]  # fmt: skip
            lead = [name, f"{s['params'] / 1e6:.0f} M"] if i == 0 else ["", ""]
            lines.append("| " + " | ".join([*lead, str(r["n"]), *comp, *api]) + " |")
    lines += ["", "| shape | load float32 | peak RSS | load bfloat16 | peak RSS | typed char -> grid p50 / p95 |",
              "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for s in result["rows"]:
        cells = []
        for c in s["load"]:
            cells += [f"skipped: {c['skip']}", ""] if "skip" in c else [
                f"{c['seconds']:.1f} s", f"{cell(c['peak_rss_mib'], '.0f')} MiB"]  # fmt: skip
        b = s["browser"]
        cells.append(f"skipped: {b['skip']}" if "skip" in b else
                     f"{b['p50_ms']:.0f} / {b['p95_ms']:.0f} ms (n={b['n']}, {b['reps']})")  # fmt: skip
        lines.append("| " + " | ".join([s["shape"], *cells]) + " |")
    lines.append(f"(torch threads {result['threads']}; prompts through a {result['tokenizer']} tokenizer; "
                 "peak RSS includes torch's import)")  # fmt: skip
    return lines


def verdicts(result: dict) -> list[str]:
    out = []
    for s in result["rows"]:
        for r in s["ratios"]:
            if "capture" in r.get("ratio", {}):
                out.append(f"{s['shape']} n={r['n']}: capture {r['ratio']['capture']:.2f}x a plain forward")
    return out


if __name__ == "__main__":
    print(json.dumps(run(tiny="--tiny" in sys.argv), indent=1))
