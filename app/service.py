"""The model service: the only app module that touches tensors. Routes hand it a request schema and
get back finished JSON bytes, cached by content.

Stateless by design: every answer depends only on (model, request), so any worker gives the same
bytes for the same request, and the cache can never serve one prompt's trace to another.
Area engineers: add a method that validates with `lm()/ids()/heads()/check_top_k()`, computes a
plain dict under `self.slot()`, and returns `self.cached(kind, req, compute)`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel

from labs.anatomy import anatomy_report
from labs.census import param_census
from labs.cost import cost_report, timing_report
from labs.roles.atlas import (
    LOCAL_WINDOW,
    ROLE_BY_KEY,
    ROLES,
    first_token_scores,
    head_atlas,
    probe_attention,
    prompt_scores,
)
from labs.roles.knockout import effect_from_logits, next_token_sentence, repeat_knockout, repeat_sentence
from labs.roles.probes import previous_token_scores
from model import LanguageModel, load

from .exclusive import exclusive
from .schemas import AblationRequest, HeadRequest, TraceRequest
from .schemas_cost import AnatomyRequest, CostRequest, TimingRequest
from .schemas_heads import HeadAblationRequest, HeadsQuery, PromptRolesRequest
from .settings import Settings

TIMING_DEFAULT_N = 2048  # top of the cost lab's timing ladder unless asked: ~2-4 s on 2 CPU cores
TIMING_BUDGET_S = 8.0  # a timing request stops climbing the ladder before it would take longer


RUNNER_THREAD = "atlas-model"


class BadInput(ValueError):
    """The request is well-formed but impossible for this model or these limits: a 422."""


class UnknownModel(LookupError):
    """The request names a model that is not loaded: a 404."""


class ByteLRU:
    """Least-recently-used cache of bytes, bounded by the total size of its values. Thread-safe."""

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


def to_json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def rounded(t: torch.Tensor, decimals: int) -> list:
    """Nested lists of floats with few digits: JSON size, not precision, is what matters here."""
    return np.round(t.detach().float().cpu().numpy().astype(np.float64), decimals).tolist()


def encode_attention(attention: torch.Tensor, causal: bool) -> dict:
    """(L, H, n, n) probabilities -> the u8 payload of the contract: round(p * 255), layer-major, then
    head, then query row; causal rows keep only keys 0..i, because the rest is exactly 0."""
    L, H, n, _ = attention.shape
    q = (attention.float() * 255).round_().clamp_(0, 255).to(torch.uint8)
    if causal:
        rows, cols = torch.tril_indices(n, n)  # row-major: (0,0), (1,0), (1,1), (2,0), ...
        q = q[:, :, rows, cols]
    data = base64.b64encode(q.contiguous().numpy().tobytes()).decode("ascii")
    return {"format": "u8-tril" if causal else "u8-full", "n_layer": L, "n_head": H, "n": n, "data": data}


def decode_attention(payload: dict) -> torch.Tensor:
    """The inverse of `encode_attention`, as a user's script would write it: (L, H, n, n) in [0, 1]."""
    L, H, n = payload["n_layer"], payload["n_head"], payload["n"]
    raw = torch.frombuffer(bytearray(base64.b64decode(payload["data"])), dtype=torch.uint8).float() / 255
    if payload["format"] == "u8-full":
        return raw.view(L, H, n, n)
    out = torch.zeros(L, H, n, n)
    rows, cols = torch.tril_indices(n, n)
    out[:, :, rows, cols] = raw.view(L, H, -1)
    return out


def temper(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits / temperature. A temperature so small that this overflows (5e-324 is a valid float > 0)
    gets its limit instead of inf/inf = NaN: all probability on the top logit(s). The floor of -1e4
    changes no probability (exp(-1e4) is exactly 0) but keeps log-probabilities and KL finite."""
    scaled = logits.float() / temperature
    if torch.isfinite(scaled).all():
        return scaled
    shifted = (logits.double() - logits.double().amax(-1, keepdim=True)) / temperature
    return shifted.clamp(min=-1e4).float()


def top_k(logits: torch.Tensor, k: int, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k ids and probabilities of softmax(logits / temperature) along the last axis."""
    probs = torch.softmax(temper(logits, temperature), dim=-1)
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)
    return top.indices, top.values


class ModelService:
    def __init__(self, models: dict[str, LanguageModel], settings: Settings) -> None:
        if not models:
            raise ValueError("no models to serve")
        self.models, self.settings = models, settings
        self.default = next(iter(models))
        self.cache = ByteLRU(settings.cache_bytes)
        self._slots = threading.BoundedSemaphore(settings.parallel_runs)
        # Model work runs on these few threads, whichever of the server's ~40 request threads asked:
        # PyTorch keeps memory per calling thread, and with every request thread taking turns a server
        # under a class's load grew by ~20 MiB per thread (bench/load.py); on 2 threads it stays flat.
        self._runner = ThreadPoolExecutor(settings.parallel_runs, thread_name_prefix=RUNNER_THREAD)

    @classmethod
    def load(cls, settings: Settings) -> ModelService:
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

    def heads(self, lm: LanguageModel, heads: Collection[tuple[int, int]]) -> list[tuple[int, int]]:
        cfg = lm.config
        for layer, head in heads:
            if not (0 <= layer < cfg.n_layer and 0 <= head < cfg.n_head):
                raise BadInput(
                    f"There is no head [{layer}, {head}]: model {lm.name!r} has layers 0-{cfg.n_layer - 1} "
                    f"and heads 0-{cfg.n_head - 1}."
                )
        return sorted(set(heads))

    def check_top_k(self, k: int) -> None:
        if k > self.settings.max_top_k:
            raise BadInput(f"top_k is {k}; the limit is {self.settings.max_top_k}.")

    # ---- running and caching ----

    @contextmanager
    def slot(self) -> Iterator[None]:
        """At most `parallel_runs` forward passes at once: on 2 cores more only slow every one down."""
        with self._slots, torch.inference_mode():
            yield

    def cached(self, kind: str, lm: LanguageModel, req: BaseModel, compute: Callable[[], dict]) -> bytes:
        """JSON bytes of `compute()`, keyed by the endpoint, the resolved model and the whole request."""
        key_src = to_json([kind, lm.name, req.model_dump(mode="json", exclude={"model"})])
        key = hashlib.sha256(key_src).hexdigest()
        body = self.cache.get(key)
        if body is None:
            body = self.on_runner(lambda: to_json(compute()))
            self.cache.put(key, body)
        return body

    def close(self) -> None:
        """Stop the model threads (the lifespan calls this at shutdown; queued work finishes first)."""
        self._runner.shutdown(wait=True)

    def on_runner(self, fn: Callable[[], Any]) -> Any:
        """`fn()` on one of the model threads (inline if already on one, so nesting cannot deadlock)."""
        if threading.current_thread().name.startswith(RUNNER_THREAD):
            return fn()
        return self._runner.submit(fn).result()

    # ---- endpoints ----

    def describe(self, lm: LanguageModel) -> dict:
        cfg = lm.config
        return {
            "name": lm.name, "arch": cfg.arch, "n_layer": cfg.n_layer, "n_head": cfg.n_head,
            "n_kv_head": cfg.n_kv_head, "d_model": cfg.d_model, "d_ff": cfg.d_ff, "head_dim": cfg.hd,
            "vocab_size": cfg.vocab_size, "context_length": cfg.context_length, "max_tokens": self.max_tokens(lm),
            "positional": cfg.positional, "norm": cfg.norm, "mlp": cfg.mlp_kind, "rope_base": cfg.rope_base,
            "rope_scale": cfg.rope_scale, "params": param_census(cfg), "has_card": lm.card is not None,
        }  # fmt: skip

    def limits(self) -> dict:
        s = self.settings
        return {
            "max_prompt_chars": s.max_prompt_chars, "max_tokens": self.max_tokens(self.lm(None)),
            "max_cost_n": s.max_cost_n, "max_request_bytes": s.max_request_bytes, "max_top_k": s.max_top_k,
        }  # fmt: skip

    def models_info(self) -> dict:
        models = [self.describe(lm) for lm in self.models.values()]
        return {"default": self.default, "models": models, "limits": self.limits()}

    def trace(self, req: TraceRequest) -> bytes:
        lm = self.lm(req.model)
        ablate = self.heads(lm, req.ablate)
        self.check_top_k(req.top_k)
        ids = self.ids(lm, req.prompt)
        req = req.model_copy(update={"ablate": ablate})

        def compute() -> dict:
            with self.slot():
                t = lm.trace(ids, position=req.position, causal=req.causal, ablate=ablate,
                             lens_k=self.settings.lens_k)  # fmt: skip
                top_ids, top_p = top_k(t.logits, req.top_k, req.temperature)
            return {
                "model": lm.name, "n": len(ids), "tokens": t.tokens, "token_ids": ids,
                "attention": encode_attention(t.attention, req.causal),
                "resid": {"stages": t.stage_names, "norms": rounded(t.resid_norms, 4)},
                "writes": {"attn": rounded(t.attn_write_norms, 4), "mlp": rounded(t.mlp_write_norms, 4)},
                "predictions": [
                    {"position": i, "top": token_probs(lm, row_ids, row_p)}
                    for i, (row_ids, row_p) in enumerate(zip(top_ids.tolist(), rounded(top_p, 6), strict=True))
                ],
                "lens": {
                    "k": t.lens_ids.shape[-1],
                    "tokens": [[lm.tokenizer.displays(row) for row in layer] for layer in t.lens_ids.tolist()],
                    "probs": rounded(t.lens_probs, 6),
                },
            }  # fmt: skip

        return self.cached("trace", lm, req, compute)

    def head(self, req: HeadRequest) -> bytes:
        lm = self.lm(req.model)
        cfg = lm.config
        if req.layer >= cfg.n_layer or req.head >= cfg.n_head:
            raise BadInput(
                f"There is no head [{req.layer}, {req.head}]: model {lm.name!r} has layers "
                f"0-{cfg.n_layer - 1} and heads 0-{cfg.n_head - 1}."
            )
        ablate = self.heads(lm, req.ablate)
        ids = self.ids(lm, req.prompt)
        req = req.model_copy(update={"ablate": ablate})

        def compute() -> dict:
            hook = f"blocks.{req.layer}.attn.hook_pattern"
            with self.slot():
                run = lm.make_run(req.position, req.causal, ablate)
                run.capture = {hook}
                lm.net.residual_stream(torch.tensor([ids], device=lm.device), run)
                p = run.cache[hook][0, req.head].float().cpu()  # (n, n)
            return {
                "model": lm.name, "layer": req.layer, "head": req.head, "kv_head": req.head // cfg.n_rep,
                "n": len(ids), "tokens": lm.tokenizer.displays(ids), "pattern": rounded(p, 5),
                "scores": head_scores(p),
            }  # fmt: skip

        return self.cached("head", lm, req, compute)

    def ablation(self, req: AblationRequest) -> bytes:
        lm = self.lm(req.model)
        ablate = self.heads(lm, req.ablate)
        self.check_top_k(req.top_k)
        ids = self.ids(lm, req.prompt)
        n = len(ids)
        index = n - 1 if req.index is None else req.index
        if not 0 <= index < n:
            raise BadInput(f"index {req.index} is outside the prompt's {n} tokens (0-{n - 1}).")
        req = req.model_copy(update={"ablate": ablate, "index": index})

        def compute() -> dict:
            with self.slot():
                intact = temper(lm.logits(ids)[index], req.temperature)
                knocked = temper(lm.logits(ids, ablate=ablate, ablate_mode=req.mode)[index], req.temperature)
            return compare_distributions(lm, ids, index, intact, knocked, req.top_k) | {
                "model": lm.name, "n": n, "tokens": lm.tokenizer.displays(ids), "index": index,
                "ablate": [list(h) for h in ablate], "mode": req.mode,
            }  # fmt: skip

        return self.cached("ablation", lm, req, compute)

    # ---- head atlas: roles scored once per model, and knockouts (labs/roles/atlas.py, head_ablation) ----

    def head_roles(self, model: str | None) -> bytes:
        lm = self.lm(model)

        def compute() -> dict:
            with self.slot():
                atlas = head_atlas(lm)

            def scored(layer: int, head: int, role: str) -> dict:
                score = round(float(atlas.scores[role][layer, head]), 4)
                return {"layer": layer, "head": head, "score": score}

            roles = [
                {"key": r.key, "name": r.name, "threshold": r.threshold, "probe": r.probe,
                 "explanation": r.explanation, "how": r.how, "scores": rounded(atlas.scores[r.key], 4),
                 "heads": [scored(la, h, r.key) for la, h in atlas.heads_with(r.key)],
                 "best": scored(*atlas.top_heads(r.key, 1)[0], r.key)}
                for r in ROLES
            ]  # fmt: skip
            cfg = lm.config
            probes = [{"key": k, "title": v.title, "n": len(v.token_ids)} for k, v in atlas.probes.items()]
            return {"model": lm.name, "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_kv_head": cfg.n_kv_head,
                    "roles": roles, "labels": atlas.labels, "probes": probes,
                    "repeat_length": atlas.repeat_length, "local_window": LOCAL_WINDOW}  # fmt: skip

        return self.cached("heads", lm, HeadsQuery(model=model), compute)

    def head_probe(self, model: str | None, probe: str) -> bytes:
        lm = self.lm(model)

        def compute() -> dict:
            with self.slot():
                view = head_atlas(lm).probes[probe]
            return {"model": lm.name, "probe": probe, "title": view.title, "n": len(view.token_ids),
                    "tokens": view.tokens, "token_ids": view.token_ids,
                    "attention": encode_attention(view.attention, causal=True)}  # fmt: skip

        return self.cached("head_probe", lm, HeadsQuery(model=model, probe=probe), compute)

    def prompt_roles(self, req: PromptRolesRequest) -> bytes:
        lm = self.lm(req.model)
        ids = self.ids(lm, req.prompt)

        def compute() -> dict:
            with self.slot():
                scores = prompt_scores(probe_attention(lm, [ids])[0], ids)
            return {"model": lm.name, "n": len(ids), "tokens": lm.tokenizer.displays(ids),
                    "scores": {k: None if v is None else rounded(v, 4) for k, v in scores.items()}}  # fmt: skip

        return self.cached("head_prompt", lm, req, compute)

    def head_ablation(self, req: HeadAblationRequest) -> bytes:
        lm = self.lm(req.model)
        self.check_top_k(req.top_k)
        ids = self.ids(lm, req.prompt)
        if req.role is None:
            heads = self.heads(lm, req.heads or [])
        else:
            with self.slot():
                atlas = head_atlas(lm)
            heads = atlas.heads_with(req.role)
            if not heads:
                (la, h), role = atlas.top_heads(req.role, 1)[0], ROLE_BY_KEY[req.role]
                raise BadInput(
                    f"No head of model {lm.name!r} clears the {role.name} threshold ({role.threshold}); the best, "
                    f"L{la}H{h}, scores {float(atlas.scores[req.role][la, h]):.2f}. Knock out heads by name instead."
                )
        req = req.model_copy(update={"heads": heads})

        def compute() -> dict:
            with self.slot():
                intact, knocked = lm.logits(ids)[-1], lm.logits(ids, ablate=heads, ablate_mode=req.mode)[-1]
                rep = repeat_knockout(lm, heads, req.mode, seed=req.seed)
            cmp = compare_distributions(lm, ids, len(ids) - 1, intact, knocked, req.top_k)
            effect = effect_from_logits(lm, ids, intact, knocked, req.top_k)
            r4 = lambda x: None if x is None else round(x, 4)  # noqa: E731
            prompt = {"tokens": effect.tokens, "index": len(ids) - 1, "intact": cmp["intact"],
                      "ablated": cmp["ablated"], "rows": cmp["rows"], "kl": cmp["kl"],
                      "sentence": next_token_sentence(heads, effect)}  # fmt: skip
            repeat = {"length": rep.length, "first_copy_loss": r4(rep.first), "second_copy_loss": r4(rep.second),
                      "second_copy_loss_ablated": r4(rep.second_ablated),
                      "random": [{"heads": [list(h) for h in s], "second_copy_loss": r4(x)}
                                 for s, x in zip(rep.random_heads, rep.second_random, strict=True)],
                      "second_copy_loss_random": r4(rep.second_random_mean),
                      "sentence": repeat_sentence(heads, rep)}  # fmt: skip
            return {"model": lm.name, "heads": [list(h) for h in heads], "role": req.role, "mode": req.mode,
                    "prompt": prompt, "repeat": repeat}  # fmt: skip

        return self.cached("head_ablation", lm, req, compute)

    # ---- cost lab and anatomy (labs/cost.py, labs/anatomy.py) ----

    def cost(self, req: CostRequest) -> bytes:
        lm = self.lm(req.model)
        return self.cached("cost", lm, req, lambda: cost_report(lm.config, lm.name, req.n))

    def cost_timing(self, req: TimingRequest) -> bytes:
        """Not cached: each call is a fresh measurement. One at a time per server (app/exclusive.py)."""
        lm = self.lm(req.model)
        cap = self.settings.max_cost_n
        max_n = req.max_n or min(TIMING_DEFAULT_N, cap)
        if max_n > cap:
            raise BadInput(
                f"max_n is {max_n}; this server times attention up to n = {cap} (limits.max_cost_n)."
            )
        with exclusive("timing", wait_s=TIMING_BUDGET_S + 2), self.slot():
            report = timing_report(lm.net, max_n, req.repeats, TIMING_BUDGET_S)
        return to_json({"model": lm.name, **report})

    def anatomy(self, req: AnatomyRequest) -> bytes:
        lm = self.lm(req.model)
        ids = self.ids(lm, req.prompt)

        def compute() -> dict:
            with self.slot():
                return anatomy_report(lm, ids, req.top_k)

        return self.cached("anatomy", lm, req, compute)


def token_probs(lm: LanguageModel, ids: list[int], probs: list[float]) -> list[dict]:
    return [{"id": i, "token": lm.tokenizer.display(i), "prob": p} for i, p in zip(ids, probs, strict=True)]


def head_scores(p: torch.Tensor) -> dict:
    """Summary numbers of one (n, n) pattern; previous-token and first-token use the shared definitions
    in labs/roles/probes.py and labs/roles/atlas.py (first-token skips query 0, which can only see itself)."""
    n = p.shape[0]
    entropy = -torch.special.xlogy(p, p).sum(-1).mean() / math.log(2)
    prev = round(previous_token_scores(p[None, None])[0, 0].item(), 5) if n > 1 else None
    return {
        "previous_token": prev,
        "first_token": round(first_token_scores(p[None, None])[0, 0].item(), 5) if n > 1 else None,
        "self": round(p.diagonal().mean().item(), 5),
        "entropy": round(max(entropy.item(), 0.0), 5),  # no -0.0 for a one-hot row
    }


def compare_distributions(
    lm: LanguageModel, ids: list[int], index: int, intact: torch.Tensor, knocked: torch.Tensor, k: int
) -> dict:
    """Top-k of both next-token distributions, their union side by side, and KL(intact || ablated) in nats."""
    lp, lq = torch.log_softmax(intact.float(), -1), torch.log_softmax(knocked.float(), -1)
    p, q = lp.exp(), lq.exp()
    kl = (p * (lp - lq)).sum().item()  # nats, like labs/roles/knockout.py
    k = min(k, p.shape[-1])
    top_p, top_q = p.topk(k).indices.tolist(), q.topk(k).indices.tolist()
    union = top_p + [i for i in top_q if i not in top_p]

    def row(i: int) -> dict:
        return {"id": i, "token": lm.tokenizer.display(i), "intact": round(p[i].item(), 6),
                "ablated": round(q[i].item(), 6)}  # fmt: skip

    return {
        "intact": token_probs(lm, top_p, [round(p[i].item(), 6) for i in top_p]),
        "ablated": token_probs(lm, top_q, [round(q[i].item(), 6) for i in top_q]),
        "rows": [row(i) for i in union],
        "next_token": row(ids[index + 1]) if index + 1 < len(ids) else None,
        "kl": round(max(kl, 0.0), 6),
    }
