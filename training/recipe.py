"""The training recipes: every knob of `python -m training.train`, each one a command-line flag.

`RECIPES` holds the shipped models' recipes; `--model NAME` starts from one of them (the same data,
tokenizer and copy rows; the GPT-2-style twin differs in its block, in getting no hint, and in the gentler copy
curriculum its heads need to form without one)."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass
class Recipe:
    name: str = "classroom"
    arch: str = (
        "llama"  # "llama": RoPE, GQA, RMSNorm, SwiGLU; "gpt2": learned positions, MHA, LayerNorm, GELU
    )
    no_position: bool = False  # True: no RoPE or position vectors at all, order from the causal mask only
    seed: int = 0
    vocab_size: int = 8192  # words a class types are single tokens (training/vocab.py)
    n_layer: int = 4
    n_head: int = 8
    n_kv_head: int = 4
    d_model: int = 256
    d_ff: int = 704
    qkv_bias: bool = False  # query, key and value biases (as Qwen2 has): under RoPE the query bias times the
    # key bias depends on the distance alone, so a head can prefer nearby tokens whatever the tokens are
    seq: int = 256  # training length = context length
    batch: int = 8
    steps: int = 1300
    lr: float = 3e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    copy_start: float = 0.5  # share of rows that are copy data for the first copy_hold of training ...
    copy_hold: float = 0.0
    copy_end: float = 0.2  # ... then decaying linearly to this at the last step
    span_min: int = 8  # copy episodes: spans of span_min..span_max tokens ...
    span_max: int = 64
    repeats_max: int = 3  # ... repeated 2..repeats_max times
    short_steps: int = 500  # first steps: every short_every-th step is short rows of one random span
    short_every: int = 2  # repeated (few distractors); the steps between train on the mixture (real text)
    short_pure: int = 300  # ... except the first short_pure steps, which are all short copy rows
    short_late_from: int = 0  # from this step on (0: never), every short_late_every-th step is short rows
    short_late_every: int = 2  # instead: more text early, the copying refreshed at the end
    short_seq: int = 128
    short_batch: int = 32
    span_vocab: int = 0  # random spans draw from token ids below this (0: the whole vocabulary)
    early_span_vocab: int = 0  # ... but for the first early_span_steps steps from ids below this (0: off):
    early_span_steps: int = 0  # a small alphabet first, as in the toys where learned positions copy by ~350
    span_double_every: int = 0  # after that, the alphabet doubles every this many steps up to span_vocab
    # (0: straight to the whole alphabet, which broke the small-alphabet circuit in twin try 5)
    early_span_keep: float = 0.0  # after early_span_steps, this share of short rows keeps the early alphabet
    # (so the circuit found there stays useful while the wider alphabet is learnt)
    packed: bool = False  # many episodes per row; False: one episode per row, real text around it
    random_span_share: float = 0.75  # of copy episodes: random tokens; the rest repeat real text
    span_reuse: float = 0.0  # of random spans after short_pure steps: tokens drawn with repeats from
    # an alphabet half the span's length, so a token recurs with different successors and the copier must match
    # the last two or three tokens, not one: a head that reads a fixed few positions back, whatever the tokens,
    # is then worth learning (the atlas's local role asks for that on random tokens)
    invented_name_share: float = 0.0  # of text rows: stories whose characters have invented two-word names,
    # so the name's second word is predictable only from context (training/invented_names.py)
    copy_free_heads: int = 0  # the last this many heads of each layer learn nothing from copy rows ...
    copy_free_first_layer: int = 0  # ... in the layers from this one up (training/free_heads.py)
    copy_free_spread: bool = False  # True: the last of each K/V group instead of the layer's last heads
    copy_free_text: bool = False  # True: on copy rows the free heads are stopped only inside the episode and
    # learn at the real text around it, so they learn to read text with random tokens in view (the atlas's
    # control for a local head is random tokens, which a head that never learned beside them misreads)
    copy_free_layer0_steps: int = 0  # layer 0's free heads are free only for this many steps (0: all), then
    # learn from copy rows too, so their pattern is trained on random tokens once the copy circuit has formed
    hint_steps: int = 300  # previous-token hint on layer 0 head 0 (training/hint.py) for these steps
    hint_weight: float = 1.0
    hint_dropout: float = 0.0  # after the hint, the hinted head is knocked out on this share of rows, so the
    # copy circuit needs a second previous-token head, one the hint never touched (training/hint.py)
    copy_dropout: float = 0.0  # after the hint, the copying (not copy-free) heads of copy_dropout_layer are
    copy_dropout_layer: int = 1  # knocked out on this share of copy rows, so another layer must learn to copy
    # too (training/head_dropout.py)
    eval_every: int = 150
    compile: bool = False  # measured: no faster on this CPU, and 100 s to compile
    bf16_autocast: bool = False  # measured on this 2-core AMD EPYC (no AVX512-BF16): bf16 matmuls
    # 12x slower than float32 (45 s against 3.6 s for one backward pass of 16 x 256 tokens)
    store_dtype: str = "bfloat16"  # the checkpoint's weights (the app computes in float32 on CPU)


# The Llama-style classroom recipe. A tenth of the text rows are stories whose characters have invented
# two-word names, so a surname is predictable only by copying it (the "Zorbin Quell" demo; training_log.md,
# session 22); all three models read this same mixture. Its curriculum (session 24: try 34): the last 4 heads
# of every layer learn nothing from copy rows, so layer 1 is half induction heads, not all of it; the hinted
# head is knocked out on half the rows after the hint, so an unhinted head learns the previous token; and short
# copy rows of 64 tokens on every other step to the last make the four induction heads copy strongly enough
# for the made-up names (with short rows only to step 500, four heads never put "Zorbin"'s surname first:
# sessions 13-19). Session 29 (try 53): from step 600 layer 0's free heads learn from the copy rows too, and half
# the random spans recur tokens, so copying needs the last two or three tokens and two of those heads learn to
# read two and three back on any text (the atlas's local role). 2600 steps: 43 min on one thread while another
# run had the other core.
CLASSROOM = Recipe(
    invented_name_share=0.1,
    copy_free_heads=4,
    hint_dropout=0.5,
    short_seq=64,
    short_steps=2600,
    steps=2600,
    copy_free_layer0_steps=600,
    span_reuse=0.5,
)

RECIPES = {
    "classroom": CLASSROOM,
    # The no-position twin: the classroom recipe with RoPE taken out, so a class can measure how much order
    # the causal mask alone gives back (labs/position_probe.py). No hint: with no position in layer 0 a head
    # there cannot single out the previous token, so the hint could only pull on nothing.
    "classroom-nope": replace(CLASSROOM, name="classroom-nope", no_position=True, hint_steps=0),
    # The twin: same data, tokenizer and size; GPT-2's block and no hint of any kind. Without the hint its
    # copying circuit needs a gentler start (training_log.md, sessions 5-6): a lower learning rate, short rows
    # of 64, spans from 64 ids first, then twice as many every 75 steps while half the short rows keep the
    # 64, short rows on every other step to the end (the second copy falls only while they last: with them
    # stopped at step 2700 the counting demo was lost, twin try 15), and 4200 steps in all (54.8 min alone on
    # 2 threads: twin try 17 in training_log.md; with 3400, try 16, the twin did not copy Zorbin's name).
    "classroom-gpt2": Recipe(
        name="classroom-gpt2",
        arch="gpt2",
        n_kv_head=8,
        d_ff=1024,
        hint_steps=0,
        lr=1e-3,
        short_seq=64,
        short_steps=4200,
        steps=4200,
        early_span_vocab=64,
        early_span_steps=300,
        span_double_every=75,
        early_span_keep=0.5,
        invented_name_share=0.1,
    ),
}
