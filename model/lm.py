"""`LanguageModel`: a Transformer with its tokenizer, the object notebook users and the app hold."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from .config import ModelConfig
from .hooks import Run
from .tokenizer import Tokenizer
from .trace import Trace, run_trace
from .transformer import Transformer


class LanguageModel:
    def __init__(self, net: Transformer, tokenizer: Tokenizer, name: str, card: str | None = None) -> None:
        self.net, self.tokenizer, self.name, self.card = net, tokenizer, name, card

    @property
    def config(self) -> ModelConfig:
        return self.net.cfg

    @property
    def device(self) -> torch.device:
        return next(self.net.parameters()).device

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def ids_of(self, text_or_ids: str | Sequence[int]) -> list[int]:
        ids = self.encode(text_or_ids) if isinstance(text_or_ids, str) else [int(i) for i in text_or_ids]
        if not ids:
            raise ValueError("the prompt has no tokens")
        if len(ids) > self.config.context_length:
            raise ValueError(f"{len(ids)} tokens exceed the context length {self.config.context_length}")
        bad = [i for i in ids if not 0 <= i < self.config.vocab_size]
        if bad:
            raise ValueError(f"token ids out of range 0..{self.config.vocab_size - 1}: {bad[:5]}")
        return ids

    def trace(
        self,
        text_or_ids: str | Sequence[int],
        *,
        position: bool = True,
        causal: bool = True,
        ablate: Collection[tuple[int, int]] = (),
        ablate_mode: str = "zero",
        rope_scale: float | None = None,
        lens_k: int = 5,
        keep_resid: bool = False,
    ) -> Trace:
        ids = self.ids_of(text_or_ids)
        run = self.make_run(position, causal, ablate, ablate_mode, rope_scale)
        return run_trace(self.net, ids, self.tokenizer.displays(ids), run, lens_k, keep_resid)

    @torch.inference_mode()
    def logits(self, text_or_ids: str | Sequence[int], **switches) -> torch.Tensor:
        """(n, V) logits without capturing anything: the fast path for batch scoring."""
        ids = self.ids_of(text_or_ids)
        idx = torch.tensor([ids], device=self.device)
        return self.net(idx, self.make_run(**switches))[0].float()

    def make_run(
        self,
        position: bool = True,
        causal: bool = True,
        ablate: Collection[tuple[int, int]] = (),
        ablate_mode: str = "zero",
        rope_scale: float | None = None,
    ) -> Run:
        cfg = self.config
        for layer, head in ablate:
            if not (0 <= layer < cfg.n_layer and 0 <= head < cfg.n_head):
                raise ValueError(f"no head L{layer}H{head} in a {cfg.n_layer}x{cfg.n_head} model")
        if ablate_mode not in ("zero", "mean"):
            raise ValueError("ablate_mode must be 'zero' or 'mean'")
        return Run(position=position, causal=causal, ablate=tuple(ablate), ablate_mode=ablate_mode,
                   rope_scale=rope_scale)  # fmt: skip
