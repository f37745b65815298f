"""What the model reads: the corpus mixture, the tokenizer and token streams, and the training batches.

`card.py` (which states the mixture and re-reads the held-out streams) and `train.py` both import
from here, so neither needs the other.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from model.loading import bundled_path
from model.tokenizer import Tokenizer

from . import corpus, invented_names, vocab
from .recipe import Recipe

NATURAL_WEIGHTS = {"stories": 0.4, "brown": 0.3, "bible": 0.15, "wordnet": 0.15}
INVENTED = "invented"  # the stream of invented-name stories, when a recipe asks for them


def mixture_weights(invented_name_share: float) -> dict[str, float]:
    """Each text part's share of text rows: the corpus parts in NATURAL_WEIGHTS's proportions, making
    room for the invented-name stories' share."""
    weights = {p: round(w * (1 - invented_name_share), 4) for p, w in NATURAL_WEIGHTS.items()}
    return weights | ({INVENTED: invented_name_share} if invented_name_share else {})


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


SHARED_TOKENIZER = bundled_path("classroom") / "tokenizer.json"  # every shipped model's tokenizer


def corpus_tokenizer(corpus_dir: Path, vocab_size: int) -> Tokenizer:
    """A new tokenizer trained on the corpus and the vocabulary supplement (how SHARED_TOKENIZER was made),
    cached next to the corpus it was trained on."""
    cache = corpus_dir / f"tokenizer-{vocab_size}-{corpus_digest(corpus_dir)}.json"
    if cache.exists():
        return Tokenizer.from_file(cache)
    docs = [d for p in corpus.PARTS for d in corpus.read_part(corpus_dir, p, "train")]
    tok = train_tokenizer(docs + vocab.supplement(docs), vocab_size)
    tok.hf.save(str(cache))
    return tok


def corpus_digest(corpus_dir: Path) -> str:
    """Changes whenever the corpus is rebuilt differently (its manifest counts every part's characters)."""
    return hashlib.sha256((corpus_dir / "manifest.json").read_bytes()).hexdigest()[:10]


def tokenize_corpus(corpus_dir: Path, tok: Tokenizer):
    """The train and validation token streams of every part under `tok`, cached next to the corpus under
    a name made of the corpus's and the tokenizer's digests, so neither can be stale."""
    tok_digest = hashlib.sha256(tok.hf.to_str().encode()).hexdigest()[:10]
    cache = corpus_dir / f"streams-{corpus_digest(corpus_dir)}-{tok_digest}.npz"
    if cache.exists():
        data = np.load(cache)
        return ({p: data[f"train_{p}"] for p in corpus.PARTS}, {p: data[f"val_{p}"] for p in corpus.PARTS})
    streams = {p: token_stream(tok, corpus.read_part(corpus_dir, p, "train")) for p in corpus.PARTS}
    val_streams = {p: token_stream(tok, corpus.read_part(corpus_dir, p, "val")) for p in corpus.PARTS}
    np.savez(cache, **{f"train_{p}": s for p, s in streams.items()},
             **{f"val_{p}": s for p, s in val_streams.items()})  # fmt: skip
    return streams, val_streams


INVENTED_STORIES = 20000  # ~10M characters: more than a 75-minute run reads, so few rows repeat


def with_invented_stories(streams: dict[str, np.ndarray], tok: Tokenizer, r: Recipe) -> dict[str, np.ndarray]:
    """The training streams plus the invented-name stories (generated from the recipe's seed, never
    cached: 20,000 stories take seconds), when the recipe mixes them in."""
    if not r.invented_name_share:
        return streams
    return streams | {INVENTED: token_stream(tok, invented_names.invented_stories(r.seed, INVENTED_STORIES))}


def load_corpus(folder: Path, seed: int) -> None:
    if not (folder / "manifest.json").exists():
        corpus.build(folder, seed)


# ---------------------------------------------------------------- batches


class Batches:
    """Rows of `seq` tokens and a loss mask. Copy episodes always sit inside one row, so the
    second copy is predictable from the first within the context window. After each batch,
    `copy_rows` (B,) says which of its rows hold a copy episode and `episode_positions` (B, T) which
    input positions lie inside one (for training/free_heads.py)."""

    def __init__(self, streams: dict[str, np.ndarray], r: Recipe) -> None:
        self.streams, self.r = streams, r
        mix = mixture_weights(r.invented_name_share)
        self.parts = list(mix)
        self.weights = np.array([mix[p] for p in self.parts]) / sum(mix.values())
        self.rng = np.random.default_rng(r.seed)
        self.at_step(0)

    def at_step(self, step: int) -> None:
        """The ids random spans draw from at this step: early_span_vocab ids for the first
        early_span_steps, then (with span_double_every) twice as many every span_double_every steps."""
        full = self.r.span_vocab or self.r.vocab_size
        small, hold, every = self.r.early_span_vocab, self.r.early_span_steps, self.r.span_double_every
        if not small or (step >= hold and not every):
            self.span_vocab = full
        elif step < hold:
            self.span_vocab = small
        else:
            self.span_vocab = min(full, small * 2 ** ((step - hold) // every + 1))
        # After the pure copy phase, once single-token induction has formed (it forms there or not at all)
        self.reuse = bool(self.r.span_reuse) and step >= self.r.short_pure

    def random_span(self, length: int, ids: int) -> np.ndarray:
        """`length` distinct ids below `ids`, or (span_reuse) ids drawn with repeats from `length` // 2 of them."""
        if self.reuse and self.rng.random() < self.r.span_reuse:
            alphabet = self.rng.permutation(ids)[: max(2, length // 2)]
            return self.rng.choice(alphabet, length).astype(np.int32)
        return self.rng.permutation(ids)[:length].astype(np.int32)

    def natural(self, n: int) -> np.ndarray:
        s = self.streams[self.parts[self.rng.choice(len(self.parts), p=self.weights)]]
        i = int(self.rng.integers(0, len(s) - n - 1))
        return s[i : i + n]

    def copy_row(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A row with one copy episode (real text around it unless packed): tokens, loss mask, and which
        positions belong to the episode."""
        T = self.r.seq + 1
        toks, mask, episode = [], [], []
        n = 0
        if not self.r.packed and self.rng.random() < 0.5:
            lead = int(self.rng.integers(1, 100))  # some episodes start after real text
            toks.append(self.natural(lead))
            mask.append(np.ones(lead, bool))
            episode.append(np.zeros(lead, bool))
            n = lead
        first_episode = True
        while n < T:
            if not self.r.packed and not first_episode:
                # One episode per row, like the probe: the only distractors are real text.
                toks.append(self.natural(T - n))
                mask.append(np.ones(T - n, bool))
                episode.append(np.zeros(T - n, bool))
                break
            first_episode = False
            L = int(self.rng.integers(self.r.span_min, self.r.span_max + 1))
            if self.rng.random() < self.r.random_span_share:
                span = self.random_span(L, self.span_vocab)
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
                episode.append(np.ones(len(t), bool))
                n += len(t)
        return np.concatenate(toks)[:T], np.concatenate(mask)[:T], np.concatenate(episode)[:T]

    def short(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rows of short_seq tokens: one random span repeated to fill the row; loss on the repeats."""
        T = self.r.short_seq + 1
        xs, ms = [], []
        for _ in range(self.r.short_batch):
            L = int(self.rng.integers(4, T // 2 + 1))
            ids = self.span_vocab
            if (
                self.r.early_span_vocab
                and self.r.early_span_keep
                and self.rng.random() < self.r.early_span_keep
            ):
                ids = min(ids, self.r.early_span_vocab)  # a row on the early alphabet
            span = self.random_span(L, ids)
            reps = -(-T // L)
            xs.append(np.tile(span, reps)[:T])
            ms.append(np.arange(T) >= L)
        x = torch.from_numpy(np.stack(xs).astype(np.int64))
        m = torch.from_numpy(np.stack(ms))
        self.copy_rows = torch.ones(len(xs), dtype=torch.bool)
        self.episode_positions = torch.ones(len(xs), T - 1, dtype=torch.bool)
        return x[:, :-1], x[:, 1:], m[:, 1:]

    def get(self, copy_frac: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        T = self.r.seq + 1
        xs, ms, eps, copies = [], [], [], []
        for _ in range(self.r.batch):
            copies.append(self.rng.random() < copy_frac)
            if copies[-1]:
                x, m, ep = self.copy_row()
            else:
                x, m, ep = self.natural(T), np.ones(T, bool), np.zeros(T, bool)
            xs.append(x)
            ms.append(m)
            eps.append(ep)
        x = torch.from_numpy(np.stack(xs).astype(np.int64))
        m = torch.from_numpy(np.stack(ms))
        self.copy_rows = torch.tensor(copies, dtype=torch.bool)
        self.episode_positions = torch.from_numpy(np.stack(eps))[:, :-1]  # the inputs' positions
        return x[:, :-1], x[:, 1:], m[:, 1:]  # mask follows the target token
