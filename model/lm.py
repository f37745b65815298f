"""`LanguageModel`: a Transformer with its tokenizer, the object notebook users and the app hold."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import torch

from .cache import ActivationCache
from .config import ModelConfig
from .hooks import ABLATE_MODES, HookFn, Run, ablate_heads, act_name
from .tokenizer import Tokenizer
from .trace import Trace, run_trace
from .transformer import Transformer

PATTERN_HOOKS = ("hook_attn_scores", "hook_pattern")  # only the explicit attention path computes these
OPTIONAL_HOOKS = (
    "hook_result",
)  # computed only when named: (B, T, H, D) is H times what the plain path writes
NamesFilter = str | Collection[str] | Callable[[str], bool] | None


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
        last_logits_only: bool = False,
    ) -> Trace:
        ids = self.ids_of(text_or_ids)
        run = self.make_run(position, causal, ablate, ablate_mode, rope_scale)
        return run_trace(
            self.net, ids, self.tokenizer.displays(ids), run, lens_k, keep_resid, last_logits_only
        )

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
        names_filter: NamesFilter = None,
        *,
        logits: bool = True,
        fwd_hooks: Sequence[tuple[str | Callable[[str], bool], HookFn]] = (),
        **switches,
    ) -> tuple[torch.Tensor | None, ActivationCache]:
        """One forward pass that keeps the named hooks, as TransformerLens's `run_with_cache` does:
        returns (logits (B, T, V) or None, an `ActivationCache` with the batch dimension first).

        `names_filter`: None keeps every hook but `attn.hook_result` (as TransformerLens, which
        computes per-head results only when asked: name it, or let `cache.stack_head_results()`
        derive it from hook_z), and with impl="sdpa" also but the scores and the pattern, which that
        path never computes; or one name, a list of names (`model.act_name` builds them), or a
        function name -> bool.
        `logits=False` stops before the unembedding: the cheap way to read attention on a big vocabulary.
        `fwd_hooks` are interventions as in `run_with_hooks`; the cache holds what flowed on after them.
        `switches` are `make_run`'s: position, causal, ablate, ablate_mode, rope_scale, impl."""
        idx = self.batch_of(tokens)
        run = self.make_run(**switches)
        run.capture = self.check_names(self.select_names(names_filter, run.impl), run.impl)
        self._add_hooks(run, fwd_hooks)
        if logits:
            out = self.net(idx, run)
        else:
            out = None
            self.net.residual_stream(idx, run)
        return out, ActivationCache(run.cache, self.net)

    def select_names(self, names_filter: NamesFilter, impl: str = "explicit") -> list[str]:
        """The hook names a TransformerLens-style names_filter stands for (see `run_with_cache`)."""
        if names_filter is None:
            return [n for n in self.net.hook_names if not n.endswith(OPTIONAL_HOOKS)
                    and (impl == "explicit" or not n.endswith(PATTERN_HOOKS))]  # fmt: skip
        if isinstance(names_filter, str):
            return [names_filter]
        if callable(names_filter):
            return [n for n in self.net.hook_names if names_filter(n)]
        return list(names_filter)

    @torch.inference_mode()
    def run_with_hooks(
        self,
        tokens: str | Sequence[int] | Sequence[Sequence[int]] | torch.Tensor,
        fwd_hooks: Sequence[tuple[str | Callable[[str], bool], HookFn]] = (),
        **switches,
    ) -> torch.Tensor:
        """Logits (B, T, V) of a forward pass with interventions, as TransformerLens's `run_with_hooks`:
        each (hook name, or a function name -> bool choosing hooks, fn) calls fn(activation, hook)
        and uses what it returns (None: unchanged). They apply to this call only; head ablation
        (`ablate=`) is one such intervention on hook_z."""
        run = self.make_run(**switches)
        self._add_hooks(run, fwd_hooks)
        return self.net(self.batch_of(tokens), run)

    def check_names(self, names: Collection[str], impl: str = "explicit") -> set[str]:
        """Hook names as a set, or a ValueError naming the ones this model does not have."""
        wanted = set(names)
        unknown = wanted - set(self.net.hook_names)
        if unknown:
            raise ValueError(f"no hook named {sorted(unknown)[:3]}; see model.act_name")
        if impl == "sdpa" and any(n.endswith(PATTERN_HOOKS) for n in wanted):
            raise ValueError("impl='sdpa' computes no attention pattern; capture it with impl='explicit'")
        return wanted

    def _add_hooks(self, run: Run, fwd_hooks: Sequence[tuple[str | Callable[[str], bool], HookFn]]) -> None:
        for name_or_filter, fn in fwd_hooks:
            names = self.select_names(name_or_filter if callable(name_or_filter) else [name_or_filter])
            for name in sorted(self.check_names(names), key=self.net.hook_names.index):
                run.add_hook(name, fn)

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
        impl: str = "explicit",
    ) -> Run:
        """The per-call Run for these switches; each ablated layer gets one intervention on its hook_z."""
        if ablate_mode not in ABLATE_MODES:
            raise ValueError("ablate_mode must be 'zero' or 'mean'")
        run = Run(position=position, causal=causal, rope_scale=rope_scale, impl=impl)
        heads = self.check_heads(ablate)
        for layer in sorted({layer for layer, _ in heads}):
            run.add_hook(
                act_name("z", layer), ablate_heads([h for lay, h in heads if lay == layer], ablate_mode)
            )
        return run
