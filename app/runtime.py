"""The server's runtime: the loaded models, the threads that run them and the response cache.

Stateless by design: every answer depends only on (model, request), so any worker gives the same
bytes for the same request, and the cache can never serve one prompt's trace to another.
A handler validates with `lm()/ids()/check_heads()/check_top_k()`, then returns
`cached(kind, lm, req, build)`, where `build()` returns the endpoint's response model.

Admission control (`ModelQueue`): every forward pass waits in one bounded queue served by
`parallel_runs` model threads. A request that finds `max_waiting` jobs already waiting gets 503 with
Retry-After; a request whose client has gone is withdrawn before its job starts; and a client (by
address) has at most one waiting job per kind: a newer one replaces the older (the page's
AbortController cancels the old fetch, and now the old computation too).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Hashable
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

import torch
from pydantic import BaseModel

from labs.census import param_census
from labs.cost import timing_cap
from model import LanguageModel, load

from .errors import BadInput, Busy, ClientGone, Replaced, UnknownModel
from .lru import SizedLRU, tensor_bytes
from .settings import Settings

RUNNER_THREAD = "atlas-model"
POLL_S = 0.1  # how often a waiting request checks that its client is still there
T = TypeVar("T")
MEASUREMENTS_KEPT = 64  # answers of expensive measurements (memory, RoPE stretch) held for the server's life


@dataclass(frozen=True)
class Caller:
    """Who asked for the model work being submitted (set per request by app/deps.py).

    `client`: the key for per-client fairness (the client's address), or None where it would be
    meaningless: a loopback client is this machine's own user, or a reverse proxy on it (uvicorn then
    puts the proxy's X-Forwarded-For address in its place). `gone()`: true once the client disconnected.
    """

    client: str | None
    gone: Callable[[], bool]


CALLER: ContextVar[Caller | None] = ContextVar("atlas_caller", default=None)


class Job:
    __slots__ = ("fn", "future", "key", "state")

    def __init__(self, fn: Callable[[], object], key: Hashable | None) -> None:
        self.fn, self.key, self.state = fn, key, "waiting"
        self.future: Future = Future()


class ModelQueue:
    """A fixed number of model threads serving one bounded FIFO queue of jobs.

    At most `max_waiting` jobs wait (beyond that `submit` raises Busy at once, with a Retry-After
    estimated from recent job times); a job with a `key` replaces a waiting job with the same key;
    `withdraw` removes a job that has not started. Nothing here sleeps waiting for a lock: the
    threads wait on a condition for work, requests wait on their job's future.
    """

    def __init__(self, threads: int, max_waiting: int) -> None:
        self.threads, self.max_waiting = threads, max_waiting
        self.avg_s = 0.5  # moving average of a job's run time, for Retry-After
        self.running = 0
        self._waiting: deque[Job] = deque()
        self._by_key: dict[Hashable, Job] = {}
        self._cv = threading.Condition()
        self._closed = False
        self._workers = [
            threading.Thread(target=self._work, name=f"{RUNNER_THREAD}-{i}", daemon=True)
            for i in range(threads)
        ]
        for w in self._workers:
            w.start()

    def __len__(self) -> int:
        return len(self._waiting)

    def retry_after(self) -> int:
        """Seconds until the queue has likely drained: jobs ahead / threads x average job time."""
        return max(1, math.ceil((len(self._waiting) + self.running) / self.threads * self.avg_s))

    def submit(self, fn: Callable[[], object], key: Hashable | None = None) -> Job:
        with self._cv:
            if self._closed:
                raise Busy("The server is shutting down; try again in a few seconds.")
            if key is not None and (old := self._by_key.pop(key, None)) is not None:
                self._waiting.remove(old)
                old.state = "replaced"
                old.future.set_exception(
                    Replaced("A newer request of the same kind from you replaced this one.")
                )
            if len(self._waiting) >= self.max_waiting:
                wait = self.retry_after()
                raise Busy(
                    f"The server is busy: {len(self._waiting)} requests are already waiting for the model. "
                    f"Try again in {wait} s.",
                    retry_after=wait,
                )
            job = Job(fn, key)
            self._waiting.append(job)
            if key is not None:
                self._by_key[key] = job
            self._cv.notify()
        return job

    def withdraw(self, job: Job) -> bool:
        """Take `job` out of the queue if it has not started; True if it was withdrawn."""
        with self._cv:
            if job.state != "waiting":
                return False
            self._waiting.remove(job)
            if self._by_key.get(job.key) is job:
                del self._by_key[job.key]
            job.state = "withdrawn"
            job.future.cancel()
            return True

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._waiting and not self._closed:
                    self._cv.wait()
                if not self._waiting:
                    return  # closed and drained
                job = self._waiting.popleft()
                if self._by_key.get(job.key) is job:
                    del self._by_key[job.key]
                job.state = "running"
                self.running += 1
            start = time.monotonic()
            if job.future.set_running_or_notify_cancel():
                try:
                    job.future.set_result(job.fn())
                except BaseException as e:  # noqa: BLE001 - handed to the waiting request as it is
                    job.future.set_exception(e)
            with self._cv:
                self.running -= 1
                self.avg_s = 0.8 * self.avg_s + 0.2 * (time.monotonic() - start)
                job.state = "done"

    def close(self) -> None:
        """Stop the threads once the queued work is done."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        for w in self._workers:
            w.join()


GZIP_MIN_BYTES = 2048  # smaller answers are sent as they are (app/main.py's GZipMiddleware: the same)
GZIP_LEVEL = 1  # a 512-token trace shrinks ~10x for a third of level 5's CPU (classroom Wi-Fi)


def compress(body: bytes) -> bytes:
    """gzip at GZIP_LEVEL, with no timestamp: the same answer always compresses to the same bytes."""
    return gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)


class Answer(bytes):
    """An answer's JSON bytes as cached, and its gzip form once a client accepting gzip asked for it
    (`ByteLRU.gzipped`): compressed once per cached answer, not on every hit."""

    key: str
    gz: bytes | None = None

    @classmethod
    def of(cls, body: bytes, key: str) -> Answer:
        answer = cls(body)
        answer.key = key
        return answer


def stored_size(value: bytes) -> int:
    return len(value) + len(getattr(value, "gz", None) or b"")


class ByteLRU(SizedLRU[bytes]):
    """The answers' cache: bytes bounded by their total size, an `Answer`'s gzip form included."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(max_bytes, stored_size)

    def gzipped(self, answer: Answer) -> bytes:
        """`answer` gzipped: compressed the first time (on the caller's thread, never the event loop),
        then kept with the answer, within the byte budget, while the answer is cached."""
        gz = answer.gz
        if gz is not None:
            return gz
        gz = compress(answer)
        with self._lock:
            if answer.gz is None and self._items.get(answer.key) is answer:
                answer.gz = gz
                self.size += len(gz)
                self._evict()
        return gz


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
        self.patterns = SizedLRU(
            settings.pattern_cache_bytes, tensor_bytes
        )  # forwards' attention, for /api/head
        # Kept apart from `cache`, which a class's traces churn through: one costs tens of seconds.
        self.measurements: SizedLRU[Answer] = SizedLRU(MEASUREMENTS_KEPT, size_of=lambda _: 1)
        # The one admission mechanism: at most `parallel_runs` forward passes at once (on 2 cores more
        # only slow every one down), on these few threads whichever of the server's ~40 request threads
        # asked: PyTorch keeps memory per calling thread, and with every request thread taking turns a
        # server under a class's load grew by ~20 MiB per thread (bench/load.py); on 2 it stays flat.
        # At most `max_waiting` requests wait for them, so request threads stay free for pages.
        self.queue = ModelQueue(settings.parallel_runs, settings.max_waiting)

    @classmethod
    def load(cls, settings: Settings, loaded: dict[str, LanguageModel] | None = None) -> Runtime:
        """The settings' models, taking any already `loaded` (keyed by spec) instead of loading them again."""
        models: dict[str, LanguageModel] = {}
        for spec in settings.models:
            lm = (loaded or {}).get(spec) or load(spec, device=settings.device, dtype=settings.dtype)
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
        if max(ids) >= lm.config.vocab_size:  # an added token (e.g. a pad token) the weights never got
            raise BadInput(
                f"The prompt contains token id {max(ids)}, which model {lm.name!r} has no embedding for "
                f"(its vocabulary is {lm.config.vocab_size}): remove special tokens such as added markers."
            )
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

    def max_timing_n(self, lm: LanguageModel) -> int:
        return timing_cap(lm.config, self.settings.max_timing_bytes, self.settings.max_cost_n)

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
            "max_timing_n": self.max_timing_n(lm),
        }  # fmt: skip

    def models_info(self) -> dict:
        """What is loaded and the limits in force: GET /api/models, and every page's header."""
        s = self.settings
        limits = {
            "max_prompt_chars": s.max_prompt_chars, "max_tokens": self.max_tokens(self.lm(None)),
            "max_cost_n": s.max_cost_n, "max_timing_n": self.max_timing_n(self.lm(None)),
            "max_timing_bytes": s.max_timing_bytes, "max_request_bytes": s.max_request_bytes, "max_top_k": s.max_top_k,
            "max_waiting": s.max_waiting,
        }  # fmt: skip
        models = [self.describe(lm) for lm in self.models.values()]
        return {"default": self.default, "models": models, "limits": limits}

    # ---- running and caching ----

    def run(self, fn: Callable[[], T], kind: str | None = None) -> T:
        """`fn()` on one of the model threads, in inference mode (inline if already on one, so nesting
        cannot deadlock). Queued as the current request's (`CALLER`): dropped if its client has gone
        before it starts, and replacing that client's waiting job of the same `kind`."""
        if threading.current_thread().name.startswith(RUNNER_THREAD):
            return fn()
        caller = CALLER.get()
        if caller is not None and caller.gone():
            raise ClientGone("The client closed the connection before the model ran.")

        def work() -> T:
            with torch.inference_mode():
                return fn()

        key = (caller.client, kind) if caller is not None and caller.client and kind else None
        job = self.queue.submit(work, key)
        while True:
            try:
                return job.future.result(timeout=POLL_S if caller is not None else None)
            except TimeoutError:
                if job.state == "waiting" and caller.gone() and self.queue.withdraw(job):
                    raise ClientGone("The client closed the connection before the model ran.") from None

    def cached(self, kind: str, lm: LanguageModel, req: BaseModel, build: Callable[[], BaseModel]) -> Answer:
        """JSON bytes of the response model `build()` returns, computed once per (kind, model, request)."""
        key = cache_key(kind, lm, req)
        body = self.cache.get(key)
        if body is None:
            body = Answer.of(self.run(lambda: build().model_dump_json().encode(), kind), key)
            self.cache.put(key, body)
        return body

    def measured(
        self, kind: str, lm: LanguageModel, req: BaseModel, measure: Callable[[], BaseModel]
    ) -> Answer:
        """Like `cached`, for a measurement that does not depend on the server's load: `measure()` runs
        on the request's thread (it holds its own lock and queues its own model jobs), and its answer is
        kept in `measurements`, out of reach of the traces' evictions."""
        key = cache_key(kind, lm, req)
        body = self.measurements.get(key)
        if body is None:
            body = Answer.of(measure().model_dump_json().encode(), key)
            self.measurements.put(key, body)
        return body

    def check_index(self, index: int | None, n: int) -> int:
        """A query position within the prompt's n tokens; None means the last."""
        if index is None:
            return n - 1
        if not 0 <= index < n:
            raise BadInput(f"index {index} is outside the prompt's {n} tokens (0-{n - 1}).")
        return index

    def close(self) -> None:
        """Stop the model threads (the lifespan calls this at shutdown; queued work finishes first)."""
        self.queue.close()
