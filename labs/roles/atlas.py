"""The head atlas: every head of a model scored for every role of the registry on the fixed probes,
and labelled by threshold. Computed once per loaded model."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import torch

from model import LanguageModel

from .probes import repeat_length, run_probes
from .registry import ROLES, label_heads


@dataclass(frozen=True)
class ProbeView:
    """One probe's tokens and every head's attention on it, for drawing a head on its probe."""

    key: str
    token_ids: list[int]
    tokens: list[str]
    attention: torch.Tensor  # (L, H, n, n)


@dataclass(frozen=True)
class HeadAtlas:
    model: str
    scores: dict[str, torch.Tensor]  # role key -> (L, H)
    labels: list[list[list[str]]]  # [layer][head] -> role keys
    probes: dict[str, ProbeView]
    repeat_length: int

    def heads_with(self, role: str) -> list[tuple[int, int]]:
        """Heads labelled with `role`, highest score first."""
        heads = [(la, h) for la, row in enumerate(self.labels) for h, keys in enumerate(row) if role in keys]
        return sorted(heads, key=lambda lh: -float(self.scores[role][lh]))

    def top_heads(self, role: str, k: int) -> list[tuple[int, int]]:
        s = self.scores[role]
        order = s.flatten().argsort(descending=True)[:k].tolist()
        return [divmod(i, s.shape[1]) for i in order]


def compute_atlas(lm: LanguageModel) -> HeadAtlas:
    """Score every head for every role on the probes (three batched forward passes)."""
    runs = run_probes(lm)
    scores = {r.key: r.detect(runs[r.probe]) for r in ROLES}
    views = {}
    for key, run in runs.items():
        ids = run.ids[0]  # the first sequence of each probe is the one drawn; cut the pronoun padding
        views[key] = ProbeView(key, ids, lm.tokenizer.displays(ids),
                               run.attention[0][..., : len(ids), : len(ids)].contiguous())  # fmt: skip
    return HeadAtlas(lm.name, scores, label_heads(scores), views, repeat_length(lm))


_atlases: weakref.WeakKeyDictionary[LanguageModel, HeadAtlas] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def head_atlas(lm: LanguageModel) -> HeadAtlas:
    """The model's atlas, computed once per loaded model (the lock keeps concurrent first requests
    from computing it twice)."""
    with _lock:
        atlas = _atlases.get(lm)
        if atlas is None:
            atlas = _atlases[lm] = compute_atlas(lm)
        return atlas


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"
