"""The fixed probes every head is scored on, and `measure_roles`, the model card's head figures.

- prose: plain sentences a class would type (previous-token, first-token, self, local).
- repeat: R random tokens, then the same R again, one sequence per seed (induction, duplicate-token).
- random: the same first R random tokens, then R new ones: the same positions with nothing repeated,
  the control of every role (a position-only head scores here what it scores on the real probe).
- pronoun: two names in the middle of a sentence, a girl's and a boy's, then "She" or "He"
  (pronoun -> name); pronoun_control: the same with both names of the pronoun's gender.
- NAME_TASKS: sentences after which the model must say a name, the pronoun deciding which (the
  knock-out evidence of pronoun -> name).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from model import LanguageModel, act_name

from . import detectors as d
from .registry import ProbeRun

PROSE = (
    "Once upon a time there was a little girl called Lily. She lived in a small house near the woods "
    "with her mother and her dog. Every morning she walked to school with her friend Tom, and they "
    "talked about the birds, the trees and the big river. The cat sat on the mat and watched them go."
)
INDUCTION_LENGTH = 48  # tokens in each copy of the random sequence
INDUCTION_SEEDS = (0, 1, 2, 3)
PROBE_KEYS = ("prose", "repeat", "pronoun")  # the probes a page can draw a head on

# Names from the classroom corpus (training/corpus.py), each one token there: (a girl's, a boy's),
# and for the control a second name of the same gender as each.
NAME_PAIRS = (("Lily", "Tom"), ("Anna", "Ben"), ("Mia", "Max"), ("Emma", "Sam"))
SAME_GENDER = {"Lily": "Lucy", "Anna": "Zoe", "Mia": "Ruby", "Emma": "Ella",
               "Tom": "Leo", "Ben": "Jack", "Max": "Tim", "Sam": "Finn"}  # fmt: skip
# The names sit in the middle, never at the start, and every sentence is used in both name orders
# and with both pronouns: a head that looks at a fixed position gives the same attention to the
# names whichever pronoun ends the sentence, so its right-minus-wrong cancels to 0.
PRONOUN_TEMPLATES = (
    "Yesterday at the park {A} gave {B} a big cake. {P}",
    "One morning by the river {A} met {B} and smiled. {P}",
    "After school in the garden {A} showed {B} a red kite. {P}",
)
# After these the next word is a name, and the pronoun decides which: the one it does not refer to.
NAME_TASKS = (
    "One day {A} met {B} at the park. {P} said thank you to",
    "Last summer {A} saw {B} at the lake. {P} waved to",
)


@dataclass(frozen=True)
class NameSentence:
    text: str
    right: str  # the name the pronoun picks (probe) or the model should say (task)
    wrong: str  # the other name
    pronoun: str


def name_sentences(
    templates: Sequence[str], control: bool = False, say_other: bool = False
) -> Iterator[NameSentence]:
    """Every template x name pair x both orders x "She"/"He". `control`: the other name is replaced by
    one of the referent's gender, so the pronoun fits both names. `say_other`: the answer is the name
    the pronoun does not refer to (you thank or wave to the other person)."""
    for t in templates:
        for girl, boy in NAME_PAIRS:
            for order in ((girl, boy), (boy, girl)):
                for pronoun, referent in (("She", girl), ("He", boy)):
                    other = boy if referent == girl else girl
                    names = order
                    if control:
                        names = tuple(SAME_GENDER[referent] if x == other else x for x in order)
                        other = SAME_GENDER[referent]
                    text = t.format(A=names[0], B=names[1], P=pronoun)
                    right, wrong = (other, referent) if say_other else (referent, other)
                    yield NameSentence(text, right, wrong, pronoun)


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
    """R: two copies fit the context, and the random control's 2R distinct tokens fit the vocabulary."""
    return min(INDUCTION_LENGTH, lm.config.context_length // 2, lm.config.vocab_size // 2)


def prose_ids(lm: LanguageModel) -> list[int]:
    return lm.encode(PROSE)[: lm.config.context_length]


def name_positions(lm: LanguageModel, text: str, name: str) -> list[int]:
    """The positions of the tokens whose characters overlap the word `name` (its last occurrence)."""
    found = list(re.finditer(rf"\b{re.escape(name)}\b", text))
    if not found:
        raise ValueError(f"{name!r} is not a word of {text!r}")
    m = found[-1]
    enc = lm.tokenizer.hf.encode(text, add_special_tokens=False)
    return [p for p, (a, b) in enumerate(enc.offsets) if a < m.end() and b > m.start()]


def pronoun_probe(lm: LanguageModel, s: NameSentence) -> tuple[list[int], tuple[int, list[int], list[int]]]:
    """(ids, (pronoun position, right name positions, wrong name positions)) of one probe sentence.
    The pronoun's position is its first token: "She" and "He" may be cut into different numbers of
    tokens, but their first token sits at the same place, so a position-only head looks from the same
    place in both and its right-minus-wrong cancels exactly."""
    ids = lm.encode(s.text)
    q = name_positions(lm, s.text, s.pronoun)[0]
    return ids, (q, name_positions(lm, s.text, s.right), name_positions(lm, s.text, s.wrong))


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


def random_probe(vocab_size: int, seed: int, length: int) -> list[int]:
    """The repeat probe's first copy, then `length` other random tokens: nothing repeats."""
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(vocab_size, generator=g)[: 2 * length].tolist()


def sentence_run(lm: LanguageModel, sentences: Sequence[NameSentence]) -> ProbeRun:
    """All sentences in one pass, padded at the end: causal attention never looks ahead, so the padding
    cannot change what the pronoun (each sentence's last real token) attends to."""
    probes = [pronoun_probe(lm, s) for s in sentences]
    width = max(len(ids) for ids, _ in probes)
    padded = [ids + [ids[-1]] * (width - len(ids)) for ids, _ in probes]
    return ProbeRun(probe_attention(lm, padded), [ids for ids, _ in probes], [t for _, t in probes])


def run_probes(lm: LanguageModel) -> dict[str, ProbeRun]:
    """Every head's attention on each probe: one batched forward pass per probe."""
    R = repeat_length(lm)
    repeats = [induction_probe(lm.config.vocab_size, s, R) for s in INDUCTION_SEEDS]
    randoms = [random_probe(lm.config.vocab_size, s, R) for s in INDUCTION_SEEDS]
    prose = prose_ids(lm)
    return {
        "prose": ProbeRun(probe_attention(lm, [prose]), [prose]),
        "repeat": ProbeRun(probe_attention(lm, repeats), repeats),
        "random": ProbeRun(probe_attention(lm, randoms), randoms),
        "pronoun": sentence_run(lm, list(name_sentences(PRONOUN_TEMPLATES))),
        "pronoun_control": sentence_run(lm, list(name_sentences(PRONOUN_TEMPLATES, control=True))),
    }


def measure_roles(lm, seeds: tuple[int, ...] = INDUCTION_SEEDS, length: int = INDUCTION_LENGTH) -> dict:
    """Recompute a model's previous-token and induction scores (the registry's detectors) and the
    induction-probe losses from its own forward passes.

    `lm` is a `model.LanguageModel`. Returns plain numbers and (L, H) tables as nested lists rounded to
    4 decimals: the form the training script writes to the model card and the card test compares with.
    """
    L = lm.config.n_layer
    names = [act_name("pattern", i) for i in range(L)]
    _, cache = lm.run_with_cache(PROSE, names, logits=False)
    prev = d.previous_token_scores(patterns(cache, L)).mean(0)
    atts, first, second = [], [], []
    for seed in seeds:
        ids = induction_probe(lm.config.vocab_size, seed, length)
        logits, cache = lm.run_with_cache(ids, names)
        f, s = copy_losses(logits[0], ids, length)
        atts.append(patterns(cache, L)[0])
        first.append(f)
        second.append(s)
    ind_mean = d.induction_scores(torch.stack(atts), length).mean(0)

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
