"""The server's runtime: the loaded models, the threads that run them and the response cache.

Stateless by design: every answer depends only on (model, request), so any worker gives the same
bytes for the same request, and the cache can never serve one prompt's trace to another.
A handler validates with `lm()/ids()/check_heads()/check_top_k()`, then returns
`cached(kind, lm, req, build)`, where `build()` returns the endpoint's response model.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch
from pydantic import BaseModel

from labs.census import param_census
from model import LanguageModel, load

from .errors import BadInput, UnknownModel
from .settings import Settings

RUNNER_THREAD = "atlas-model"
T = TypeVar("T")


class ByteLRU:
    """Least-recently-used cache of bytes, bounded by the total size of its values. Thread-safe.
    (cachetools' LRUCache with getsizeof=len would do, but it is not thread-safe and not installed.)"""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = self.misses = 0
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: str, value: bytes) -> None:
        if len(value) > self.max_bytes:
            return  # larger than the whole budget: caching it would only evict everything else
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.size -= len(old)
            self._items[key] = value
            self.size += len(value)
            while self.size > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self.size -= len(evicted)

    def __len__(self) -> int:
        return len(self._items)


def cache_key(kind: str, lm: LanguageModel, req: BaseModel) -> str:
    """The endpoint, the resolved model and the whole request (its `model` field resolved away)."""
    src = [kind, lm.name, req.model_dump(mode="json", exclude={"model"})]
    return hashlib.sha256(json.dumps(src, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


class Runtime:
    def __init__(self, models: dict[str, LanguageModel], settings: Settings) -> None:
        if not models:
            raise ValueError("no models to serve")
        self.models, self.settings = models, settings
        self.default = next(iter(models))
        self.cache = ByteLRU(settings.cache_bytes)
        # The one admission mechanism: at most `parallel_runs` forward passes at once (on 2 cores more
        # only slow every one down), on these few threads whichever of the server's ~40 request threads
        # asked: PyTorch keeps memory per calling thread, and with every request thread taking turns a
        # server under a class's load grew by ~20 MiB per thread (bench/load.py); on 2 it stays flat.
        self._runner = ThreadPoolExecutor(settings.parallel_runs, thread_name_prefix=RUNNER_THREAD)

    @classmethod
    def load(cls, settings: Settings) -> Runtime:
        models: dict[str, LanguageModel] = {}
        for spec in settings.models:
            lm = load(spec, device=settings.device)
            if lm.name in models:
                raise ValueError(f"two models are named {lm.name!r}; rename one of the folders")
            models[lm.name] = lm
        return cls(models, settings)

    # ---- validation shared by every endpoint ----

    def lm(self, name: str | None) -> LanguageModel:
        lm = self.models.get(name or self.default)
        if lm is None:
            raise UnknownModel(f"No model named {name!r} is loaded. Loaded: {', '.join(self.models)}.")
        return lm

    def max_tokens(self, lm: LanguageModel) -> int:
        cap = self.settings.max_tokens
        return min(cap, lm.config.context_length) if cap else lm.config.context_length

    def ids(self, lm: LanguageModel, prompt: str) -> list[int]:
        limit = self.settings.max_prompt_chars
        if len(prompt) > limit:
            raise BadInput(f"The prompt has {len(prompt)} characters; the limit is {limit}. Shorten it.")
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError:  # JSON can escape half a UTF-16 pair ("\ud83d"); no tokenizer takes it
            raise BadInput(
                "The prompt contains a broken character (half of a UTF-16 surrogate pair, e.g. half an emoji). "
                "Remove it and try again."
            ) from None
        ids = lm.encode(prompt)
        if not ids:
            raise BadInput("The prompt has no tokens: type some text to analyse.")
        if len(ids) > self.max_tokens(lm):
            raise BadInput(
                f"The prompt is {len(ids)} tokens long; model {lm.name!r} reads at most "
                f"{self.max_tokens(lm)} tokens. Shorten it."
            )
        return ids

    def check_heads(self, lm: LanguageModel, heads: Collection[tuple[int, int]]) -> list[tuple[int, int]]:
        """The model's own head check (`LanguageModel.check_heads`, one wording), as a 422."""
        try:
            return lm.check_heads(heads)
        except ValueError as e:
            raise BadInput(str(e)) from None

    def check_top_k(self, k: int) -> None:
        if k > self.settings.max_top_k:
            raise BadInput(f"top_k is {k}; the limit is {self.settings.max_top_k}.")

    def describe(self, lm: LanguageModel) -> dict:
        cfg = lm.config
        return {
            "name": lm.name, "arch": cfg.arch, "n_layer": cfg.n_layer, "n_head": cfg.n_head,
            "n_kv_head": cfg.n_kv_head, "d_model": cfg.d_model, "d_ff": cfg.d_ff, "head_dim": cfg.hd,
            "vocab_size": cfg.vocab_size, "context_length": cfg.context_length, "max_tokens": self.max_tokens(lm),
            "positional": cfg.positional, "norm": cfg.norm, "mlp": cfg.mlp_kind, "rope_base": cfg.rope_base,
            "rope_scale": cfg.rope_scale, "params": param_census(cfg), "has_card": lm.card is not None,
        }  # fmt: skip

    def models_info(self) -> dict:
        """What is loaded and the limits in force: GET /api/models, and every page's header."""
        s = self.settings
        limits = {
            "max_prompt_chars": s.max_prompt_chars, "max_tokens": self.max_tokens(self.lm(None)),
            "max_cost_n": s.max_cost_n, "max_request_bytes": s.max_request_bytes, "max_top_k": s.max_top_k,
        }  # fmt: skip
        models = [self.describe(lm) for lm in self.models.values()]
        return {"default": self.default, "models": models, "limits": limits}

    # ---- running and caching ----

    def run(self, fn: Callable[[], T]) -> T:
        """`fn()` on one of the model threads, in inference mode (inline if already on one, so nesting
        cannot deadlock)."""
        if threading.current_thread().name.startswith(RUNNER_THREAD):
            return fn()

        def job() -> T:
            with torch.inference_mode():
                return fn()

        return self._runner.submit(job).result()

    def cached(self, kind: str, lm: LanguageModel, req: BaseModel, build: Callable[[], BaseModel]) -> bytes:
        """JSON bytes of the response model `build()` returns, computed once per (kind, model, request)."""
        key = cache_key(kind, lm, req)
        body = self.cache.get(key)
        if body is None:
            body = self.run(lambda: build().model_dump_json().encode())
            self.cache.put(key, body)
        return body

    def close(self) -> None:
        """Stop the model threads (the lifespan calls this at shutdown; queued work finishes first)."""
        self._runner.shutdown(wait=True)
