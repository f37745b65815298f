"""A class on one server: 50 concurrent clients posting `/api/trace` for 60 s against a real uvicorn,
with 1 and then 2 worker processes. Throughput, latency, errors, and the server's resident memory
(all its processes) after warm-up, at the peak and at the end. A 503 with Retry-After (the model queue
was full) is counted as "busy", not as an error, and waited out as a polite client would.

Each client sends a different passage of about 50 tokens each time (a student's sentence), so the
response cache never answers: this is the uncached worst case. Loops stop by themselves at the deadline.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from .fixture import english_words, served_model
from .server import serve, tree_rss_bytes
from .timing import median, percentile

CLIENTS = 50
WORDS_PER_PROMPT = 40  # about 50 tokens of English with the classroom tokenizer


def passages(words: list[str], count: int) -> list[str]:
    step = max(1, (len(words) - WORDS_PER_PROMPT) // count)
    return [" ".join(words[i : i + WORDS_PER_PROMPT]) for i in range(0, step * count, step)]


async def client_loop(client: httpx.AsyncClient, prompts: list[str], start: int, step: int, deadline: float,
                      out: dict) -> None:  # fmt: skip
    i = start
    while time.monotonic() < deadline:
        prompt = prompts[i % len(prompts)]
        i += step
        t0 = time.perf_counter()
        try:
            r = await client.post("/api/trace", json={"prompt": prompt})
            ok = r.status_code == 200
            if r.status_code == 503 and "retry-after" in r.headers:  # the queue was full: a polite refusal
                out["busy"] += 1
                await asyncio.sleep(float(r.headers["retry-after"]))
            elif not ok:
                out["errors"].append(f"HTTP {r.status_code}: {r.text[:200]}")
        except httpx.HTTPError as e:
            ok = False
            out["errors"].append(f"{type(e).__name__}: {e}")
        if ok:
            out["latencies"].append(time.perf_counter() - t0)


async def sample_rss(pid: int, deadline: float, out: dict) -> None:
    """Every second: a leak climbs steadily, while allocator pools and the bounded cache level off."""
    t0 = time.monotonic()
    while time.monotonic() < deadline:
        out["rss_timeline"].append((round(time.monotonic() - t0, 1), tree_rss_bytes(pid) / 2**20))
        await asyncio.sleep(1.0)


async def hammer(url: str, pid: int, prompts: list[str], clients: int, seconds: float) -> dict:
    out = {"latencies": [], "errors": [], "busy": 0, "rss_timeline": []}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        t0 = time.monotonic()
        deadline = t0 + seconds
        await asyncio.gather(
            sample_rss(pid, deadline, out),
            *(client_loop(client, prompts, c, clients, deadline, out) for c in range(clients)),
        )
        out["wall_s"] = time.monotonic() - t0
    return out


def warm_up(url: str, prompts: list[str], workers: int) -> None:
    with httpx.Client(base_url=url, timeout=120) as client:
        for p in prompts[: 4 * workers]:
            client.post("/api/trace", json={"prompt": p}).raise_for_status()


def one_setting(model: str, workers: int, seconds: float, clients: int, prompts: list[str]) -> dict:
    with serve(model, workers=workers) as server:
        warm_up(server["url"], prompts[-8 * workers :], workers)
        rss_start = tree_rss_bytes(server["pid"])
        res = asyncio.run(hammer(server["url"], server["pid"], prompts, clients, seconds))
        rss_end = tree_rss_bytes(server["pid"])
    lat = res["latencies"]
    return {
        "workers": workers, "clients": clients, "seconds": seconds, "wall_s": res["wall_s"],
        "requests": len(lat), "throughput_rps": len(lat) / res["wall_s"], "errors": len(res["errors"]),
        "busy_503": res["busy"], "error_examples": res["errors"][:5], "p50_ms": median(lat) * 1e3 if lat else None,
        "p99_ms": percentile(lat, 99) * 1e3 if lat else None, "rss_start_mib": rss_start / 2**20,
        "rss_peak_mib": max([m for _, m in res["rss_timeline"]] + [rss_end / 2**20]), "rss_end_mib": rss_end / 2**20,
        "rss_mid_mib": mid_run_rss(res["rss_timeline"]), "rss_timeline_mib": res["rss_timeline"],
    }  # fmt: skip


def mid_run_rss(timeline: list[tuple[float, float]]) -> float | None:
    """Memory halfway through the run: compared with the end, it tells levelling off from a leak."""
    if not timeline:
        return None
    half = timeline[-1][0] / 2
    return min(timeline, key=lambda s: abs(s[0] - half))[1]


def run(quick: bool = True, seconds: float | None = None, clients: int = CLIENTS, workers=(1, 2)) -> dict:
    model, label = served_model()
    seconds = seconds or (10.0 if quick else 60.0)
    prompts = passages(english_words(), 6000)
    rows = [one_setting(model, w, seconds, clients, prompts) for w in workers]
    return {"model": label, "rows": rows, "prompt_words": WORDS_PER_PROMPT}


def table(result: dict) -> list[str]:
    lines = [f"Load: concurrent clients posting /api/trace (~{result['prompt_words']} words each, all different), "
             f"{result['model']}",
             f"{'workers':>7} {'clients':>7} {'s':>4} {'requests':>8} {'req/s':>6} {'p50 ms':>8} {'p99 ms':>8} "
             f"{'errors':>6} {'busy':>5} {'RSS start':>9} {'mid':>6} {'end MiB':>7}"]  # fmt: skip
    for r in result["rows"]:
        lines.append(
            f"{r['workers']:>7} {r['clients']:>7} {r['seconds']:>4.0f} {r['requests']:>8} {r['throughput_rps']:>6.1f} "
            f"{r['p50_ms'] or float('nan'):>8.0f} {r['p99_ms'] or float('nan'):>8.0f} {r['errors']:>6} {r.get('busy_503', 0):>5} "
            f"{r['rss_start_mib']:>9.0f} {r['rss_mid_mib'] or float('nan'):>6.0f} {r['rss_end_mib']:>7.0f}"
        )
    return lines


def verdicts(result: dict) -> list[str]:
    out = []
    for r in result["rows"]:
        second_half = r["rss_end_mib"] - (r["rss_mid_mib"] or r["rss_start_mib"])
        out.append(
            f"load target ({r['workers']} worker(s)): {r['errors']} errors ({'met' if r['errors'] == 0 else 'MISSED'}), "
            f"{r.get('busy_503', 0)} busy (503 + Retry-After, waited out); "
            f"memory {r['rss_start_mib']:.0f} -> {r['rss_mid_mib'] or 0:.0f} (half-way) -> {r['rss_end_mib']:.0f} MiB, "
            f"{second_half:+.0f} MiB in the second half"
        )
    return out
