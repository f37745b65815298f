"""`python -m bench [capture|api|browser|load|classroom|shapes ...] [--full] [--threads N] [--n 16,128]
[--class-seconds S] [--tiny]`: run the
benchmarks, print one table of ratios with the machine they ran on, and write the results to
bench/results/<time>.json.

Without --full every part uses few repetitions (and 10 s load runs), which is enough to see the ratios
on a busy machine; --full is the run whose numbers go in the README (60 s load runs, more repetitions).
--threads 1 keeps a run usable while another job holds the cores: with 2 threads each op waits for a
second thread the scheduler may not run for a while.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from pathlib import Path

import torch

from . import api, browser, capture, classroom, load, shapes
from .machine import describe, describe_line

PARTS = {
    "capture": capture,
    "api": api,
    "browser": browser,
    "load": load,
    "classroom": classroom,
    "shapes": shapes,
}
RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description="Attention Atlas benchmarks.")
    p.add_argument("parts", nargs="*", metavar="PART", help=f"any of {', '.join(PARTS)} (default: all)")
    p.add_argument("--full", action="store_true", help="more repetitions and 60 s load runs (the README run)")
    p.add_argument(
        "--threads", type=int, help="torch threads here and in the servers started (default: torch's)"
    )
    p.add_argument("--n", help="capture lengths, comma-separated (default: 16,64,128,256,512,1024)")
    p.add_argument("--tiny", action="store_true", help="shapes: a tiny model instead of the real shapes (CI)")
    p.add_argument(
        "--class-seconds", type=float, help="length of each simulated lesson (default 30, --full 60)"
    )
    args = p.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be at least 1")
    try:
        args.n = tuple(int(x) for x in args.n.split(",")) if args.n else capture.NS
    except ValueError:
        p.error(f"--n takes comma-separated token counts like 16,128, not {args.n!r}")
    unknown = [x for x in args.parts if x not in PARTS]
    if unknown:
        p.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    args.parts = args.parts or list(PARTS)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        # Servers started by the parts read ATLAS_TORCH_THREADS (python -m app only sets it when unset).
        torch.set_num_threads(args.threads)
        os.environ["ATLAS_TORCH_THREADS"] = str(args.threads)
    machine = describe()
    report = {
        "machine": machine,
        "full": args.full,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "parts": {},
    }
    lines, verdicts, failed = [], [], []
    for name in args.parts:
        part = PARTS[name]
        t0 = time.monotonic()
        print(f"[bench] {name} ...", flush=True)
        try:
            options = {"capture": {"ns": args.n}, "classroom": {"seconds": args.class_seconds},
                       "shapes": {"tiny": args.tiny}}.get(name, {})  # fmt: skip
            result = part.run(quick=not args.full, **options)
        except Exception:  # one broken part must not hide the others' numbers
            failed.append(name)
            report["parts"][name] = {"error": traceback.format_exc()}
            print(traceback.format_exc(), flush=True)
            continue
        result["elapsed_s"] = time.monotonic() - t0
        report["parts"][name] = result
        lines += ["", *part.table(result)]
        verdicts += part.verdicts(result)
    report["load_average_at_end"] = describe()["load_average_at_start"]
    print()
    print(f"Machine: {describe_line(machine)}; load average at the end {report['load_average_at_end']}")
    print(
        "Times are medians on a shared machine: compare the ratios within a table, not runs with each other."
    )
    print("\n".join(lines))
    print("\nTargets:")
    print("\n".join(f"  {v}" for v in verdicts) or "  (none measured)")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nResults: {out}")
    if failed:
        print(f"FAILED parts: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
