"""Small seeded models and a tiny tokenizer, built without any download: the fixtures' material."""

from __future__ import annotations

import torch
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from model import ModelConfig, Tokenizer, Transformer

TEXT = (
    "The cat sat on the mat. The dog bites the man. The man bites the dog.\n"
    "Lily had a red ball. She gave it to Tom. Once upon a time there was a small fox.\n"
)


def make_tokenizer(vocab_size: int = 300) -> Tokenizer:
    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator([TEXT] * 20, trainer)
    return Tokenizer(hf)


def tiny_model(arch: str = "llama", seed: int = 0, **kw) -> Transformer:
    defaults = dict(vocab_size=300, n_layer=2, n_head=4, n_kv_head=2, d_model=32, d_ff=64, context_length=64)
    if arch == "gpt2":
        defaults.update(n_kv_head=4, d_ff=128)
    torch.manual_seed(seed)
    net = Transformer(ModelConfig(arch=arch, **{**defaults, **kw}))
    net.init_weights(seed)
    # Random norm gains and biases so tests cannot pass by accident of ones and zeros.
    with torch.no_grad():
        for p in net.parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
    return net.eval()
