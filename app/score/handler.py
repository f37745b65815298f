"""How one score is made: check the head and position, run the lab, build the response model."""

from __future__ import annotations

from labs.score import score_steps, shown_keys

from ..runtime import Runtime
from ..wire import rounded
from . import text
from .schemas import ScoreRequest, ScoreResponse

VECTOR_DECIMALS = 4  # vectors are drawn as colour strips; 4 decimals is more than hover needs
ROW_DECIMALS = 8  # weights and scores: enough to hold the row against the model's own within 1e-6


def score(rt: Runtime, req: ScoreRequest) -> bytes:
    lm = rt.lm(req.model)
    rt.check_heads(lm, [(req.layer, req.head)])
    ids = rt.ids(lm, req.prompt)
    n = len(ids)
    index = rt.check_index(req.index, n)
    req = req.model_copy(update={"index": index})

    def build() -> ScoreResponse:
        s = score_steps(lm, ids, req.layer, req.head, index, position=req.position, causal=req.causal)
        shown = shown_keys(s.weights, s.masked, req.vectors)
        cfg = lm.config
        group = list(range(s.kv_head * cfg.n_rep, (s.kv_head + 1) * cfg.n_rep))
        tokens = lm.tokenizer.displays(ids)
        dots, scaled = rounded(s.dots, ROW_DECIMALS), rounded(s.scaled, ROW_DECIMALS)
        weights, masked = rounded(s.weights, ROW_DECIMALS), s.masked.tolist()

        def vec(t, j):
            return None if t is None or j not in shown else rounded(t[j], VECTOR_DECIMALS)

        keys = [{"position": j, "token": tokens[j], "dot": dots[j], "scaled": scaled[j], "masked": masked[j],
                 "weight": weights[j], "k": vec(s.k, j), "k_rot": vec(s.k_rot, j), "v": vec(s.v, j)}
                for j in range(n)]  # fmt: skip
        n_visible = int((~s.masked).sum())
        hidden = float(s.weights.sum() - s.weights[shown].sum())
        return ScoreResponse(
            model=lm.name, n=n, tokens=tokens, layer=req.layer, head=req.head, kv_head=s.kv_head, group=group,
            n_head=cfg.n_head, n_kv_head=cfg.n_kv_head, index=index, d_head=s.d_head,
            sqrt_d=rounded(s.d_head**0.5, 6), rotary=s.rotary, position=req.position, causal=req.causal,
            q=rounded(s.q, VECTOR_DECIMALS), q_rot=None if s.q_rot is None else rounded(s.q_rot, VECTOR_DECIMALS),
            keys=keys, shown=shown, hidden_weight=rounded(max(hidden, 0.0), ROW_DECIMALS),
            z=rounded(s.model_z, VECTOR_DECIMALS), z_check=float((s.z - s.model_z).abs().max()),
            notes=text.notes(cfg, req.head, s.kv_head, group, s.rotary, req.position, req.causal,
                             len(shown), n_visible),
        )  # fmt: skip

    return rt.cached("score", lm, req, build)
