"""`python -m bench.attention [threads] [n] [reps]`: explicit attention against a plain SDPA forward on
the classroom model at one length, timed interleaved in wall time and in the process's CPU time.

The `(blocks)` variants force the blocks of query rows at any length (`WHOLE_UP_TO` = 0), so the choice
of path below `model.transformer.WHOLE_UP_TO` tokens is measured against its alternative in the same run.

CPU time is the figure to read on a shared machine: a process that waits for a core does not count it,
so another job's burst does not land in one variant's repetitions. With one thread it is the work done.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from model import LanguageModel, Run, transformer
from model.trace import capture_names, run_trace

from .capture import with_context
from .models import bench_models
from .plain import plain_forward


def in_blocks(fn):
    """`fn` with explicit causal attention computed in blocks of query rows whatever the length."""

    def run():
        whole_up_to, transformer.WHOLE_UP_TO = transformer.WHOLE_UP_TO, 0
        try:
            return fn()
        finally:
            transformer.WHOLE_UP_TO = whole_up_to

    return run


def variants(net, n: int) -> dict:
    idx = torch.randint(0, net.cfg.vocab_size, (1, n), generator=torch.Generator().manual_seed(n))
    ids = idx[0].tolist()
    lm = LanguageModel(net, tokenizer=None, name=net.cfg.name)
    hooks = capture_names(net.cfg.n_layer)
    patterns = [x for x in hooks if x.endswith("hook_pattern")]
    fns = {
        "sdpa": lambda: plain_forward(net, idx),
        "forward": lambda: torch.inference_mode()(net)(idx),
        "patterns": lambda: lm.run_with_cache(idx, patterns),
        "hooks": lambda: lm.run_with_cache(idx, hooks),
        "trace": lambda: run_trace(net, ids, [str(i) for i in ids], Run(), lens_k=5),
    }
    if n <= transformer.WHOLE_UP_TO:  # above it both would take the blocks
        fns |= {f"{k} (blocks)": in_blocks(fns[k]) for k in ("forward", "hooks")}
    return fns


def measure(threads: int = 1, n: int = 1024, reps: int = 7) -> dict:
    torch.set_num_threads(threads)
    label, net = bench_models()[0]
    fns = variants(with_context(net, n), n)
    for fn in fns.values():
        fn()
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(reps):  # rotate the order each round, as bench.timing.interleaved does
        for k in names[r % len(names) :] + names[: r % len(names)]:
            t0, c0 = time.perf_counter(), time.process_time()
            fns[k]()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    med = {
        kind: {k: statistics.median(v) for k, v in d.items()} for kind, d in (("wall", wall), ("cpu", cpu))
    }
    return {"model": label, "threads": threads, "n": n, "reps": reps, "median_s": med}


def main(argv: list[str]) -> None:
    r = measure(*(int(a) for a in argv[:3]))
    print(f"{r['model']}, n={r['n']}, {r['threads']} thread(s), {r['reps']} reps")
    for kind, med in r["median_s"].items():
        base = med["sdpa"]
        ratios = " ".join(f"{k} {v / base:.2f}x" for k, v in med.items() if k != "sdpa")
        print(f"  {kind:4} plain SDPA {base * 1e3:.0f} ms | {ratios}")


if __name__ == "__main__":
    main(sys.argv[1:])
