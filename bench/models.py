"""The models the benchmarks run: the bundled classroom model (or a random one of its shape until it
is trained) and a random GPT-2-small-shaped model. Random weights time the same as trained ones."""

from __future__ import annotations

import torch

from model import LanguageModel, ModelConfig, Transformer
from model.loading import ModelLoadError, load

# The classroom model's shape, used while model/checkpoints/classroom/ does not exist yet.
CLASSROOM_SHAPE = dict(arch="llama", vocab_size=4096, n_layer=4, n_head=8, n_kv_head=2, d_model=256, d_ff=704,
                       context_length=1024)  # fmt: skip
GPT2_SMALL_SHAPE = dict(arch="gpt2", vocab_size=50257, n_layer=12, n_head=12, n_kv_head=12, d_model=768,
                        d_ff=3072, context_length=1024)  # fmt: skip


def random_net(name: str, **shape) -> Transformer:
    torch.manual_seed(0)
    net = Transformer(ModelConfig(name=name, **shape))
    net.init_weights(0)
    return net.eval()


def bench_models() -> list[tuple[str, Transformer]]:
    """(label, net) pairs; the label says whether the classroom weights are real or random."""
    try:
        lm: LanguageModel = load("classroom")
        classroom = ("classroom (bundled)", lm.net)
    except ModelLoadError:
        classroom = ("classroom-shaped (random)", random_net("classroom-random", **CLASSROOM_SHAPE))
    return [classroom, ("gpt2-small-shaped (random)", random_net("gpt2-small-random", **GPT2_SMALL_SHAPE))]
