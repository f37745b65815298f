"""The training recipe: every knob of `python -m training.train`, each one a command-line flag."""

from __future__ import annotations

from dataclasses import dataclass


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
