"""Train the classroom model from scratch and write its checkpoint and model card.

    python -m training.train                      # the shipped recipe (seeded)
    python -m training.train --steps 600 --out runs/try   # a short experiment

Builds the corpus (`training/corpus.py`) if it is missing, reads it with the tokenizer every shipped
model shares (`--new-tokenizer`: a byte-level BPE trained on this corpus instead, how that one was made),
then trains a Llama-style transformer with AdamW, warmup + cosine decay, bf16 autocast on CPU.
The first `short_steps` train on short rows of one random span repeated (loss on the repeats), with
a previous-token hint on one layer-0 head (`training/hint.py`): that is where the induction head
forms. After that, part of every batch is copy data: a span of uniformly random tokens repeated 2-3
times (loss only on the repeats, the tokens a model can predict) or a repeated chunk of real text,
which keeps the induction head useful while the model learns English. The final evaluation
(training/card.py) measures everything the model card states.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from labs.roles.probes import measure_roles
from model.config import ModelConfig
from model.hooks import Run
from model.lm import LanguageModel
from model.loading import CHECKPOINTS, load, save
from model.tokenizer import Tokenizer
from model.transformer import Transformer

from . import corpus
from .card import evaluate, write_card
from .data import (
    SHARED_TOKENIZER,
    Batches,
    corpus_tokenizer,
    load_corpus,
    tokenize_corpus,
    with_invented_stories,
)
from .free_heads import free_copy_heads, free_head_indices
from .head_dropout import drop_heads
from .hint import PreviousTokenHint, drop_hinted_head
from .recipe import RECIPES, Recipe

__all__ = ["RECIPES", "Recipe", "main", "train"]


def copy_share(step: int, r: Recipe) -> float:
    """Heavy copy data first (induction heads need it), then mostly real text."""
    hold = int(r.copy_hold * r.steps)
    if step < hold:
        return r.copy_start
    return r.copy_start + (r.copy_end - r.copy_start) * (step - hold) / max(1, r.steps - 1 - hold)


def free_from_layer(step: int, r: Recipe) -> int:
    """The first layer whose copy-free heads get no gradient from copy rows at this step: layer 0's stop
    being free after copy_free_layer0_steps, when set."""
    if r.copy_free_layer0_steps and step >= r.copy_free_layer0_steps:
        return max(1, r.copy_free_first_layer)
    return r.copy_free_first_layer


def is_short_step(step: int, r: Recipe) -> bool:
    """Whether this step trains on short copy rows: all of the first short_pure, then one in short_every
    up to short_steps (one in short_late_every from short_late_from on, when set)."""
    if step < r.short_pure:
        return True
    every = r.short_late_every if r.short_late_from and step >= r.short_late_from else r.short_every
    return step < r.short_steps and step % every == 0


def lr_at(step: int, r: Recipe) -> float:
    if step < r.warmup:
        return r.lr * (step + 1) / r.warmup
    t = (step - r.warmup) / max(1, r.steps - r.warmup)
    return r.min_lr + 0.5 * (r.lr - r.min_lr) * (1 + math.cos(math.pi * t))


def masked_loss(logits: torch.Tensor, y: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    losses = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="none")
    m = m.flatten().float()
    return (losses * m).sum() / m.sum().clamp_min(1)


@torch.no_grad()
def val_losses(
    net: Transformer, streams: dict[str, np.ndarray], seq: int, max_rows: int = 8
) -> dict[str, float]:
    """Mean next-token loss per corpus part on the held-out documents (first max_rows windows)."""
    out = {}
    for part, s in streams.items():
        n = min(max_rows, (len(s) - 1) // seq)
        x = torch.from_numpy(s[: n * seq + 1].astype(np.int64))
        idx, tgt = x[:-1].view(n, seq), x[1:].view(n, seq)
        logits = net(idx, Run(impl="sdpa"))
        out[part] = round(F.cross_entropy(logits.float().flatten(0, 1), tgt.flatten()).item(), 4)
    return out


def model_config(r: Recipe, vocab_size: int) -> ModelConfig:
    """The block the recipe trains (the tokenizer sets the vocabulary)."""
    return ModelConfig(arch=r.arch, vocab_size=vocab_size, n_layer=r.n_layer, n_head=r.n_head,
                       n_kv_head=r.n_kv_head, d_model=r.d_model, d_ff=r.d_ff, context_length=r.seq,
                       tie_embeddings=True, no_position=r.no_position, qkv_bias=r.qkv_bias,
                       name=r.name)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description="Train a classroom model.")
    ap.add_argument("--model", choices=sorted(RECIPES), default="classroom",
                    help="the shipped recipe to start from; any flag below overrides one of its knobs")  # fmt: skip
    known, _ = ap.parse_known_args()
    defaults = RECIPES[known.model]
    for name, value in vars(defaults).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            ap.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=value)
        else:
            ap.add_argument(flag, type=type(value), default=value)
    ap.add_argument("--corpus", type=Path, default=corpus.DEFAULT_OUT)
    ap.add_argument(
        "--out", type=Path, default=None, help="default: the bundled checkpoint folder of the model"
    )
    ap.add_argument(
        "--threads", type=int, default=2, help="2 on a quiet 2-core machine; 1 if other jobs share it"
    )
    ap.add_argument("--new-tokenizer", action="store_true",
                    help="train a tokenizer on the corpus instead of reading it with the shipped models' one")  # fmt: skip
    args = ap.parse_args()
    r = Recipe(**{k: getattr(args, k) for k in vars(defaults)})
    torch.set_num_threads(args.threads)
    train(r, args.corpus, args.out or CHECKPOINTS / r.name, new_tokenizer=args.new_tokenizer)


def train(r: Recipe, corpus_dir: Path, out: Path, new_tokenizer: bool = False) -> None:
    """`new_tokenizer`: train one on the corpus; otherwise the shipped models' tokenizer, so the model this
    trains shares it with them (and a twin trained later shares it with this one)."""
    t_start = time.time()
    torch.manual_seed(r.seed)
    corpus_cached = (corpus_dir / "manifest.json").exists()
    load_corpus(corpus_dir, r.seed)
    shared = not new_tokenizer and SHARED_TOKENIZER.exists()
    tok = Tokenizer.from_file(SHARED_TOKENIZER) if shared else corpus_tokenizer(corpus_dir, r.vocab_size)
    if tok.vocab_size != r.vocab_size:
        raise SystemExit(f"the shared tokenizer has {tok.vocab_size} tokens, the recipe asks for "
                         f"{r.vocab_size}: pass --new-tokenizer to train one of that size")  # fmt: skip
    streams, val_streams = tokenize_corpus(corpus_dir, tok)
    streams = with_invented_stories(streams, tok, r)
    manifest = json.loads((corpus_dir / "manifest.json").read_text())
    corpus_minutes = round((time.time() - t_start) / 60, 2)
    print("train tokens:", {p: len(s) for p, s in streams.items()}, f"({time.time() - t_start:.0f}s)")

    net = Transformer(model_config(r, tok.vocab_size))
    net.init_weights(r.seed)
    decay = [p for p in net.parameters() if p.dim() >= 2]
    no_decay = [p for p in net.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": r.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=r.lr, betas=(0.9, 0.95))  # fmt: skip
    fwd = torch.compile(net) if r.compile else net
    lm = LanguageModel(net, tok, name=r.name)
    batches = Batches(streams, r)
    history = []
    tokens_seen = 0
    t_train = time.time()
    hint = PreviousTokenHint(net.cfg) if r.hint_steps else None
    # Its own generator, so the batches are the same draws with and without hint_dropout.
    dropout_rng = torch.Generator().manual_seed(r.seed + 1)
    copy_dropout_rng = torch.Generator().manual_seed(r.seed + 2)
    free = free_head_indices(net.cfg, r.copy_free_heads, r.copy_free_spread)
    copy_heads = [h for h in range(net.cfg.n_head)
                  if h not in free or r.copy_dropout_layer < r.copy_free_first_layer]  # fmt: skip
    bar = tqdm(range(r.steps), desc="train", mininterval=5)
    for step in bar:
        hinted = step < r.hint_steps
        frac = copy_share(step, r)
        short = is_short_step(step, r)
        batches.at_step(step)
        x, y, m = batches.short() if short else batches.get(frac)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, r)
        # Fused attention: training never looks at the pattern; the hint reads q and k from the cache.
        run = Run(impl="sdpa", capture=hint.names if hinted else None)
        stopped = batches.episode_positions if r.copy_free_text else batches.copy_rows
        free_copy_heads(
            run, net.cfg, r.copy_free_heads, stopped, free_from_layer(step, r), r.copy_free_spread
        )
        if r.hint_dropout and r.hint_steps and not hinted:
            drop_hinted_head(run, torch.rand(x.shape[0], generator=dropout_rng) < r.hint_dropout)
        if r.copy_dropout and step >= r.hint_steps:
            chosen = batches.copy_rows & (torch.rand(x.shape[0], generator=copy_dropout_rng) < r.copy_dropout)
            drop_heads(run, chosen, r.copy_dropout_layer, copy_heads)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=r.bf16_autocast):
            logits = fwd(x, run)
        loss = masked_loss(logits, y, m)
        total = loss + r.hint_weight * hint.loss(run.cache) if hinted else loss
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        tokens_seen += x.numel()
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr_at(step, r):.1e}", copy=f"{frac:.2f}")
        if (step + 1) % r.eval_every == 0 or step + 1 == r.steps:
            net.eval()
            roles = measure_roles(lm)
            vl = val_losses(net, val_streams, r.seq)
            net.train()
            rec = {"step": step + 1, "tokens": tokens_seen, "minutes": round((time.time() - t_train) / 60, 2),
                   "val": vl, "prev": roles["previous_token"], "ind": roles["induction"],
                   "copy": [roles["first_copy_loss"], roles["second_copy_loss"]]}  # fmt: skip
            history.append(rec)
            tqdm.write(json.dumps(rec))
    train_seconds = time.time() - t_train
    net.eval()
    save(net, tok, out, card=None, dtype=r.store_dtype)
    record = {"recipe": vars(r), "tokens_seen": tokens_seen, "train_minutes": round(train_seconds / 60, 1),
              "tokens_per_second": round(tokens_seen / train_seconds),
              "corpus_minutes": None if corpus_cached else corpus_minutes,
              "tokenizer": "shared" if shared else "trained on the corpus",
              "corpus_chars": {p: v["chars"] for p, v in manifest["parts"].items()}, "history": history}  # fmt: skip
    # Kept beside the corpus (ignored by git) so `python -m training.card` can rewrite the card later.
    (corpus_dir / f"{out.name}.training.json").write_text(json.dumps(record))
    # Evaluated on the stored weights (rounded to store_dtype), loaded as the app loads them.
    lm = load(out)
    figures = evaluate(lm, val_streams, corpus_dir)
    figures["training"] = {**record, "total_minutes": round((time.time() - t_start) / 60, 1)}
    write_card(out, lm, figures)
    print(f"saved {out} in {(time.time() - t_start) / 60:.1f} min")


if __name__ == "__main__":
    main()
