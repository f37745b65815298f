"""What attention holds in memory: the explicit path (every head's n x n scores and probabilities
materialised) against PyTorch's fused `scaled_dot_product_attention`, measured, at growing n.

Measured in a fresh child process, so nothing else the server does is counted and the server's own
allocator state cannot hide a peak: one layer's attention module with the model's shapes (weights do
not change memory, so they are random) runs once to warm up, then again while the kernel counts the
process's peak resident memory (Linux VmHWM, reset through /proc/self/clear_refs; on CUDA the
allocator's `max_memory_allocated`). The figure is that peak minus the memory resident just before:
what this call added, inputs excluded. glibc is told to give every block of 64 KiB or more straight
back to the kernel when freed (MALLOC_MMAP_THRESHOLD_), so one size's memory is not reused unseen by
the next.

`python -m labs.memory [--model NAME] [--max-n 2048]` prints the table.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from model.config import ModelConfig

from .cost import fit_exponent, ladder, timing_bytes

ROOT = Path(__file__).resolve().parent.parent
IMPLS = ("explicit", "sdpa")
CHILD_TIMEOUT_S = 120.0


class MeasurementFailed(RuntimeError):
    """The child process failed or ran out of time."""


@dataclass(frozen=True)
class Memory:
    ns: list[int]
    peak: dict[str, list[int]]  # impl -> bytes added at the peak, per n
    predicted: list[int]  # the explicit path's scores + probabilities, 8 bytes x heads x n^2
    method: str  # what was measured, in words
    device: str
    threads: int
    seconds: float

    def fit(self, impl: str) -> dict:
        return fit_exponent(self.ns, [max(b, 1) for b in self.peak[impl]])


def unsupported(device: str) -> str | None:
    """Why peaks cannot be measured here, or None: on CPU it needs Linux's resettable peak RSS."""
    if device == "cpu" and not os.access("/proc/self/clear_refs", os.W_OK):
        return "measuring peak memory on CPU needs Linux (/proc/self/clear_refs), which this server lacks"
    return None


def method(device: str) -> str:
    if device == "cuda":
        return (
            "CUDA allocator peak (torch.cuda.max_memory_allocated) above the memory allocated before the call"
        )
    return (
        "peak resident memory of a fresh process (Linux VmHWM) above its resident memory before the call, "
        "large blocks returned to the kernel when freed"
    )


def peak_memory(cfg: ModelConfig, cap: int, device: str = "cpu", threads: int | None = None) -> Memory:
    """Peak bytes one layer's attention adds at n = 16, 32, ... cap, explicit and fused, measured in a
    child process (see the module's docstring)."""
    ns = [n for n in ladder(cap) if n >= 64]  # below, a page of memory is a large share of the peak
    if len(ns) < 2:
        raise ValueError(f"measure up to at least n = 128 (asked {cap}): an exponent needs two sizes")
    threads = threads or torch.get_num_threads()
    job = {"config": cfg.to_dict(), "ns": ns, "device": device, "threads": threads}
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "PYTHONPATH": path}
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "labs.memory", "--child"], input=json.dumps(job), capture_output=True,
            text=True, cwd=ROOT, env=env, timeout=CHILD_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise MeasurementFailed(f"the memory measurement took more than {CHILD_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise MeasurementFailed(f"the memory measurement failed ({last})")
    peak = json.loads(done.stdout.strip().splitlines()[-1])
    return Memory(ns, peak, [timing_bytes(cfg, n) for n in ns],
                  method(device), device, threads, time.perf_counter() - start)  # fmt: skip


# ---------------------------------------------------------------- the child


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def _measure(call, device: str) -> int:
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        call()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _status("VmRSS:")
    call()
    return _status("VmHWM:") - before


def child(job: dict) -> dict[str, list[int]]:
    from model.hooks import Run, name_hook_points
    from model.transformer import Attention

    torch.set_num_threads(job["threads"])
    cfg = ModelConfig.from_dict(job["config"])
    attn = Attention(cfg, 0).to(job["device"]).eval()
    name_hook_points(attn)
    # Explicit attention as the textbook writes it: the scores S = QK^T/sqrt(d) exist whole, then
    # P = softmax(S) beside them. Keeping the scores is what makes our explicit path do that; with
    # nothing kept it works 64 query rows at a time and never holds the n x n matrix (the app captures
    # the pattern whenever it shows one).
    materialise = {"explicit": {attn.hook_attn_scores.name}, "sdpa": None}
    out: dict[str, list[int]] = {impl: [] for impl in IMPLS}
    with torch.inference_mode():
        for n in job["ns"]:
            x = torch.randn(1, n, cfg.d_model, device=job["device"])
            for impl in IMPLS:

                def call(impl=impl, x=x):
                    attn(x, Run(impl=impl, capture=materialise[impl]))

                call()  # warm-up: one-time allocations (thread pools, kernels) are not attention's
                out[impl].append(_measure(call, job["device"]))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m labs.memory [--model NAME] [--max-n N]`: peak memory of one layer's attention,
    explicit and fused, at growing n on this machine."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m labs.memory", description=main.__doc__)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", default="classroom")
    p.add_argument("--max-n", type=int, default=2048)
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(sys.stdin.read()))))
        return
    from model.loading import load

    cfg = load(args.model).config
    m = peak_memory(cfg, args.max_n, args.device)
    mib = 2**20
    print(
        f"{cfg.name}: one layer's attention, {cfg.n_head} heads, {m.device}, {m.threads} threads, {m.seconds:.1f} s"
    )
    print(f"measured: {m.method}")
    print(f"{'n':>6} {'explicit MiB':>13} {'fused MiB':>10} {'n² scores+probs MiB':>20}")
    for i, n in enumerate(m.ns):
        print(
            f"{n:>6} {m.peak['explicit'][i] / mib:>13.2f} {m.peak['sdpa'][i] / mib:>10.2f} {m.predicted[i] / mib:>20.2f}"
        )
    for impl in IMPLS:
        f = m.fit(impl)
        print(
            f"{impl}: doubling n multiplies the peak by {f['doubling_factor']:.2f} (exponent {f['exponent']:.2f})"
        )


if __name__ == "__main__":
    main()
