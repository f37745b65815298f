"""The head atlas: every head of a model scored for every role of the registry on the fixed probes
and their controls, the candidates knocked out, and labelled only where that evidence holds.
Computed once per loaded model."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import torch

from model import LanguageModel

from .knockout import Evidence, role_evidence
from .probes import PROBE_KEYS, repeat_length, run_probes
from .registry import ROLE_BY_KEY, ROLES, head_name, label_heads

__all__ = ["HeadAtlas", "ProbeView", "compute_atlas", "head_atlas", "head_name"]


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
    scores: dict[str, torch.Tensor]  # role key -> (L, H) on the probe
    controls: dict[str, torch.Tensor]  # role key -> (L, H) on the control
    nets: dict[str, torch.Tensor]  # role key -> (L, H): what the threshold is compared with
    candidates: list[list[list[str]]]  # [layer][head] -> roles whose probe and control it passes
    evidence: dict[str, Evidence | None]  # role key -> its candidates' knock-out (None: no candidate)
    labels: list[list[list[str]]]  # [layer][head] -> roles it earned (candidate and evidence holds)
    probes: dict[str, ProbeView]
    repeat_length: int

    def heads_with(self, role: str) -> list[tuple[int, int]]:
        """Heads labelled with `role`, highest net score first."""
        return self._sorted(role, self.labels)

    def candidates_for(self, role: str) -> list[tuple[int, int]]:
        """Heads that pass the role's probe and control, labelled or not."""
        return self._sorted(role, self.candidates)

    def _sorted(self, role: str, table: list[list[list[str]]]) -> list[tuple[int, int]]:
        heads = [(la, h) for la, row in enumerate(table) for h, keys in enumerate(row) if role in keys]
        return sorted(heads, key=lambda lh: -float(self.nets[role][lh]))

    def closest(self, role: str) -> tuple[int, int]:
        """The head nearest to the role: its best candidate, else the best head by net score that does
        not have the sharper role this one yields to (a previous-token head is not "almost local")."""
        cands = self.candidates_for(role)
        if cands:
            return cands[0]
        sharper = ROLE_BY_KEY[role].yields_to
        order = self.top_heads(role, self.nets[role].numel())
        return next((lh for lh in order if sharper not in self.candidates[lh[0]][lh[1]]), order[0])

    def top_heads(self, role: str, k: int) -> list[tuple[int, int]]:
        """The `k` heads with the highest net score, labelled or not."""
        s = self.nets[role]
        order = s.flatten().argsort(descending=True, stable=True)[:k].tolist()
        return [divmod(i, s.shape[1]) for i in order]


def compute_atlas(lm: LanguageModel) -> HeadAtlas:
    """Score every head for every role on the probes (one batched pass per probe), then knock each
    role's candidates out together (a few passes per role)."""
    runs = run_probes(lm)
    scores = {r.key: r.detect(runs) for r in ROLES}
    controls = {r.key: r.control(runs) for r in ROLES}
    nets = {r.key: r.net(scores[r.key], controls[r.key]) for r in ROLES}
    candidates = label_heads(nets)
    evidence: dict[str, Evidence | None] = {}
    for r in ROLES:
        heads = [(la, h) for la, row in enumerate(candidates) for h, keys in enumerate(row) if r.key in keys]
        evidence[r.key] = role_evidence(lm, r.evidence, heads) if heads else None
    labels = [[[k for k in keys if evidence[k] is not None and evidence[k].earned] for keys in row]
              for row in candidates]  # fmt: skip
    views = {}
    for key in PROBE_KEYS:
        ids = runs[key].ids[0]  # the first sequence of each probe is the one drawn; cut the pronoun padding
        views[key] = ProbeView(key, ids, lm.tokenizer.displays(ids),
                               runs[key].attention[0][..., : len(ids), : len(ids)].contiguous())  # fmt: skip
    return HeadAtlas(lm.name, scores, controls, nets, candidates, evidence, labels, views, repeat_length(lm))


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
