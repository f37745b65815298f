"""`python -m app`: serve Attention Atlas with uvicorn.

    python -m app [--model NAME_OR_PATH]... [--host 127.0.0.1] [--port 8000] [--device cpu|cuda]
                  [--dtype float32|bfloat16|float16] [--workers N] [--debug]
    python -m app export "prompt" [--model NAME_OR_PATH] [-o lesson.html]   (one offline HTML file)

Before any worker starts, every model is loaded once here and the port is bound: a broken model or a
busy port exits 1 with one sentence, last (the traceback too with --debug), for any number of workers;
so does a worker that fails while starting (app/serving.py). "ready" is printed once every worker serves.

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
import traceback
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from app.middleware import is_loopback
from app.serving import serve
from app.settings import DEFAULT_MODELS, Settings
from model import LanguageModel
from model.hub import is_hub_name
from model.loading import BUNDLED, DTYPES, ModelLoadError, bundled_path, load

BANNER_WIDTH = 78


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m app", description="Serve Attention Atlas in the browser.")
    p.add_argument("--model", action="append", dest="models", metavar="NAME_OR_PATH",
                   help="a bundled model name, a model folder, or a Hugging Face name (gpt2, Qwen/Qwen2.5-0.5B, "
                        "name@revision) from the local cache; repeat to offer several (first = default; "
                        "default: classroom and its twin classroom-gpt2)")  # fmt: skip
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="where the models run (default cpu)"
    )
    p.add_argument("--dtype", choices=tuple(DTYPES),
                   help="the weights' dtype (default float32 on cpu, bfloat16 on cuda); attention "
                        "probabilities are computed in float32 whatever it is")  # fmt: skip
    p.add_argument(
        "--workers", type=int, default=1, help="server processes, each with its own models (default 1)"
    )
    p.add_argument("--debug", action="store_true", help="on a failure to start, print the traceback too")
    args = p.parse_args(argv)
    if not 0 < args.port < 65536:
        p.error(f"--port must be 1-65535, not {args.port}")
    if args.workers < 1:
        p.error(f"--workers must be at least 1, not {args.workers}")
    args.models = args.models or list(DEFAULT_MODELS)
    return args


def model_problem(spec: str) -> str | None:
    """Why `spec` cannot be loaded, checked before any worker starts; None if it looks loadable."""
    if spec in BUNDLED:
        if not (bundled_path(spec) / "model.safetensors").exists():
            return f"the bundled model {spec!r} is missing from {bundled_path(spec)}; train it: make train"
        return None
    if not Path(spec).is_dir() and not is_hub_name(spec):
        return (
            f"{spec!r} is neither a bundled model ({', '.join(BUNDLED)}) nor a folder"
            " nor a Hugging Face model name (org/name)"
        )
    return None


def is_any(host: str) -> bool:
    """Every address of this machine: 0.0.0.0, ::, and the shorthand 0."""
    try:
        return host == "0" or ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def urls(host: str, port: int) -> list[str]:
    """Addresses a browser can open: never http://0:PORT. Listening everywhere: this machine, then the LAN."""
    if is_any(host):
        return [f"http://127.0.0.1:{port}", f"http://{lan_address()}:{port}"]
    return [f"http://{f'[{host}]' if ':' in host else host}:{port}"]


def fail(reason: str, debug: bool, exc: BaseException | None = None) -> NoReturn:
    """Exit 1 with the reason as the last line; the traceback before it only with --debug."""
    if debug and exc is not None:
        traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()
    sys.exit(f"Cannot start: {reason}")


def check_models(specs: list[str], device: str, dtype: str, debug: bool) -> dict[str, LanguageModel]:
    """Load every model once, here, so a broken one stops the server before any worker starts (and a
    Hugging Face name is downloaded here, once, if it must be: the workers then find it cached)."""
    loaded = {}
    for spec in specs:
        try:
            loaded[spec] = load(spec, device=device, dtype=dtype)
        except ModelLoadError as e:
            fail(f"{e}.", debug, e)
        except Exception as e:  # noqa: BLE001 - anything else is a bug to report in one line
            fail(f"loading {spec!r} failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                 " (run with --debug for the traceback).", debug, e)  # fmt: skip
    return loaded


def check_port(host: str, port: int, debug: bool) -> None:
    """Bind once to see the port is free (uvicorn binds again at once), for a sentence instead of a log."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as e:
        fail(f"cannot listen on {host}:{port} ({e.strerror or e}); is another server using the port? "
             "Choose another with --port.", debug, e)  # fmt: skip


def check_settings(debug: bool) -> Settings:
    """The ATLAS_* variables every worker will read, checked here so a bad one is one sentence."""
    try:
        return Settings()
    except ValidationError as e:
        bad = "; ".join(f"ATLAS_{'_'.join(map(str, err['loc'])).upper()}: {err['msg']}" for err in e.errors())
        fail(f"a setting from the environment is not valid ({bad}).", debug, e)


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
    where = lan_address() if is_any(host) else host
    print(f"\n{line}\n  WARNING: listening on {host}:{port}, NOT only on this machine.\n"
          "  Anyone who can reach this address on your network can use the server and its models.\n"
          "  There is no login. Use --host 127.0.0.1 unless you mean to serve a classroom.\n"
          f"  Other machines open: http://{where}:{port}\n"
          f"{line}\n", file=sys.stderr, flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["export"]:  # python -m app export "prompt" -o lesson.html: a file, no server
        from .export import main as export

        export(argv[1:])
        return
    args = parse_args(argv)
    problems = [p for p in map(model_problem, args.models) if p]
    if problems:
        sys.exit("Cannot start:\n  " + "\n  ".join(problems))
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            sys.exit("Cannot start: --device cuda, but PyTorch sees no CUDA GPU here. Use --device cpu.")
    if args.host == "0":
        args.host = "0.0.0.0"
    shown = urls(args.host, args.port)
    url = shown[0] if len(shown) == 1 else f"{shown[0]} (other machines: {shown[1]})"
    # Folders become absolute so every worker process resolves them the same way.
    models = [
        m if model_problem(m) is None and not Path(m).is_dir() else str(Path(m).resolve())
        for m in args.models
    ]
    os.environ["ATLAS_MODELS"] = json.dumps(models)
    os.environ["ATLAS_DEVICE"] = args.device
    dtype = args.dtype or ("bfloat16" if args.device == "cuda" else "float32")
    os.environ["ATLAS_DTYPE"] = dtype
    os.environ["ATLAS_HOST"] = args.host
    # Each worker gets its share of the cores: 2 workers x 2 torch threads on 2 cores only fight.
    os.environ.setdefault("ATLAS_TORCH_THREADS", str(max(1, (os.cpu_count() or 1) // args.workers)))
    settings = check_settings(args.debug)
    if not is_loopback(args.host):
        warn_public(args.host, args.port)
    print(f"Attention Atlas: loading {', '.join(args.models)} on {args.device} ({dtype}); then open {url}",
          flush=True)  # fmt: skip
    loaded = check_models(models, args.device, dtype, args.debug)
    check_port(args.host, args.port, args.debug)
    names = ", ".join(lm.name for lm in loaded.values())

    def ready() -> None:
        print(f"Attention Atlas is ready: open {url}  (models: {names})", flush=True)

    if args.workers == 1:
        # One process: serve the models just checked instead of loading each a second time (minutes
        # and gigabytes for a 7B checkpoint).
        from .main import create_app

        target = create_app(settings, loaded)
    else:
        del loaded  # each worker process loads its own copy
        target = "app.main:create_app"
    problem = serve(target, settings, args.host, args.port, args.workers, ready)
    if problem:
        fail(problem, args.debug)


if __name__ == "__main__":
    main()
