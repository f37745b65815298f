"""The classroom model's final evaluation and its model card.

Every figure in MODEL_CARD.md comes from `evaluate()` on the finished weights, run through the
same explicit-attention path the app uses; the card embeds them as a JSON block that
`tests/training/test_classroom_model.py` recomputes and compares.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from labs.demos import measure_demos
from labs.position_probe import position_probe
from labs.roles.atlas import compute_atlas, head_name
from labs.roles.probes import PROSE, measure_roles
from model.hooks import Run
from model.lm import LanguageModel
from model.loading import load

from . import corpus, vocab
from .data import NATURAL_WEIGHTS, tokenize_corpus
from .hint import HINTED_HEAD

PROMPTS = (
    "Once upon a time",
    "The cat sat on the",
    "Lily had a red ball. She",
    "Tom and Lily went to the park. Tom",
    "In the beginning",
    "The jury said that",
)
COMPLETION_TOKENS = 16
VAL_ROWS = 8  # windows of context length per corpus part
HELD_OUT_CHARS = (
    16_000  # bits per byte are measured on the first this many characters of each part's held-out text
)
PURE_SELF = 0.95  # a head that puts this much of its attention on the token itself does nothing else
FIGURES_RE = re.compile(r"<!-- figures -->\n```json\n(.*?)\n```", re.S)

# What was tried, with the outcomes measured at the time: read when the card is written, so the log
# can be completed while the final run trains.
HINTED = head_name(*HINTED_HEAD)
EXPERIMENT_LOG = Path(__file__).with_name("training_log.md")


def greedy(lm: LanguageModel, prompt: str, n: int = COMPLETION_TOKENS) -> str:
    ids = lm.encode(prompt)
    with torch.inference_mode():
        for _ in range(n):
            ids.append(int(lm.logits(ids[-lm.config.context_length :])[-1].argmax()))
    return lm.tokenizer.decode(ids[len(lm.encode(prompt)) :])


def text_loss(lm: LanguageModel, ids: list[int], position: bool = True) -> float:
    logits = lm.logits(ids, position=position)
    return F.cross_entropy(logits[:-1], torch.tensor(ids[1:])).item()


@torch.inference_mode()
def part_losses(lm: LanguageModel, s: np.ndarray, rows: int = VAL_ROWS) -> tuple[float, float]:
    """Held-out loss of one corpus part with position on and off (windows of context length)."""
    T = lm.config.context_length
    n = min(rows, (len(s) - 1) // T)
    x = torch.from_numpy(s[: n * T + 1].astype(np.int64))
    idx, tgt = x[:-1].view(n, T), x[1:].view(n, T)
    out = []
    for position in (True, False):
        logits = lm.net(idx, Run(position=position))
        out.append(round(F.cross_entropy(logits.flatten(0, 1), tgt.flatten()).item(), 4))
    return out[0], out[1]


def held_out_texts(corpus_dir: Path) -> dict[str, str]:
    """The same held-out text for every tokenizer: each part's first validation documents, cut to
    HELD_OUT_CHARS characters."""
    return {p: "\n\n".join(corpus.read_part(corpus_dir, p, "val"))[:HELD_OUT_CHARS] for p in corpus.PARTS}


@torch.inference_mode()
def bits_per_byte(lm: LanguageModel, text: str) -> float:
    """Next-token loss in bits per byte of text, comparable across tokenizers: the text in windows of
    context length, every token after a window's first predicted, bits summed over the UTF-8 bytes of
    the tokens predicted."""
    ids, T = lm.encode(text), lm.config.context_length
    bits, nbytes = 0.0, 0
    for i in range(0, len(ids) - 1, T):
        w = ids[i : i + T]
        if len(w) < 2:
            break
        logits = lm.logits(w).float()
        bits += F.cross_entropy(logits[:-1], torch.tensor(w[1:]), reduction="sum").item() / np.log(2)
        nbytes += len(lm.tokenizer.decode(w[1:]).encode())
    return round(bits / nbytes, 4)


def atlas_figures(lm: LanguageModel) -> dict:
    """What the head atlas labels (probe, control and knock-out, `labs/roles`), per head and per layer,
    and the heads that only look at themselves."""
    atlas = compute_atlas(lm)
    labels = atlas.labels
    roles = sorted({k for row in labels for keys in row for k in keys})
    shares = {f"L{la}": {k: round(sum(k in keys for keys in row) / len(row), 4) for k in roles if any(k in keys for keys in row)}
              for la, row in enumerate(labels)}  # fmt: skip
    self_scores = atlas.scores["self"]
    pure_self = [head_name(la, h) for la in range(self_scores.shape[0]) for h in range(self_scores.shape[1])
                 if float(self_scores[la, h]) >= PURE_SELF]  # fmt: skip
    return {
        "labels": labels,
        "roles": roles,
        "layer_shares": shares,
        "max_layer_share": max((x for row in shares.values() for x in row.values()), default=0.0),
        "pure_self_heads": pure_self,
    }


def parameter_counts(lm: LanguageModel) -> dict[str, int]:
    net = lm.net
    counts = {"embedding (tied with unembedding)": net.embed.weight.numel()}
    if net.cfg.positional == "learned":
        counts["position embedding"] = net.pos_embed.weight.numel()
    for i, b in enumerate(net.blocks):
        counts[f"block {i} attention"] = sum(p.numel() for p in b.attn.parameters())
        counts[f"block {i} feed-forward"] = sum(p.numel() for p in b.mlp.parameters())
        counts[f"block {i} norms"] = sum(p.numel() for p in (*b.ln1.parameters(), *b.ln2.parameters()))
    counts["final norm"] = sum(p.numel() for p in net.ln_final.parameters())
    counts["total"] = sum(p.numel() for p in net.parameters())
    return counts


def hinted_head(lm: LanguageModel) -> tuple[int, int] | None:
    """The head the training hint asked to look at the previous token, if the recipe had a hint."""
    return HINTED_HEAD if lm.config.arch == "llama" and not lm.config.no_position else None


def unaided_previous_token(roles: dict, hinted: tuple[int, int] | None) -> dict:
    """The best previous-token head the hint did not ask for: what training on text alone produced."""
    score, layer, head = max((x, la, h) for la, row in enumerate(roles["previous_token_table"])
                             for h, x in enumerate(row) if (la, h) != hinted)  # fmt: skip
    return {"layer": layer, "head": head, "score": score}


def bars_met(f: dict, arch: str) -> dict[str, bool]:
    """The issue's bars (#17), each recomputable from `measure_fixed`'s figures. Both models: a
    previous-token head learned without the hint, an induction head, copying, the two in-context demos
    and the tokenizer's words. The Llama-style model also: variety in its head atlas."""
    roles, atlas, demos, tok = f["roles"], f["atlas"], f["demos"], f["tokenizer"]
    bars = {
        "previous_token": f["previous_token_unaided"]["score"] >= (0.6 if arch == "llama" else 0.5),
        "induction": sum(x >= 0.5 for row in roles["induction_table"] for x in row)
        >= (2 if arch == "llama" else 1),
        "copy_ratio": roles["second_copy_loss"] < roles["first_copy_loss"] / 3,
        "counting": demos["counting"]["right"],
        "made_up_name": demos["names"][0]["right"],
        "words": tok["preset_words_split"] == [] and tok.get("top_words_single", 1.0) >= 0.95,
    }
    if arch == "llama":
        bars["roles"] = len(atlas["roles"]) >= 4
        bars["role_spread"] = atlas["max_layer_share"] <= 0.5
        bars["self_heads"] = len(atlas["pure_self_heads"]) <= 2
    return bars


BAR_TEXT = {
    "previous_token": "a previous-token head learned without the hint: ≥ 0.6 (Llama-style), ≥ 0.5 (GPT-2-style)",
    "induction": "induction heads scoring ≥ 0.5: at least two (Llama-style), one (GPT-2-style)",
    "copy_ratio": "second-copy loss below a third of the first on the induction probe",
    "counting": "`1 2 3 4 5 1 2 3 4` → ` 5` first",
    "made_up_name": "`Zorbin Quell ... Zorbin` → ` Quell` first",
    "words": "≥ 95% of the 1,000 most frequent corpus words and every word of the class demos are one token",
    "roles": "at least 4 distinct roles in the head atlas",
    "role_spread": "no role held by more than half of any layer's heads",
    "self_heads": f"at most two pure self heads (≥ {PURE_SELF} of attention on the token itself)",
}


NOPE_TWIN = (
    "The no-position twin of the `classroom` model: the same script, sources, tokenizer, size, schedule and "
    "Llama-style block with RoPE taken out, and no hint (a layer-0 head with no position cannot single out the "
    "previous token). It ships for the Position page: its only source of order is the causal mask, and the "
    "position probe below measures how much order that gives back.\n\n"
)


def measure_fixed(lm: LanguageModel) -> dict:
    """The figures a test can recompute without the corpus: head roles, probe losses, PROSE losses,
    completions, and which bars they meet."""
    ids = lm.encode(PROSE)
    roles = measure_roles(lm)
    f = {
        "roles": roles,
        "previous_token_unaided": unaided_previous_token(roles, hinted_head(lm)),
        "atlas": atlas_figures(lm),
        "demos": measure_demos(lm),
        "tokenizer": {"preset_words_split": [w for w in vocab.preset_words() if len(lm.encode(w)) != 1]},
        "prose_loss": {
            "position_on": round(text_loss(lm, ids, True), 4),
            "position_off": round(text_loss(lm, ids, False), 4),
        },  # fmt: skip
        "completions": {p: greedy(lm, p) for p in PROMPTS},
        "position_probe": probe_figures(lm),
    }
    f["bars_met"] = bars_met(f, lm.config.arch)
    return f


def probe_figures(lm: LanguageModel) -> dict:
    """Where the residual stream holds each token's position (labs/position_probe.py), mask on and off."""
    p = position_probe(lm)

    def curve(points):
        return [{"name": x.name, "r2": round(x.r2, 4), "error": round(x.error, 2)} for x in points]

    return {"window": p.window, "windows": p.windows, "chance_error": round(p.chance_error, 2),
            "causal": curve(p.causal), "no_mask": curve(p.no_mask)}  # fmt: skip


def evaluate(lm: LanguageModel, val_streams: dict[str, np.ndarray], corpus_dir: Path) -> dict:
    """measure_fixed, plus what needs the corpus: validation losses, bits per byte on the held-out text,
    and the share of the corpus's most frequent words that are one token (the bar is re-judged with it)."""
    figures = measure_fixed(lm)
    docs = [d for p in corpus.PARTS for d in corpus.read_part(corpus_dir, p, "train")]
    figures["tokenizer"] = {**vocab.coverage(lm.tokenizer, docs), **figures["tokenizer"]}
    figures["tokenizer"]["top_word_list"] = vocab.top_words(docs)
    figures["bars_met"] = bars_met(figures, lm.config.arch)
    figures["bits_per_byte"] = {p: bits_per_byte(lm, t) for p, t in held_out_texts(corpus_dir).items()}
    figures["validation"] = {}
    for part, s in val_streams.items():
        on, off = part_losses(lm, s)
        figures["validation"][part] = {"tokens": int(min(VAL_ROWS * lm.config.context_length, len(s) - 1)),
                                       "position_on": on, "position_off": off}  # fmt: skip
    figures["parameters"] = parameter_counts(lm)
    return figures


def read_figures(card: str) -> dict:
    m = FIGURES_RE.search(card)
    if not m:
        raise ValueError("the model card has no figures block")
    return json.loads(m.group(1))


def table(rows: list[list[float]]) -> str:
    H = len(rows[0])
    lines = ["| layer | " + " | ".join(f"H{h}" for h in range(H)) + " |", "|---" * (H + 1) + "|"]
    lines += [f"| L{i} | " + " | ".join(f"{x:.2f}" for x in row) + " |" for i, row in enumerate(rows)]
    return "\n".join(lines)


def hint_text(r: dict) -> str:
    if not r.get("hint_steps"):
        return "No hint of any kind: nothing but next-token prediction on the rows above shaped the heads."
    return (
        f"For the first {r['hint_steps']} steps an auxiliary loss (weight {r['hint_weight']:g}) asked head {HINTED} to "
        "attend to the previous token (`training/hint.py` says why: with RoPE the induction circuit "
        "needs a previous-token head in an early layer and does not find one on its own in this budget). "
        "No head was asked to do induction; after the hint the loss is next-token prediction only."
    )


def scaffold_text(r: dict) -> str:
    """The recipe's other training-only knobs, which change what each head learns from, never the forward
    of the shipped model."""
    text = ""
    if r.get("hint_dropout"):
        text += (f" After the hint, head {HINTED} was knocked out on {r['hint_dropout']:.0%} of the rows of every "
                 "step (chosen at random), so the copy loss on those rows could only fall if another head brought "
                 "the previous token, learned without any hint.")  # fmt: skip
    n_free = r.get("copy_free_heads", 0)
    if n_free:
        which = "the last head of each K/V group" if r.get("copy_free_spread") else f"the last {n_free} heads"
        text += (f" On rows holding a copy episode, {which} of every layer from layer "
                 f"{r.get('copy_free_first_layer', 0)} up ran but got no gradient (`training/free_heads.py`), so "
                 "they learned from real text alone.")  # fmt: skip
    if r.get("copy_dropout"):
        heads = "copying heads" if n_free else "heads"
        text += (f" After the hint, the {heads} of layer {r.get('copy_dropout_layer', 1)} were knocked out on "
                 f"{r['copy_dropout']:.0%} of the copy rows (chosen at random; `training/head_dropout.py`), so on "
                 "those rows the copy could only be made by heads of another layer.")  # fmt: skip
    return text


def short_text(r: dict) -> str:
    """The copy phase at the start of training, as the recipe ran it."""
    rows = (f"{r.get('short_batch', 0)} short rows x {r.get('short_seq', 0)} tokens (one random span repeated to "
            "fill the row, loss on the repeats)")  # fmt: skip
    pure, steps = r.get("short_pure", 0), r.get("short_steps", 0)
    text = f"The first {pure} steps train on {rows} only; " if pure else ""
    text += (f"{'then up to' if pure else 'in the first'} step {steps}, one step in {r.get('short_every', 1)} "
             f"trains on {'such rows' if pure else rows} and the others on the mixture.")  # fmt: skip
    if r.get("early_span_vocab"):
        text += (f" For the first {r['early_span_steps']} steps the random spans draw from the first "
                 f"{r['early_span_vocab']} token ids only (a small alphabet, as in the toys where learned "
                 "positions found the copying circuit), then ")  # fmt: skip
        every = r.get("span_double_every", 0)
        text += (f"from twice as many ids every {every} steps until they span the whole vocabulary "
                 "(so the circuit found on the small alphabet carries over)." if every
                 else "from the whole vocabulary.")  # fmt: skip
        keep = r.get("early_span_keep", 0)
        if keep:
            text += f" After that, {keep:.0%} of the short rows keep the first alphabet."
    return text


def total_text(tr: dict) -> str:
    total = tr.get("total_minutes")  # None: the card was rewritten from a run that stopped before its card
    return f", {total} min for the whole run including evaluation" if total is not None else ""


def corpus_text(tr: dict) -> str:
    minutes = tr.get("corpus_minutes")  # None: this run found them cached
    what = "the corpus was" if tr.get("tokenizer") == "shared" else "the corpus and tokenizer were"
    if minutes is None:
        return f"{what} already built (cached by an earlier run), so not in that time."
    return f"{minutes} min of that built {what.rsplit(' ', 1)[0]}."


def tokenizer_source(tr: dict) -> str:
    """Where the tokenizer came from (a run before the shared tokenizer trained its own on the corpus)."""
    if tr.get("tokenizer") == "shared":
        return ("The tokenizer is the file every shipped classroom model shares (this run read the corpus "
                "with it, so its ids mean the same words as theirs).")  # fmt: skip
    return "The tokenizer was trained on the corpus (`training/vocab.py` says how)."


def corpus_size_text(tr: dict) -> str:
    chars = tr.get("corpus_chars")  # None: a run before session 13, which also predates the Bible fix
    if not chars:
        return ("This run read the corpus as built before the Bible fix of session 13: most of the Bible "
                "part was then one document with its verse references and a psalm title before every "
                "verse left in (training_log.md, session 13). The other parts were the same.")  # fmt: skip
    sizes = ", ".join(f"{p} {n / 1e6:.2f}M" for p, n in chars.items())
    return f"This run's corpus, in characters: {sizes}."


def copy_schedule(r: dict) -> str:
    if r["copy_hold"] > 0:
        return f"{r['copy_start']:.0%} for the first {r['copy_hold']:.0%} of the steps, then falling linearly to {r['copy_end']:.0%}"
    return f"{r['copy_start']:.0%} at the start, falling linearly to {r['copy_end']:.0%} at the last step"


def architecture_text(cfg, size_mb: float, dtype: str) -> str:
    common = (f"{cfg.n_layer} layers, d_model {cfg.d_model}, head size {cfg.hd}, tied embeddings, vocabulary "
              f"{cfg.vocab_size} (byte-level BPE, `training/vocab.py`), context {cfg.context_length} tokens. "
              f"Weights: {dtype} safetensors, {size_mb:.1f} MB (the app computes in float32 on CPU).")  # fmt: skip
    if cfg.arch == "llama":
        position = ("no positional encoding at all (no RoPE, no position vectors: order only from the causal "
                    "mask)") if cfg.no_position else f"RoPE (base {cfg.rope_base:g})"  # fmt: skip
        return (f"Llama-style: {cfg.n_head} query heads sharing {cfg.n_kv_head} key/value heads (grouped-query "
                f"attention, groups of {cfg.n_rep}), SwiGLU feed-forward {cfg.d_ff}, RMSNorm, {position}, "
                f"pre-norm. {common}")  # fmt: skip
    return (f"GPT-2-style: {cfg.n_head} heads of full multi-head attention, GELU feed-forward {cfg.d_ff}, "
            f"LayerNorm, learned position embeddings, pre-norm. {common}")  # fmt: skip


def labels_table(labels: list[list[list[str]]]) -> str:
    H = len(labels[0])
    lines = ["| layer | " + " | ".join(f"H{h}" for h in range(H)) + " |", "|---" * (H + 1) + "|"]
    lines += [
        f"| L{i} | " + " | ".join(", ".join(keys) or "·" for keys in row) + " |"
        for i, row in enumerate(labels)
    ]
    return "\n".join(lines)


def demos_text(demos: dict) -> str:
    rows = [demos["counting"], *demos["names"]]
    lines = ["| prompt | expected | model's first choice | P(expected) | rank |", "|---|---|---|---|---|"]
    lines += [f"| `{d['prompt']}` | `{d['expected']!r}` | `{d['top']!r}` {d['top_prob']:.1%} | {d['expected_prob']:.1%} | "
              f"{d['expected_rank']} |" for d in rows]  # fmt: skip
    ioi = demos["indirect_object"]
    lines += ["", f"Indirect object, {len(ioi['sentences'])} sentences `{ioi['template']}` with names not in the "
              f"training stories: P(A) {ioi['mean_p_a']:.1%} against P(B) {ioi['mean_p_b']:.1%} on average; A is "
              f"the more likely in {ioi['a_more_likely']} of {len(ioi['sentences'])} (a stretch goal for a model "
              "this small: it is reported, not a bar)."]  # fmt: skip
    return "\n".join(lines)


def probe_text(p: dict) -> str:
    rows = "\n".join(f"| {a['name']} | {a['r2']:.3f} | {a['error']:.1f} | {b['r2']:.3f} | {b['error']:.1f} |"
                     for a, b in zip(p["causal"], p["no_mask"], strict=True))  # fmt: skip
    return (
        f"A ridge regression reads each token's position (0-{p['window'] - 1}) in windows of {p['window']} "
        f"held-out tokens from the residual stream, fitted on {p['windows'] // 2} windows and scored on "
        f"{p['windows'] - p['windows'] // 2} others (`labs/position_probe.py`; the Position page draws it). "
        f"R² 1 reads the position exactly, 0 no better than guessing the middle (mean error "
        f"{p['chance_error']:.1f} tokens).\n\n"
        "| stream point | R², causal mask on | mean error (tokens) | R², mask off | mean error (tokens) |\n"
        f"|---|---|---|---|---|\n{rows}"
    )


def write_card(out: Path, lm: LanguageModel, figures: dict) -> None:
    cfg, roles, tr = lm.config, figures["roles"], figures["training"]
    pt, ind, un = roles["previous_token"], roles["induction"], figures["previous_token_unaided"]
    size_mb = (out / "model.safetensors").stat().st_size / 1e6
    r = tr["recipe"]
    bpb = figures["bits_per_byte"]
    val_rows = "\n".join(
        f"| {p} | {v['tokens']} | {v['position_on']:.3f} | {v['position_off']:.3f} | {bpb[p]:.3f} |"
        for p, v in figures["validation"].items()
    )
    params = "\n".join(f"| {k} | {v:,} |" for k, v in figures["parameters"].items())
    data_rows = "\n".join(f"| {p} | {src} | {lic} |" for p, (src, lic) in corpus.SOURCES.items())
    comps = "\n".join(f"- `{p}` → `{c!r}`" for p, c in figures["completions"].items())
    bars = "\n".join(
        f"- {BAR_TEXT[k]}: {'met' if ok else '**NOT met**'}" for k, ok in figures["bars_met"].items()
    )
    tok, atlas = figures["tokenizer"], figures["atlas"]
    title = "The classroom model" if cfg.arch == "llama" and not cfg.no_position else f"The {lm.name} twin"
    twin = NOPE_TWIN if cfg.no_position else "" if cfg.arch == "llama" else (
        "The GPT-2-style twin of the `classroom` model: the same script, sources, tokenizer, size and schedule, "
        "with learned positions, LayerNorm, GELU and full multi-head attention, and **no hint of any kind**, "
        "so the heads below formed on their own (the table of scores by step shows when).\n\n")  # fmt: skip
    unaided = (f"- Best previous-token head other than the hinted {HINTED}: **L{un['layer']}H{un['head']}**, "
               f"score {un['score']:.3f}.\n") if hinted_head(lm) else ""  # fmt: skip

    card = (
        f"""# {title}

{twin}A small language model trained from scratch for Attention Atlas by
`python -m training.train --model {lm.name}` (seed {r["seed"]}). Every figure below was measured by the training
script's final evaluation (`training/card.py`) on these exact weights; `tests/training/test_classroom_model.py`
recomputes them.

## {"Classroom bars (issue #17), recomputed by the tests: reported, this twin is not held to them" if cfg.no_position else "Bars (issue #17), recomputed by the tests"}
{bars}

## Architecture
{architecture_text(cfg, size_mb, r.get("store_dtype", "float32"))}

| part | parameters |
|---|---|
{params}

## Tokenizer
{tok.get("top_words_single", 1.0):.1%} of the corpus's {tok.get("top_words", 1000):,} most frequent words (after a space) are one
token; words of the class demos split: {", ".join(repr(w) for w in tok["preset_words_split"]) or "none"}.
{tokenizer_source(tr)}

## Data
| part | source | licence |
|---|---|---|
{data_rows}

{corpus_size_text(tr)}
Training rows mix these parts (weights {json.dumps(NATURAL_WEIGHTS)}) with copy data: a share of rows
({copy_schedule(r)}) is filled with episodes of {r["span_min"]}-{r["span_max"]} tokens repeated inside the row:
{r["random_span_share"]:.0%} of them uniformly random token ids repeated 2-{r["repeats_max"]} times (loss only on the
repeats), the rest a chunk of real text repeated twice.

## Training
{tr["tokens_seen"]:,} tokens seen in {r["steps"]} steps. {short_text(r)} After that, rows of
{r["batch"]} x {r["seq"]} tokens as above. {hint_text(r)}{scaffold_text(r)} AdamW
(lr {r["lr"]:g} → {r["min_lr"]:g}, warmup {r["warmup"]}, cosine, weight decay {r["weight_decay"]}),
{"bf16 autocast" if r.get("bf16_autocast", True) else "float32"} on CPU; {tr["train_minutes"]} min of training at
{tr["tokens_per_second"]:,} tokens/s{total_text(tr)}; {corpus_text(tr)}

## Validation loss (held-out documents)
| part | tokens | nats/token, position on | position off | bits per byte |
|---|---|---|---|---|
{val_rows}

Bits per byte are measured on the same first {HELD_OUT_CHARS:,} characters of each part's held-out text for
any tokenizer, so they compare across models (the training log compares with the first classroom model).
On the previous-token probe sentence: loss {figures["prose_loss"]["position_on"]:.3f} with position,
{figures["prose_loss"]["position_off"]:.3f} without (`lm.logits(ids, position=False)`).

## Head roles
- Best previous-token head: **L{pt["layer"]}H{pt["head"]}**, score {pt["score"]:.3f}.
{unaided}- Best induction head: **L{ind["layer"]}H{ind["head"]}**, score {ind["score"]:.3f}.
- Induction probe (48 random tokens repeated, seeds 0-3): first-copy loss {roles["first_copy_loss"]:.3f},
  second-copy loss {roles["second_copy_loss"]:.3f}.

The head atlas (`labs/roles`: probe, control and knock-out; the Head atlas page shows the evidence) gives
{len(atlas["roles"])} distinct roles ({", ".join(atlas["roles"]) or "none"}); the largest share of one layer's heads
holding one role is {atlas["max_layer_share"]:.0%}; pure self heads: {", ".join(atlas["pure_self_heads"]) or "none"}.

{labels_table(atlas["labels"])}

Previous-token scores (mean attention from token i to i-1 on the probe sentence):

{table(roles["previous_token_table"])}

Induction scores (mean attention from each second-copy token to the token after its first copy):

{table(roles["induction_table"])}

## Position in the residual stream
{probe_text(figures["position_probe"])}

## In-context demos (held-out strings)
{demos_text(figures["demos"])}

## Greedy completions ({COMPLETION_TOKENS} tokens)
{comps}

## Scores during training
| step | tokens | min | best prev-token | best induction | copy loss 1st / 2nd | val loss (stories, brown) |
|---|---|---|---|---|---|---|
"""
        + "\n".join(
            f"| {h['step']} | {h['tokens']:,} | {h['minutes']} | {h['prev']['score']:.2f} | {h['ind']['score']:.2f} | "
            f"{h['copy'][0]:.2f} / {h['copy'][1]:.2f} | {h['val']['stories']:.2f}, {h['val']['brown']:.2f} |"
            for h in tr["history"]
        )
        + f"""

## What was tried
{EXPERIMENT_LOG.read_text()}
## Figures (machine-readable)
<!-- figures -->
```json
{json.dumps(figures, indent=1, ensure_ascii=False)}
```
"""
    )
    (out / "MODEL_CARD.md").write_text(card)


def refresh(folder: Path, corpus_dir: Path) -> None:
    """Re-run the final evaluation on a saved checkpoint and rewrite its card (same code, same figures;
    the training record is carried over from the card the training run wrote)."""
    lm = load(folder)
    if lm.card and FIGURES_RE.search(lm.card):
        training = read_figures(lm.card)["training"]
    else:  # the run stopped before writing its card: its record, saved beside the corpus
        training = json.loads((corpus_dir / f"{folder.name}.training.json").read_text())
    _, val_streams = tokenize_corpus(corpus_dir, lm.tokenizer)
    figures = evaluate(lm, val_streams, corpus_dir)
    figures["training"] = training
    write_card(folder, lm, figures)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Re-evaluate a trained checkpoint and rewrite its model card.")
    ap.add_argument("folder", type=Path)
    ap.add_argument("--corpus", type=Path, default=corpus.DEFAULT_OUT)
    args = ap.parse_args()
    torch.set_num_threads(1)
    refresh(args.folder, args.corpus)
