"""RoPE stretched: loss by position on held-out text run past the training context, with and without
position interpolation.

RoPE keeps no table of positions, so a rotary model runs at any length: only the angles are new. Past
the trained length the slow hands reach angles training never saw. Position interpolation divides
every position by a scale s (the model's own `Run.rope_scale`, applied per call, so no other request
sees it), which keeps s times the trained length inside the trained angles, at the price of
neighbouring tokens sitting 1/s of a position apart: angles the model never saw either.

Loss is next-token cross-entropy in nats. Position p is the token that predicts token p + 1 (it has
seen p + 1 tokens); the trained length C means positions 0..C-1 are what training saw.
A GPT-2-style model has one learned vector per position up to C and nothing beyond: `stretch` refuses
it (the page shows why instead).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from model import LanguageModel
from model.hooks import Run
from model.transformer import Transformer

from .stories import held_out_stories

DEFAULT_SCALES = (1.0, 2.0, 4.0)
BINS_PER_CONTEXT = 8  # a curve point averages C/8 positions of every window: readable, still shaped

Runner = Callable[[Callable[[], torch.Tensor]], torch.Tensor]  # runs one forward (the server's queue)


def held_out_ids(lm: LanguageModel, n_tokens: int) -> list[int]:
    """At least n_tokens of held-out stories, joined by a blank line as training joined documents."""
    sep = lm.encode("\n\n")
    ids: list[int] = []
    docs = 64
    while len(ids) < n_tokens:
        ids = []
        for d in held_out_stories(docs):
            ids += lm.encode(d) + sep
        docs *= 2
    return ids[:n_tokens]


def widened(net: Transformer, n_positions: int) -> Transformer:
    """The same modules and weights (nothing copied) under a top level that accepts n_positions tokens.
    Only `Transformer.residual_stream` checks the context length; a rotary model's weights do not
    depend on it. A shallow copy: the blocks are shared with `net`, only the copy's config differs."""
    if net.cfg.positional != "rope":
        raise ValueError(
            f"{net.cfg.name} has learned positions: one vector per position up to {net.cfg.context_length}"
            " and none beyond, so it cannot run past its context"
        )
    wide = copy.copy(net)
    wide.cfg = dataclasses.replace(net.cfg, context_length=max(n_positions, net.cfg.context_length))
    return wide


def window_losses(net: Transformer, ids: torch.Tensor, scale: float) -> torch.Tensor:
    """(T - 1,) next-token loss at each position of one window (T,), positions divided by `scale`
    (on top of the model's own `rope_scale`), through the fused attention path (no pattern is needed)."""
    run = Run(rope_scale=net.cfg.rope_scale * scale, impl="sdpa")
    logits = net(ids[None], run)[0, :-1].float()  # (T - 1, V)
    return F.cross_entropy(logits, ids[1:], reduction="none")


@dataclass(frozen=True)
class Curve:
    scale: float  # 1 = no interpolation
    loss: torch.Tensor  # (T - 1,) mean over windows, nats
    bins: torch.Tensor  # (n_bins,) mean of `loss` over each bin of positions
    inside: float  # mean loss over positions 0..C-1
    beyond: float  # mean loss over positions C..T-2 (nan when the run is not longer than C)


@dataclass(frozen=True)
class Stretch:
    context_length: int  # C, the trained length
    length: int  # T, tokens per window
    windows: int
    tokens: int  # windows x T held-out tokens read
    bin_width: int
    bin_starts: list[int]  # first position of each bin
    curves: list[Curve]
    seconds: float


def stretch(
    lm: LanguageModel,
    factor: int = 4,
    scales: Sequence[float] = DEFAULT_SCALES,
    windows: int = 4,
    run: Runner | None = None,
    ids: Sequence[int] | None = None,
) -> Stretch:
    """Loss by position over `windows` windows of factor x C held-out tokens (or of `ids`), for each
    interpolation scale. `run(fn)` runs each forward (one window, one scale) as its own job, so a
    server interleaves other requests between them."""
    C = lm.config.context_length
    T = factor * C
    net = widened(lm.net, T)
    stream = list(ids) if ids is not None else held_out_ids(lm, windows * T)
    if len(stream) < windows * T:
        raise ValueError(f"{windows} windows of {T} tokens need {windows * T} tokens; got {len(stream)}")
    x = torch.tensor(stream[: windows * T], device=lm.device).view(windows, T)
    run = run or (lambda fn: fn())
    start = time.perf_counter()
    width = max(1, C // BINS_PER_CONTEXT)
    starts = list(range(0, T - 1, width))
    curves = []
    for s in scales:
        per = torch.stack(
            [run(lambda w=w, s=s: _inference(window_losses, net, x[w], s)) for w in range(windows)]
        )
        loss = per.mean(0).cpu()
        bins = torch.stack([loss[b : b + width].mean() for b in starts])
        beyond = float(loss[C:].mean()) if T - 1 > C else float("nan")
        curves.append(Curve(float(s), loss, bins, float(loss[:C].mean()), beyond))
    seconds = time.perf_counter() - start
    return Stretch(C, T, windows, windows * T, width, starts, curves, seconds)


def _inference(fn, *args):
    with torch.inference_mode():
        return fn(*args)


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m labs.stretch [--model NAME] [--factor 4] [--windows 4] [--scales 1 2 4]`: loss by
    position (nats) on held-out stories past the training length, without and with interpolation."""
    import argparse

    from model.loading import load

    p = argparse.ArgumentParser(prog="python -m labs.stretch", description=main.__doc__)
    p.add_argument("--model", default="classroom")
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--windows", type=int, default=4)
    p.add_argument("--scales", type=float, nargs="+", default=list(DEFAULT_SCALES))
    args = p.parse_args(argv)
    lm = load(args.model)
    r = stretch(lm, args.factor, args.scales, args.windows)
    C = r.context_length
    print(
        f"{lm.name}: trained length {C}, {r.windows} windows of {r.length} held-out tokens, {r.seconds:.1f} s"
    )
    print("positions".ljust(12) + "".join(f"scale {c.scale:g}".rjust(10) for c in r.curves))
    edges = [0, C // 2, C, 2 * C, 3 * C, r.length - 1]
    for a, b in zip(edges, edges[1:], strict=False):
        if a < b:
            row = "".join(f"{float(c.loss[a:b].mean()):10.2f}" for c in r.curves)
            print(f"{a}-{b - 1}".ljust(12) + row)
    print("inside".ljust(12) + "".join(f"{c.inside:10.2f}" for c in r.curves))
    print("beyond".ljust(12) + "".join(f"{c.beyond:10.2f}" for c in r.curves))


if __name__ == "__main__":
    main()
