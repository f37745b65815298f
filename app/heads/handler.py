"""The head atlas: roles scored once per model (labs/roles), each head on its probe, role scores on a
prompt, and knock-outs with the sentences a class reads."""

from __future__ import annotations

from labs.roles.atlas import head_atlas
from labs.roles.detectors import LOCAL_WINDOW
from labs.roles.knockout import BEHAVIOURS, RANDOM_RATIO, effect_from_logits, repeat_knockout
from labs.roles.registry import HEAD_SCORES, ROLE_BY_KEY, ROLES, prompt_scores

from ..errors import BadInput
from ..predictions import compare_distributions
from ..runtime import Runtime
from ..trace.handler import attention_of
from ..trace.schemas import Switches
from ..wire import encode_attention, rounded
from . import text
from .schemas import (
    HeadAblationRequest,
    HeadAblationResponse,
    HeadsQuery,
    HeadsResponse,
    ProbeResponse,
    PromptRolesRequest,
    PromptRolesResponse,
)


def roles(rt: Runtime, model: str | None) -> bytes:
    lm = rt.lm(model)

    def build() -> HeadsResponse:
        atlas = head_atlas(lm)

        def scored(layer: int, head: int, role: str) -> dict:
            return {"layer": layer, "head": head, "score": rounded(atlas.nets[role][layer, head].item(), 4)}

        def evidence(key: str) -> dict | None:
            ev = atlas.evidence[key]
            if ev is None:
                return None
            b = BEHAVIOURS[ev.behaviour]
            return {"behaviour": b.key, "measure": b.name, "unit": b.unit, "heads": ev.heads,
                    "intact": rounded(ev.intact, 4), "ablated": rounded(ev.ablated, 4),
                    "effect": rounded(ev.effect, 4),
                    "random_effect": None if ev.random_effect is None else rounded(ev.random_effect, 4),
                    "min_effect": ev.min_effect, "random_ratio": RANDOM_RATIO, "earned": ev.earned}  # fmt: skip

        roles = [
            {"key": r.key, "name": r.name, "label": r.label, "threshold": r.threshold, "probe": r.probe,
             "explanation": r.explanation, "how": r.how, "control_how": r.control_how, "about": r.about,
             "scores": rounded(atlas.scores[r.key], 4), "controls": rounded(atlas.controls[r.key], 4),
             "nets": rounded(atlas.nets[r.key], 4),
             "candidates": [scored(la, h, r.key) for la, h in atlas.candidates_for(r.key)],
             "evidence": evidence(r.key), "status": text.role_status(atlas, r),
             "heads": [scored(la, h, r.key) for la, h in atlas.heads_with(r.key)],
             "best": scored(*atlas.closest(r.key), r.key)}
            for r in ROLES
        ]  # fmt: skip
        cfg = lm.config
        probes = [{"key": k, "title": text.probe_title(k, atlas.repeat_length), "n": len(v.token_ids)}
                  for k, v in atlas.probes.items()]  # fmt: skip
        head_scores = [{"key": s.key, "name": s.name, "explanation": s.explanation} for s in HEAD_SCORES]
        return HeadsResponse(model=lm.name, n_layer=cfg.n_layer, n_head=cfg.n_head, n_kv_head=cfg.n_kv_head,
                             roles=roles, labels=atlas.labels, probes=probes, repeat_length=atlas.repeat_length,
                             local_window=LOCAL_WINDOW, head_scores=head_scores, sink_fact=text.sink_fact(atlas),
                             head_notes=[[text.head_note(atlas, la, h) for h in range(cfg.n_head)]
                                         for la in range(cfg.n_layer)])  # fmt: skip

    return rt.cached("heads", lm, HeadsQuery(model=model), build)


def probe(rt: Runtime, model: str | None, probe: str) -> bytes:
    lm = rt.lm(model)

    def build() -> ProbeResponse:
        atlas = head_atlas(lm)
        view = atlas.probes[probe]
        return ProbeResponse(model=lm.name, probe=probe, title=text.probe_title(probe, atlas.repeat_length),
                             n=len(view.token_ids), tokens=view.tokens, token_ids=view.token_ids,
                             attention=encode_attention(view.attention, causal=True))  # fmt: skip

    return rt.cached("head_probe", lm, HeadsQuery(model=model, probe=probe), build)


def prompt_roles(rt: Runtime, req: PromptRolesRequest) -> bytes:
    lm = rt.lm(req.model)
    ids = rt.ids(lm, req.prompt)

    def build() -> PromptRolesResponse:
        # The page asks right after the prompt's trace: its attention is usually still cached, so this
        # costs the scoring only, not a second forward queued in front of the next keystroke's trace.
        scores = prompt_scores(attention_of(rt, lm, ids, Switches(prompt=req.prompt, model=req.model)), ids)
        return PromptRolesResponse(model=lm.name, n=len(ids), tokens=lm.tokenizer.displays(ids),
                                   scores={k: None if v is None else rounded(v, 4) for k, v in scores.items()})  # fmt: skip

    return rt.cached("head_prompt", lm, req, build)


def role_heads(rt: Runtime, lm, role: str) -> list[tuple[int, int]]:
    """Every head labelled `role`; a 422 with the best candidate when none is."""
    atlas = rt.run(lambda: head_atlas(lm))
    heads = atlas.heads_with(role)
    if not heads:
        raise BadInput(text.no_head_clears(lm.name, atlas, ROLE_BY_KEY[role]))
    return heads


def ablation(rt: Runtime, req: HeadAblationRequest) -> bytes:
    lm = rt.lm(req.model)
    rt.check_top_k(req.top_k)
    ids = rt.ids(lm, req.prompt)
    heads = rt.check_heads(lm, req.heads or []) if req.role is None else role_heads(rt, lm, req.role)
    req = req.model_copy(update={"heads": heads})

    def build() -> HeadAblationResponse:
        intact, knocked = lm.logits(ids)[-1], lm.logits(ids, ablate=heads, ablate_mode=req.mode)[-1]
        rep = repeat_knockout(lm, heads, req.mode, seed=req.seed)
        cmp = compare_distributions(lm, ids, len(ids) - 1, intact, knocked, req.top_k)
        effect = effect_from_logits(lm, ids, intact, knocked, req.top_k)
        r4 = lambda x: None if x is None else rounded(x, 4)  # noqa: E731
        prompt = {"tokens": effect.tokens, "index": len(ids) - 1, "intact": cmp["intact"],
                  "ablated": cmp["ablated"], "rows": cmp["rows"], "kl": cmp["kl"],
                  "sentence": text.next_token_sentence(heads, effect)}  # fmt: skip
        repeat = {"length": rep.length, "first_copy_loss": r4(rep.first), "second_copy_loss": r4(rep.second),
                  "second_copy_loss_ablated": r4(rep.second_ablated),
                  "random": [{"heads": s, "second_copy_loss": r4(x)}
                             for s, x in zip(rep.random_heads, rep.second_random, strict=True)],
                  "second_copy_loss_random": r4(rep.second_random_median),
                  "sentence": text.repeat_sentence(heads, rep)}  # fmt: skip
        return HeadAblationResponse(model=lm.name, heads=heads, role=req.role, mode=req.mode, prompt=prompt,
                                    repeat=repeat)  # fmt: skip

    return rt.cached("head_ablation", lm, req, build)
