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

    def batch_of(self, tokens: str | Sequence[int] | Sequence[Sequence[int]] | torch.Tensor) -> torch.Tensor:
        """Text, one list of ids, or a batch of equal-length id lists -> (B, T) ids on the model's device."""
        if isinstance(tokens, torch.Tensor):
            rows = tokens.tolist() if tokens.dim() == 2 else [tokens.tolist()]
        elif isinstance(tokens, str) or not tokens or not isinstance(tokens[0], Sequence):
            rows = [tokens]
        else:
            rows = list(tokens)
        rows = [self.ids_of(r) for r in rows]
        if len({len(r) for r in rows}) > 1:
            raise ValueError("every row of a batch must have the same number of tokens")
        return torch.tensor(rows, dtype=torch.long, device=self.device)

    @torch.inference_mode()
    def run_with_cache(
        self,
        tokens: str | Sequence[int] | Sequence[Sequence[int]] | torch.Tensor,
        names: Collection[str] | None = None,
        *,
        logits: bool = True,
        **switches,
    ) -> tuple[torch.Tensor | None, dict[str, torch.Tensor]]:
        """One forward pass that keeps the named hooks, as TransformerLens's `run_with_cache` does:
        returns (logits (B, T, V) or None, {hook name: tensor with the batch dimension first}).

        `names` are full hook names (build them with `model.act_name`); None keeps every hook.
        `logits=False` stops before the unembedding: the cheap way to read attention on a big vocabulary.
        `switches` are `make_run`'s: position, causal, ablate, ablate_mode, rope_scale."""
        idx = self.batch_of(tokens)
        run = self.make_run(**switches)
        wanted = set(self.net.hook_names if names is None else names)
        unknown = wanted - set(self.net.hook_names)
        if unknown:
            raise ValueError(f"no hook named {sorted(unknown)[:3]}; see model.act_name")
        run.capture = wanted
        if logits:
            return self.net(idx, run), run.cache
        self.net.residual_stream(idx, run)
        return None, run.cache

    @torch.inference_mode()
    def logits(self, text_or_ids: str | Sequence[int], **switches) -> torch.Tensor:
        """(n, V) logits without capturing anything: the fast path for batch scoring."""
        ids = self.ids_of(text_or_ids)
        idx = torch.tensor([ids], device=self.device)
        return self.net(idx, self.make_run(**switches))[0].float()

    def check_heads(self, heads: Collection[tuple[int, int]]) -> list[tuple[int, int]]:
        """(layer, head) pairs, checked against this model and sorted without repeats. The one place
        a head index is checked: its message is what the API and the pages show."""
        cfg = self.config
        for layer, head in heads:
            if not (0 <= layer < cfg.n_layer and 0 <= head < cfg.n_head):
                raise ValueError(
                    f"There is no head [{layer}, {head}]: model {self.name!r} has layers 0-{cfg.n_layer - 1} "
                    f"and heads 0-{cfg.n_head - 1}."
                )
        return sorted({(int(layer), int(head)) for layer, head in heads})

    def make_run(
        self,
        position: bool = True,
        causal: bool = True,
        ablate: Collection[tuple[int, int]] = (),
        ablate_mode: str = "zero",
        rope_scale: float | None = None,
    ) -> Run:
        ablate = self.check_heads(ablate)
        if ablate_mode not in ("zero", "mean"):
            raise ValueError("ablate_mode must be 'zero' or 'mean'")
        return Run(position=position, causal=causal, ablate=tuple(ablate), ablate_mode=ablate_mode,
                   rope_scale=rope_scale)  # fmt: skip
