"""Models, traces, one head in full, the logit lens, and ablation: validate, run the model, build the
response model. A keystroke's trace carries thumbnails; its forward's attention stays in
`rt.patterns`, so the head the page opens next is sliced out of it instead of running the model again."""

from __future__ import annotations

import torch

from labs.predict import temper, top_k
from labs.roles.registry import head_scores
from labs.showcase import showcase_head
from model import LanguageModel
from model.trace import Trace

from ..predictions import compare_distributions
from ..runtime import Runtime
from ..wire import encode_thumbnails, encode_u16, rounded
from .schemas import (
    AblationRequest,
    AblationResponse,
    HeadRequest,
    HeadResponse,
    HeadScores,
    LensRequest,
    LensResponse,
    ModelsResponse,
    Switches,
    TraceRequest,
    TraceResponse,
    U16Payload,
)


def models(rt: Runtime) -> ModelsResponse:
    return ModelsResponse(**rt.models_info())


def forward(
    rt: Runtime, lm: LanguageModel, ids: list[int], req: Switches, lens_k: int = 0, last_only: bool = False
) -> Trace:
    """The trace of one forward (on a model thread), its attention kept for `attention_of`."""
    t = lm.trace(ids, position=req.position, causal=req.causal, ablate=req.ablate, lens_k=lens_k,
                 last_logits_only=last_only)  # fmt: skip
    rt.patterns.put(pattern_key(lm, ids, req), t.attention)
    return t


def attention_of(rt: Runtime, lm: LanguageModel, ids: list[int], req: Switches) -> torch.Tensor:
    """(L, H, n, n): the cached forward's, else a new forward's."""
    att = rt.patterns.get(pattern_key(lm, ids, req))
    return forward(rt, lm, ids, req).attention if att is None else att


def pattern_key(lm: LanguageModel, ids: list[int], req: Switches) -> tuple:
    return lm.name, tuple(ids), req.position, req.causal, tuple(map(tuple, req.ablate))


def trace(rt: Runtime, req: TraceRequest) -> bytes:
    lm = rt.lm(req.model)
    ablate = rt.check_heads(lm, req.ablate)
    rt.check_top_k(req.top_k)
    ids = rt.ids(lm, req.prompt)
    req = req.model_copy(update={"ablate": ablate})

    def build() -> TraceResponse:
        t = forward(rt, lm, ids, req, last_only=req.predict == "last")
        top_ids, top_p = top_k(t.logits, req.top_k, req.temperature)
        first = len(ids) - len(t.logits)  # the position of the first row of predictions
        show = showcase_head(t.attention)
        display = lm.tokenizer.display
        return TraceResponse(
            model=lm.name, n=len(ids), tokens=t.tokens, token_ids=ids,
            groups=[vars(g) for g in lm.tokenizer.char_groups(ids)],
            showcase=show and {"layer": show.layer, "head": show.head, "score": round(show.score, 4)},
            thumbnails=encode_thumbnails(t.attention, req.causal),
            resid={"stages": t.stage_names, "norms": rounded(t.resid_norms, 4)},
            writes={"attn": rounded(t.attn_write_norms, 4), "mlp": rounded(t.mlp_write_norms, 4)},
            predictions=[
                {"position": first + i, "top": [{"id": t, "token": display(t), "prob": p} for t, p in zip(row_ids, row_p, strict=True)]}
                for i, (row_ids, row_p) in enumerate(zip(top_ids.tolist(), rounded(top_p, 6), strict=True))
            ],
        )  # fmt: skip

    return rt.cached("trace", lm, req, build)


def lens(rt: Runtime, req: LensRequest) -> bytes:
    lm = rt.lm(req.model)
    ablate = rt.check_heads(lm, req.ablate)
    ids = rt.ids(lm, req.prompt)
    req = req.model_copy(update={"ablate": ablate})

    def build() -> LensResponse:
        t = forward(rt, lm, ids, req, lens_k=rt.settings.lens_k)
        return LensResponse(model=lm.name, n=len(ids), tokens=t.tokens, lens={
            "k": t.lens_ids.shape[-1],
            "tokens": [[lm.tokenizer.displays(row) for row in layer] for layer in t.lens_ids.tolist()],
            "probs": rounded(t.lens_probs, 6),
        })  # fmt: skip

    return rt.cached("lens", lm, req, build)


def head(rt: Runtime, req: HeadRequest) -> bytes:
    lm = rt.lm(req.model)
    rt.check_heads(lm, [(req.layer, req.head)])
    ablate = rt.check_heads(lm, req.ablate)
    ids = rt.ids(lm, req.prompt)
    req = req.model_copy(update={"ablate": ablate})

    def build() -> HeadResponse:
        p = attention_of(rt, lm, ids, req)[req.layer, req.head]  # (n, n)
        scores = {k: None if v is None else rounded(v, 5) for k, v in head_scores(p).items()}
        # Built from the model's own numbers, so not validated again: at n = 512 validating the 262,144
        # floats would cost more than slicing them out of the cached forward.
        return HeadResponse.model_construct(
            model=lm.name, layer=req.layer, head=req.head, kv_head=req.head // lm.config.n_rep, n=len(ids),
            tokens=lm.tokenizer.displays(ids), scores=HeadScores(**scores),
            **({"exact": U16Payload(**encode_u16(p, req.causal))} if req.encoding == "u16" else {"pattern": rounded(p, 5)}),
        )  # fmt: skip

    return rt.cached("head", lm, req, build)


def ablation(rt: Runtime, req: AblationRequest) -> bytes:
    lm = rt.lm(req.model)
    ablate = rt.check_heads(lm, req.ablate)
    rt.check_top_k(req.top_k)
    ids = rt.ids(lm, req.prompt)
    n = len(ids)
    index = rt.check_index(req.index, n)
    req = req.model_copy(update={"ablate": ablate, "index": index})

    def build() -> AblationResponse:
        intact = temper(lm.logits(ids)[index], req.temperature)
        knocked = temper(lm.logits(ids, ablate=ablate, ablate_mode=req.mode)[index], req.temperature)
        return AblationResponse(
            model=lm.name, n=n, tokens=lm.tokenizer.displays(ids), index=index, ablate=ablate, mode=req.mode,
            **compare_distributions(lm, ids, index, intact, knocked, req.top_k),
        )  # fmt: skip

    return rt.cached("ablation", lm, req, build)
