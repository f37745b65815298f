"""The fixed probes every head is scored on, and `measure_roles`, the model card's head figures.

- prose: plain sentences a class would type (previous-token, first-token, local).
- repeat: R random tokens, then the same R again, one sequence per seed (induction, duplicate-token).
- pronoun: short story sentences ending with a pronoun whose name is known (pronoun -> name).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from model import LanguageModel, act_name

from .registry import ROLE_BY_KEY, ProbeRun

PROSE = (
    "Once upon a time there was a little girl called Lily. She lived in a small house near the woods "
    "with her mother and her dog. Every morning she walked to school with her friend Tom, and they "
    "talked about the birds, the trees and the big river. The cat sat on the mat and watched them go."
)
INDUCTION_LENGTH = 48  # tokens in each copy of the random sequence
INDUCTION_SEEDS = (0, 1, 2, 3)
PROBE_KEYS = ("prose", "repeat", "pronoun")

# (text, name): the text ends with a pronoun that refers to `name`; two-name sentences make the head
# pick the right one, not just any name.
PRONOUN_PROBES: tuple[tuple[str, str], ...] = (
    ("Lily had a red ball. She", "Lily"),
    ("Tom found a little dog. He", "Tom"),
    ("Tom gave Lily a big cake. She", "Lily"),
    ("Lily saw Tom at the park. He", "Tom"),
    ("Anna went to the river with her mom. She", "Anna"),
    ("Ben and his cat sat on the mat. He", "Ben"),
)


def induction_probe(vocab_size: int, seed: int, length: int = INDUCTION_LENGTH) -> list[int]:
    """R random token ids (no repeats inside one copy), then the same R again."""
    g = torch.Generator().manual_seed(seed)
    first = torch.randperm(vocab_size, generator=g)[:length].tolist()
    return first + first


def copy_losses(logits: torch.Tensor, ids: list[int], length: int) -> tuple[float, float]:
    """Mean next-token loss on the first copy and on the second copy of an induction probe.

    Position p predicts token p + 1. First copy: tokens 1..R-1 (token 0 has no context).
    Second copy: tokens R+1..2R-1, every one predictable from the first copy.
    """
    target = torch.tensor(ids[1:], device=logits.device)
    losses = torch.nn.functional.cross_entropy(logits[:-1].float(), target, reduction="none")
    return losses[: length - 1].mean().item(), losses[length:].mean().item()


def repeat_length(lm: LanguageModel) -> int:
    return min(INDUCTION_LENGTH, lm.config.context_length // 2, lm.config.vocab_size)


def prose_ids(lm: LanguageModel) -> list[int]:
    return lm.encode(PROSE)[: lm.config.context_length]


def pronoun_probe(lm: LanguageModel, text: str, name: str) -> tuple[list[int], int, list[int]]:
    """(ids, pronoun position, name token positions): the tokens whose characters overlap the name."""
    enc = lm.tokenizer.hf.encode(text, add_special_tokens=False)
    start = text.index(name)
    end = start + len(name)
    keys = [p for p, (a, b) in enumerate(enc.offsets) if a < end and b > start]
    return list(enc.ids), len(enc.ids) - 1, keys


def patterns(cache: dict[str, torch.Tensor], n_layer: int) -> torch.Tensor:
    """(B, L, H, n, n) float attention on the CPU from a `run_with_cache` cache of every pattern."""
    return torch.stack([cache[act_name("pattern", i)] for i in range(n_layer)], 1).float().cpu()


def probe_attention(lm: LanguageModel, batch: Sequence[Sequence[int]]) -> torch.Tensor:
    """(B, L, H, n, n) attention of equal-length id sequences in one forward pass, nothing else kept."""
    L = lm.config.n_layer
    _, cache = lm.run_with_cache(
        [list(s) for s in batch], [act_name("pattern", i) for i in range(L)], logits=False
    )
    return patterns(cache, L)


def run_probes(lm: LanguageModel) -> dict[str, ProbeRun]:
    """Every head's attention on each probe: three batched forward passes."""
    R = repeat_length(lm)
    repeats = [induction_probe(lm.config.vocab_size, s, R) for s in INDUCTION_SEEDS]
    prose = prose_ids(lm)
    sentences = [pronoun_probe(lm, text, name) for text, name in PRONOUN_PROBES]
    width = max(len(ids) for ids, _, _ in sentences)
    # One pass for all sentences, padded at the end: causal attention never looks ahead, so the padding
    # cannot change what the pronoun (each sentence's last real token) attends to.
    padded = [ids + [ids[-1]] * (width - len(ids)) for ids, _, _ in sentences]
    return {
        "prose": ProbeRun(probe_attention(lm, [prose]), [prose]),
        "repeat": ProbeRun(probe_attention(lm, repeats), repeats),
        "pronoun": ProbeRun(probe_attention(lm, padded), [ids for ids, _, _ in sentences],
                            [(q, keys) for _, q, keys in sentences]),
    }  # fmt: skip


def measure_roles(lm, seeds: tuple[int, ...] = INDUCTION_SEEDS, length: int = INDUCTION_LENGTH) -> dict:
    """Recompute a model's previous-token and induction scores (the registry's detectors) and the
    induction-probe losses from its own forward passes.

    `lm` is a `model.LanguageModel`. Returns plain numbers and (L, H) tables as nested lists rounded to
    4 decimals: the form the training script writes to the model card and the card test compares with.
    """
    L = lm.config.n_layer
    names = [act_name("pattern", i) for i in range(L)]
    _, cache = lm.run_with_cache(PROSE, names, logits=False)
    prose_ids_ = lm.ids_of(PROSE)
    prev = ROLE_BY_KEY["previous_token"].detect(ProbeRun(patterns(cache, L), [prose_ids_]))
    batch, atts, first, second = [], [], [], []
    for seed in seeds:
        ids = induction_probe(lm.config.vocab_size, seed, length)
        logits, cache = lm.run_with_cache(ids, names)
        f, s = copy_losses(logits[0], ids, length)
        batch.append(ids)
        atts.append(patterns(cache, L)[0])
        first.append(f)
        second.append(s)
    ind_mean = ROLE_BY_KEY["induction"].detect(ProbeRun(torch.stack(atts), batch))

    def best(table: torch.Tensor) -> dict:
        flat = int(table.argmax())
        layer, head = divmod(flat, table.shape[1])
        return {"layer": layer, "head": head, "score": round(float(table[layer, head]), 4)}

    return {
        "previous_token": best(prev),
        "induction": best(ind_mean),
        "previous_token_table": [[round(float(x), 4) for x in row] for row in prev],
        "induction_table": [[round(float(x), 4) for x in row] for row in ind_mean],
        "first_copy_loss": round(sum(first) / len(first), 4),
        "second_copy_loss": round(sum(second) / len(second), 4),
    }
