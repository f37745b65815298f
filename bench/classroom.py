"""A simulated class: 30 students typing into the Explorer at 5 characters a second against a real
server with 1 and then 2 workers, through the page's own request protocol.

The protocol (static/js/pages/explorer.js): one trace request in flight per page, newest text wins,
no fixed debounce. A keystroke sends the prompt at once when nothing is pending; otherwise the page
waits for the pending answer and then sends the newest text (the keystrokes typed meanwhile are
folded into it). The body is the page's: prompt, model null, temperature 1, top_k 10.

Keystroke-to-answer: for every keystroke, the time until an answer that includes it is on the page
(a later text's answer counts; that is what the student sees). Errors: anything but 200, except a
503 with Retry-After, which the queue sends when it is full: counted as "busy", and the page sends
the newest text again after Retry-After. A 409 (a newer request from the same address replaced this
one) cannot happen with one request in flight per page; it is counted as "replaced" if it does.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from .fixture import english_words, served_model
from .server import serve, tree_rss_bytes
from .timing import median, percentile

STUDENTS = 30
CHARS_PER_S = 5.0
TOP_K = 10  # the explorer's


class Student:
    def __init__(self, client: httpx.AsyncClient, text: str, out: dict) -> None:
        self.client, self.text, self.out = client, text, out
        self.typed = 0  # characters typed so far
        self.key_times: list[float] = []  # when each character was typed
        self.shown = 0  # characters covered by the newest answer on the page
        self.pending: asyncio.Task | None = None

    async def type(self, deadline: float) -> None:
        """A keystroke every 1/CHARS_PER_S s; each starts a request unless one is pending."""
        start = time.monotonic()
        while time.monotonic() < deadline and self.typed < len(self.text):
            self.typed += 1
            self.key_times.append(time.monotonic())
            if self.pending is None or self.pending.done():
                self.pending = asyncio.create_task(self.send_newest())
            await asyncio.sleep(max(0.0, start + self.typed / CHARS_PER_S - time.monotonic()))
        if self.pending is not None:
            await self.pending

    async def send_newest(self) -> None:
        """Send the newest text; when its answer arrives, send again if the student typed meanwhile."""
        while True:
            sent = self.typed
            body = {"prompt": self.text[:sent], "model": None, "temperature": 1.0, "top_k": TOP_K}
            self.out["requests"] += 1
            try:
                r = await self.client.post("/api/trace", json=body)
            except httpx.HTTPError as e:
                self.out["errors"].append(f"{type(e).__name__}: {e}")
                return
            if r.status_code == 200:
                now = time.monotonic()
                self.out["latencies"] += [now - t for t in self.key_times[self.shown : sent]]
                self.shown = sent
            elif r.status_code == 503 and "retry-after" in r.headers:
                self.out["busy"] += 1
                await asyncio.sleep(float(r.headers["retry-after"]))
                continue  # the newest text, again
            elif r.status_code == 409:
                self.out["replaced"] += 1
            else:
                self.out["errors"].append(f"HTTP {r.status_code}: {r.text[:200]}")
            if self.typed == sent:
                return


async def sample_rss(pid: int, deadline: float, out: dict) -> None:
    while time.monotonic() < deadline:
        out["rss"].append(tree_rss_bytes(pid) / 2**20)
        await asyncio.sleep(1.0)


async def lesson(url: str, pid: int, texts: list[str], seconds: float) -> dict:
    out = {"latencies": [], "errors": [], "busy": 0, "replaced": 0, "requests": 0, "rss": []}
    limits = httpx.Limits(max_connections=2 * len(texts), max_keepalive_connections=2 * len(texts))
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        students = [Student(client, t, out) for t in texts]
        deadline = time.monotonic() + seconds
        await asyncio.gather(sample_rss(pid, deadline, out), *(s.type(deadline) for s in students))
        out["keystrokes"] = sum(s.typed for s in students)
    return out


def student_texts(count: int, chars: int) -> list[str]:
    """A different passage per student, long enough to type for the whole lesson."""
    words = english_words()
    texts, i = [], 0
    for _ in range(count):
        text = ""
        while len(text) < chars:
            text += words[i % len(words)] + " "
            i += 1
        texts.append(text[:chars])
    return texts


def one_class(model: str, workers: int, seconds: float, students: int) -> dict:
    texts = student_texts(students, int(seconds * CHARS_PER_S) + 1)
    with serve(model, workers=workers) as server:
        httpx.post(server["url"] + "/api/trace", json={"prompt": "warm up"}, timeout=120).raise_for_status()
        rss_start = tree_rss_bytes(server["pid"]) / 2**20
        res = asyncio.run(lesson(server["url"], server["pid"], texts, seconds))
        rss_end = tree_rss_bytes(server["pid"]) / 2**20
    lat = res["latencies"]
    return {
        "workers": workers, "students": students, "seconds": seconds, "keystrokes": res["keystrokes"],
        "requests": res["requests"], "answered_keystrokes": len(lat),
        "p50_ms": median(lat) * 1e3 if lat else None, "p95_ms": percentile(lat, 95) * 1e3 if lat else None,
        "errors": len(res["errors"]), "error_examples": res["errors"][:5], "busy_503": res["busy"],
        "replaced_409": res["replaced"], "rss_start_mib": rss_start,
        "rss_peak_mib": max(res["rss"] + [rss_end]), "rss_end_mib": rss_end,
    }  # fmt: skip


def run(quick: bool = True, seconds: float | None = None, students: int = STUDENTS, workers=(1, 2)) -> dict:
    model, label = served_model()
    seconds = seconds or (30.0 if quick else 60.0)
    return {"model": label, "rows": [one_class(model, w, seconds, students) for w in workers]}


def table(result: dict) -> list[str]:
    lines = [f"Class: students typing {CHARS_PER_S:.0f} characters/s into the Explorer (one request in flight "
             f"per page, newest text wins), {result['model']}",
             f"{'workers':>7} {'students':>8} {'s':>4} {'keys':>6} {'requests':>8} {'p50 ms':>7} {'p95 ms':>7} "
             f"{'errors':>6} {'busy':>5} {'RSS start':>9} {'peak':>6} {'end MiB':>7}"]  # fmt: skip
    for r in result["rows"]:
        lines.append(
            f"{r['workers']:>7} {r['students']:>8} {r['seconds']:>4.0f} {r['keystrokes']:>6} {r['requests']:>8} "
            f"{r['p50_ms'] or float('nan'):>7.0f} {r['p95_ms'] or float('nan'):>7.0f} {r['errors']:>6} "
            f"{r['busy_503']:>5} {r['rss_start_mib']:>9.0f} {r['rss_peak_mib']:>6.0f} {r['rss_end_mib']:>7.0f}"
        )
    lines.append(
        "busy: 503 + Retry-After from a full model queue (the page sends its newest text again after it)"
    )
    return lines


def verdicts(result: dict) -> list[str]:
    return [
        f"class target ({r['workers']} worker(s), {r['students']} students): {r['errors']} errors "
        f"({'met' if r['errors'] == 0 else 'MISSED'}), {r['busy_503']} busy, {r['replaced_409']} replaced; "
        f"keystroke to answer p50 {r['p50_ms'] or 0:.0f} ms, p95 {r['p95_ms'] or 0:.0f} ms"
        for r in result["rows"]
    ]
