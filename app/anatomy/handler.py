"""The block anatomy: one prompt's numbers on the chapter's block diagram and whole-model pipeline."""

from __future__ import annotations

from labs.anatomy import BLOCK_STAGES, Step, anatomy, block_shapes
from labs.census import param_census
from labs.cost import arch, feed_forward_share
from model import LanguageModel

from ..predictions import token_probs
from ..runtime import Runtime
from ..wire import rounded
from . import text
from .schemas import AnatomyRequest, AnatomyResponse


def step(lm: LanguageModel, s: Step) -> dict:
    name, op = text.step_text(s, lm.config)
    out = {"name": name, "op": op, "shape": s.shape, "dims": s.dims, "layer": s.layer, "ids": s.ids,
           "norms": None if s.norms is None else rounded(s.norms, 4),
           "max_logit": None if s.max_logit is None else rounded(s.max_logit, 4)}  # fmt: skip
    if s.top_ids is not None:
        out["top"] = [
            token_probs(lm, ids, rounded(ps, 6))
            for ids, ps in zip(s.top_ids.tolist(), s.top_probs, strict=True)
        ]
    return out


def report(rt: Runtime, req: AnatomyRequest) -> bytes:
    lm = rt.lm(req.model)
    ids = rt.ids(lm, req.prompt)

    def build() -> AnatomyResponse:
        a = anatomy(lm, ids, req.top_k)
        cfg = lm.config
        return AnatomyResponse(
            model=lm.name, n=len(ids), tokens=lm.tokenizer.displays(ids), token_ids=ids, config=arch(cfg),
            norm=cfg.norm, mlp=cfg.mlp_kind, positional=cfg.positional,
            block={"stages": [{"key": k, "label": text.STAGE_LABELS[k]} for k in BLOCK_STAGES],
                   "norms": rounded(a.block_norms, 4), "shapes": block_shapes(cfg, len(ids))},
            pipeline=[step(lm, s) for s in a.pipeline],
            census=[{"key": c.key, "name": c.name, "live": c.live, "params": param_census(c.config),
                     "feed_forward_share": feed_forward_share(c.config)} for c in a.census],
        )  # fmt: skip

    return rt.cached("anatomy", lm, req, build)
