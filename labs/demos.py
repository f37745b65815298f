"""In-context demos a class can try, measured: does the model put the right next token first?

- counting: "1 2 3 4 5 1 2 3 4" -> " 5" (a sequence seen once, continued from context);
- a made-up name: "Zorbin Quell ... Zorbin" -> " Quell" (an induction head's job: the name was never in
  the training data, so only the context can supply it);
- indirect object: "When A and B went to the park, B gave a ball to" -> A rather than B, on names that are
  not in the training stories (Wang et al.'s IOI task; the hardest of the three for a small model).

None of these prompts occurs in the training corpus, the made-up first names never do, and the IOI
names are not among the stories' characters (a few occur in the Brown corpus).
"""

from __future__ import annotations

import torch

from model.lm import LanguageModel

COUNTING = ("1 2 3 4 5 1 2 3 4", " 5")
MADE_UP_NAMES = (
    ("Zorbin Quell lived by the sea. Every morning, Zorbin", " Quell"),
    ("Vantor Blisk sold lamps in the town. One day, Vantor", " Blisk"),
    ("Mira Tollwen found a map. That night, Mira", " Tollwen"),
)
# Names that do not occur in the generated stories (labs/stories.py NAMES), in (A, B) pairs.
IOI_PAIRS = (("Boris", "Vera"), ("Nadia", "Walter"), ("Greta", "Carlos"), ("Pablo", "Ingrid"),
             ("Helga", "Marco"), ("Otto", "Bianca"), ("Lena", "Igor"), ("Rita", "Victor"))  # fmt: skip
IOI_TEMPLATE = "When {a} and {b} went to the park, {b} gave a ball to"


@torch.inference_mode()
def next_token(lm: LanguageModel, prompt: str, expected: str) -> dict:
    """The model's first choice after `prompt`, and where the first token of `expected` ranks."""
    probs = lm.logits(lm.encode(prompt))[-1].float().softmax(-1)
    want = lm.encode(expected)[0]
    top = int(probs.argmax())
    return {
        "prompt": prompt,
        "expected": lm.tokenizer.decode([want]),
        "top": lm.tokenizer.decode([top]),
        "top_prob": round(float(probs[top]), 4),
        "expected_prob": round(float(probs[want]), 4),
        "expected_rank": int((probs > probs[want]).sum()) + 1,
        "right": top == want,
    }


@torch.inference_mode()
def indirect_object(lm: LanguageModel) -> dict:
    """P(A) and P(B) after each IOI sentence: A (the other person) is right, B (the giver) is wrong."""
    rows = []
    for a, b in IOI_PAIRS:
        probs = lm.logits(lm.encode(IOI_TEMPLATE.format(a=a, b=b)))[-1].float().softmax(-1)
        pa, pb = float(probs[lm.encode(" " + a)[0]]), float(probs[lm.encode(" " + b)[0]])
        rows.append({"a": a, "b": b, "p_a": round(pa, 4), "p_b": round(pb, 4)})
    return {
        "template": IOI_TEMPLATE,
        "sentences": rows,
        "mean_p_a": round(sum(r["p_a"] for r in rows) / len(rows), 4),
        "mean_p_b": round(sum(r["p_b"] for r in rows) / len(rows), 4),
        "a_more_likely": sum(r["p_a"] > r["p_b"] for r in rows),
    }


def measure_demos(lm: LanguageModel) -> dict:
    return {
        "counting": next_token(lm, *COUNTING),
        "names": [next_token(lm, p, e) for p, e in MADE_UP_NAMES],
        "indirect_object": indirect_object(lm),
    }
