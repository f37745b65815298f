"""`python -m app`: serve Attention Atlas with uvicorn.

    python -m app [--model NAME_OR_PATH]... [--host 127.0.0.1] [--port 8000] [--device cpu|cuda] [--workers N]

Flags reach the app through ATLAS_* environment variables (see app/settings.py), because with
--workers > 1 uvicorn starts fresh processes that build the app from an import string.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
from pathlib import Path

from model.loading import BUNDLED, bundled_path

BANNER_WIDTH = 78


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m app", description="Serve Attention Atlas in the browser.")
    p.add_argument("--model", action="append", dest="models", metavar="NAME_OR_PATH",
                   help="a bundled model name or a model folder; repeat to offer several (first = default; "
                        "default: classroom)")  # fmt: skip
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="where the models run (default cpu)"
    )
    p.add_argument(
        "--workers", type=int, default=1, help="server processes, each with its own models (default 1)"
    )
    args = p.parse_args(argv)
    if not 0 < args.port < 65536:
        p.error(f"--port must be 1-65535, not {args.port}")
    if args.workers < 1:
        p.error(f"--workers must be at least 1, not {args.workers}")
    args.models = args.models or ["classroom"]
    return args


def model_problem(spec: str) -> str | None:
    """Why `spec` cannot be loaded, checked before any worker starts; None if it looks loadable."""
    if spec in BUNDLED:
        if not (bundled_path(spec) / "model.safetensors").exists():
            return f"the bundled model {spec!r} is missing from {bundled_path(spec)}; train it: make train"
        return None
    if not Path(spec).is_dir():
        return f"{spec!r} is neither a bundled model ({', '.join(BUNDLED)}) nor a folder"
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def lan_address() -> str:
    """This machine's address on the local network, for students' browsers (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
        except OSError:
            return socket.gethostname()


def warn_public(host: str, port: int) -> None:
    line = "!" * BANNER_WIDTH
    where = lan_address() if host in ("0.0.0.0", "::") else host
    print(f"\n{line}\n  WARNING: listening on {host}:{port}, NOT only on this machine.\n"
          "  Anyone who can reach this address on your network can use the server and its models.\n"
          "  There is no login. Use --host 127.0.0.1 unless you mean to serve a classroom.\n"
          f"  Other machines open: http://{where}:{port}\n"
          f"{line}\n", file=sys.stderr, flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    problems = [p for p in map(model_problem, args.models) if p]
    if problems:
        sys.exit("Cannot start:\n  " + "\n  ".join(problems))
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            sys.exit("Cannot start: --device cuda, but PyTorch sees no CUDA GPU here. Use --device cpu.")
    shown_host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    url = f"http://{f'[{shown_host}]' if ':' in shown_host else shown_host}:{args.port}"
    # Folders become absolute so every worker process resolves them the same way.
    models = [
        m if model_problem(m) is None and not Path(m).is_dir() else str(Path(m).resolve())
        for m in args.models
    ]
    os.environ["ATLAS_MODELS"] = json.dumps(models)
    os.environ["ATLAS_DEVICE"] = args.device
    os.environ["ATLAS_URL"] = url
    # Each worker gets its share of the cores: 2 workers x 2 torch threads on 2 cores only fight.
    os.environ.setdefault("ATLAS_TORCH_THREADS", str(max(1, (os.cpu_count() or 1) // args.workers)))
    if not is_loopback(args.host):
        warn_public(args.host, args.port)
    print(f"Attention Atlas: loading {', '.join(args.models)} on {args.device}; then open {url}", flush=True)

    import uvicorn

    uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port, workers=args.workers)


if __name__ == "__main__":
    main()
