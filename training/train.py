"""Train the classroom model from scratch and write its checkpoint and model card.

    python -m training.train                      # the shipped recipe (seeded)
    python -m training.train --steps 600 --out runs/try   # a short experiment

Builds the corpus (`training/corpus.py`) if it is missing, trains a byte-level BPE tokenizer on it,
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
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers
from tqdm import tqdm

from labs.roles.probes import measure_roles
from model.config import ModelConfig
from model.lm import LanguageModel
from model.loading import CHECKPOINTS, save
from model.tokenizer import Tokenizer
from model.transformer import Attention, Transformer

from . import corpus
from .hint import PreviousTokenHint

NATURAL_WEIGHTS = {"stories": 0.4, "brown": 0.3, "bible": 0.15, "wordnet": 0.15}


@dataclass
class Recipe:
    seed: int = 0
    vocab_size: int = 4096
    n_layer: int = 4
    n_head: int = 8
    n_kv_head: int = 2
    d_model: int = 256
    d_ff: int = 704
    seq: int = 256  # training length = context length
    batch: int = 16
    steps: int = 4200
    lr: float = 3e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    copy_start: float = 1.0  # share of rows that are copy data for the first copy_hold of training ...
    copy_hold: float = 0.5
    copy_end: float = 0.3  # ... then decaying linearly to this at the last step
    span_min: int = 8  # copy episodes: spans of span_min..span_max tokens ...
    span_max: int = 64
    repeats_max: int = 3  # ... repeated 2..repeats_max times
    short_steps: int = 1200  # first steps: only short rows of one random span repeated (few distractors)
    short_seq: int = 128
    short_batch: int = 32
    span_vocab: int = 0  # random spans draw from token ids below this (0: the whole vocabulary)
    packed: bool = False  # many episodes per row; False: one episode per row, real text around it
    random_span_share: float = 0.75  # of copy episodes: random tokens; the rest repeat real text
    hint_steps: int = 1200  # previous-token hint on layer 0 head 0 (training/hint.py) for these steps
    hint_weight: float = 1.0
    eval_every: int = 300
    compile: bool = False  # measured: no faster on this CPU, and 100 s to compile


# ---------------------------------------------------------------- tokenizer and token streams


def train_tokenizer(docs: list[str], vocab_size: int) -> Tokenizer:
    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)  # fmt: skip
    hf.train_from_iterator(docs, trainer)
    return Tokenizer(hf)


def token_stream(tok: Tokenizer, docs: list[str]) -> np.ndarray:
    """All documents of a part, encoded and joined by a blank line, as one int32 array."""
    sep = tok.encode("\n\n")
    out: list[int] = []
    for enc in tok.hf.encode_batch(docs, add_special_tokens=False):
        out += enc.ids + sep
    return np.asarray(out, dtype=np.int32)


# ---------------------------------------------------------------- batches


class Batches:
    """Rows of `seq` tokens and a loss mask. Copy episodes always sit inside one row, so the
    second copy is predictable from the first within the context window."""

    def __init__(self, streams: dict[str, np.ndarray], r: Recipe) -> None:
        self.streams, self.r = streams, r
        self.parts = list(NATURAL_WEIGHTS)
        self.weights = np.array([NATURAL_WEIGHTS[p] for p in self.parts])
        self.rng = np.random.default_rng(r.seed)

    def natural(self, n: int) -> np.ndarray:
        s = self.streams[self.parts[self.rng.choice(len(self.parts), p=self.weights)]]
        i = int(self.rng.integers(0, len(s) - n - 1))
        return s[i : i + n]

    def copy_row(self) -> tuple[np.ndarray, np.ndarray]:
        T, V = self.r.seq + 1, self.r.vocab_size
        toks, mask = [], []
        n = 0
        if not self.r.packed and self.rng.random() < 0.5:
            lead = int(self.rng.integers(1, 100))  # some episodes start after real text
            toks.append(self.natural(lead))
            mask.append(np.ones(lead, bool))
            n = lead
        first_episode = True
        while n < T:
            if not self.r.packed and not first_episode:
                # One episode per row, like the probe: the only distractors are real text.
                toks.append(self.natural(T - n))
                mask.append(np.ones(T - n, bool))
                break
            first_episode = False
            L = int(self.rng.integers(self.r.span_min, self.r.span_max + 1))
            if self.rng.random() < self.r.random_span_share:
                span = self.rng.permutation(self.r.span_vocab or V)[:L].astype(np.int32)
                k = int(self.rng.integers(2, self.r.repeats_max + 1))
                first_mask = np.zeros(L, bool)  # unpredictable: no loss
                rep_mask = np.ones(L, bool)
                pieces = [(span, first_mask)] + [(span, rep_mask)] * (k - 1)
            else:
                chunk = self.natural(L)
                ones = np.ones(L, bool)
                pieces = [(chunk, ones), (chunk, ones)]
            for t, m in pieces:
                toks.append(t)
                mask.append(m)
                n += len(t)
        x = np.concatenate(toks)[:T]
        m = np.concatenate(mask)[:T]
        return x, m

    def short(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rows of short_seq tokens: one random span repeated to fill the row; loss on the repeats."""
        T, V = self.r.short_seq + 1, self.r.vocab_size
        xs, ms = [], []
        for _ in range(self.r.short_batch):
            L = int(self.rng.integers(4, T // 2 + 1))
            span = self.rng.permutation(self.r.span_vocab or V)[:L]
            reps = -(-T // L)
            xs.append(np.tile(span, reps)[:T])
            ms.append(np.arange(T) >= L)
        x = torch.from_numpy(np.stack(xs).astype(np.int64))
        m = torch.from_numpy(np.stack(ms))
        return x[:, :-1], x[:, 1:], m[:, 1:]

    def get(self, copy_frac: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        T = self.r.seq + 1
        xs, ms = [], []
        for _ in range(self.r.batch):
            if self.rng.random() < copy_frac:
                x, m = self.copy_row()
            else:
                x, m = self.natural(T), np.ones(T, bool)
            xs.append(x)
            ms.append(m)
        x = torch.from_numpy(np.stack(xs).astype(np.int64))
        m = torch.from_numpy(np.stack(ms))
        return x[:, :-1], x[:, 1:], m[:, 1:]  # mask follows the target token


# ---------------------------------------------------------------- training fast path


def sdpa_attend(self: Attention, q, k, v, run):
    """Training-only fast path: same maths as Attention.attend (the SDPA-equality test checks it),
    without materialising the pattern. Any call with a Run (capture, switches) takes the explicit path."""
    if run is not None:
        return Attention.attend(self, q, k, v, run)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return out.transpose(1, 2)


def use_fast_attention(net: Transformer) -> None:
    for block in net.blocks:
        block.attn.attend = types.MethodType(sdpa_attend, block.attn)


def copy_share(step: int, r: Recipe) -> float:
    """Heavy copy data first (induction heads need it), then mostly real text."""
    hold = int(r.copy_hold * r.steps)
    if step < hold:
        return r.copy_start
    return r.copy_start + (r.copy_end - r.copy_start) * (step - hold) / max(1, r.steps - 1 - hold)


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
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = net(idx)
        out[part] = round(F.cross_entropy(logits.float().flatten(0, 1), tgt.flatten()).item(), 4)
    return out


def tokenize_corpus(corpus_dir: Path, vocab_size: int):
    """Tokenizer and token streams, cached next to the corpus (both are deterministic)."""
    cache = corpus_dir / f"tokens-{vocab_size}"
    if (cache / "tokenizer.json").exists():
        tok = Tokenizer.from_file(cache / "tokenizer.json")
        data = np.load(cache / "streams.npz")
        streams = {p: data[f"train_{p}"] for p in corpus.PARTS}
        return tok, streams, {p: data[f"val_{p}"] for p in corpus.PARTS}
    train_docs = {p: corpus.read_part(corpus_dir, p, "train") for p in corpus.PARTS}
    val_docs = {p: corpus.read_part(corpus_dir, p, "val") for p in corpus.PARTS}
    tok = train_tokenizer([d for p in corpus.PARTS for d in train_docs[p]], vocab_size)
    streams = {p: token_stream(tok, train_docs[p]) for p in corpus.PARTS}
    val_streams = {p: token_stream(tok, val_docs[p]) for p in corpus.PARTS}
    cache.mkdir(parents=True, exist_ok=True)
    tok.hf.save(str(cache / "tokenizer.json"))
    np.savez(cache / "streams.npz", **{f"train_{p}": s for p, s in streams.items()},
             **{f"val_{p}": s for p, s in val_streams.items()})  # fmt: skip
    return tok, streams, val_streams


def load_corpus(folder: Path, seed: int) -> None:
    if not (folder / "manifest.json").exists():
        corpus.build(folder, seed)


def main() -> None:
    ap = argparse.ArgumentParser(description="Train the classroom model.")
    defaults = Recipe()
    for name, value in vars(defaults).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            ap.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=value)
        else:
            ap.add_argument(flag, type=type(value), default=value)
    ap.add_argument("--corpus", type=Path, default=corpus.DEFAULT_OUT)
    ap.add_argument("--out", type=Path, default=CHECKPOINTS / "classroom")
    ap.add_argument(
        "--threads", type=int, default=2, help="2 on a quiet 2-core machine; 1 if other jobs share it"
    )
    args = ap.parse_args()
    r = Recipe(**{k: getattr(args, k) for k in vars(defaults)})
    torch.set_num_threads(args.threads)
    train(r, args.corpus, args.out)


def train(r: Recipe, corpus_dir: Path, out: Path) -> None:
    from .card import evaluate, write_card

    t_start = time.time()
    torch.manual_seed(r.seed)
    corpus_cached = (corpus_dir / f"tokens-{r.vocab_size}" / "tokenizer.json").exists()
    load_corpus(corpus_dir, r.seed)
    tok, streams, val_streams = tokenize_corpus(corpus_dir, r.vocab_size)
    corpus_minutes = round((time.time() - t_start) / 60, 2)
    print("train tokens:", {p: len(s) for p, s in streams.items()}, f"({time.time() - t_start:.0f}s)")

    cfg = ModelConfig(arch="llama", vocab_size=tok.vocab_size, n_layer=r.n_layer, n_head=r.n_head,
                      n_kv_head=r.n_kv_head, d_model=r.d_model, d_ff=r.d_ff, context_length=r.seq,
                      tie_embeddings=True, name="classroom")  # fmt: skip
    net = Transformer(cfg)
    net.init_weights(r.seed)
    use_fast_attention(net)
    decay = [p for p in net.parameters() if p.dim() >= 2]
    no_decay = [p for p in net.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": r.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=r.lr, betas=(0.9, 0.95))  # fmt: skip
    fwd = torch.compile(net) if r.compile else net
    lm = LanguageModel(net, tok, name="classroom")
    batches = Batches(streams, r)
    history = []
    tokens_seen = 0
    t_train = time.time()
    hint = PreviousTokenHint(net) if r.hint_steps > 0 else None
    bar = tqdm(range(r.steps), desc="train", mininterval=5)
    for step in bar:
        if hint is not None and step == r.hint_steps:
            hint.close()
            hint = None
        frac = copy_share(step, r)
        x, y, m = batches.short() if step < r.short_steps else batches.get(frac)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, r)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = fwd(x)
        loss = masked_loss(logits, y, m)
        total = loss + r.hint_weight * hint.loss() if hint is not None else loss
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
    lm = LanguageModel(_fresh_copy(net), tok, name="classroom")  # shipped weights run the explicit path
    figures = evaluate(lm, val_streams)
    figures["training"] = {"recipe": vars(r), "tokens_seen": tokens_seen, "train_minutes": round(train_seconds / 60, 1),
                           "tokens_per_second": round(tokens_seen / train_seconds),
                           "total_minutes": round((time.time() - t_start) / 60, 1),
                           "corpus_minutes": None if corpus_cached else corpus_minutes,
                           "history": history}  # fmt: skip
    save(lm.net, tok, out, card=None)
    write_card(out, lm, figures)
    print(f"saved {out} in {(time.time() - t_start) / 60:.1f} min")


def _fresh_copy(net: Transformer) -> Transformer:
    clean = Transformer(net.cfg)
    clean.load_state_dict(net.state_dict())
    return clean.eval()


if __name__ == "__main__":
    main()
