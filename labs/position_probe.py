"""Where is position in the residual stream? A linear probe reads each token's position from it.

The chapter's caveat: attention alone is permutation-equivariant, but the causal mask is not. Token i
sees i + 1 tokens, so how its attention spreads tells how far into the text it is, and a model with no
positional encoding at all can still write its position into the residual stream. This measures it.

Held-out stories are cut into windows of `WINDOW` tokens. For every point of the residual stream (the
token embeddings, then after each block) a ridge regression from the vector to the token's position in
its window is fitted on half the windows and scored on the other half: R² (1 = the position read exactly,
0 = no better than guessing the average) and the mean error in tokens. Each is measured twice, with the
causal mask on (as the model was trained) and off: with neither mask nor positional encoding, a token's
vector depends only on its own token and the set of tokens in its window, so no layer can know its
position, and the probe falls back to what the words alone tell (the control: the token embeddings).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from model import LanguageModel, act_name

from .stretch import held_out_ids

WINDOW = 64  # tokens per window: a classroom-sized prompt
WINDOWS = 48  # half fit the probe, half score it: 1,536 tokens each
BATCH = 8  # windows per forward (each its own job on a server's queue)
PENALTIES = (1e-3, 1e-2, 1e-1, 1.0)  # ridge penalties per fitted token, on standardized features; the
# one used is chosen on the fit half alone (two folds), so 256+ dimensions cannot memorise 1,536 positions

Runner = Callable[[Callable[[], object]], object]


@dataclass(frozen=True)
class Point:
    name: str  # "token embeddings", "after block 0", ...
    hook: str  # the hook read (TransformerLens name)
    r2: float  # held-out R² of the position probe
    error: float  # held-out mean absolute error, in tokens


@dataclass(frozen=True)
class Probe:
    window: int
    windows: int  # fitted on windows // 2, scored on the rest
    chance_error: float  # the mean error of always guessing the average position
    causal: list[Point]  # the mask on, as trained
    no_mask: list[Point]  # the mask off
    seconds: float


def stream_points(lm: LanguageModel) -> list[tuple[str, str]]:
    """(name, hook) of every point read: the token embeddings (without any position vector), the input
    of block 0 (with it, for learned positions), then the output of every block."""
    L = lm.config.n_layer
    points = [("token embeddings", act_name("embed"))]
    if lm.config.positional == "learned":
        points.append(("embeddings + position vectors", act_name("resid_pre", 0)))
    return points + [(f"after block {i}", act_name("resid_post", i)) for i in range(L)]


def probe_features(lm: LanguageModel, windows: torch.Tensor, causal: bool, run: Runner) -> list[torch.Tensor]:
    """Per point of `stream_points`, the (windows * WINDOW, D) float32 vectors of every token (the fit
    works in float64, one point at a time: `feature_bytes` is what this holds)."""
    hooks = [h for _, h in stream_points(lm)]
    parts: list[list[torch.Tensor]] = [[] for _ in hooks]
    for b in range(0, len(windows), BATCH):
        rows = windows[b : b + BATCH]

        def forward(rows=rows):
            _, cache = lm.run_with_cache(rows, hooks, logits=False, causal=causal, impl="sdpa")
            return [cache[h].float().flatten(0, 1).cpu() for h in hooks]

        for part, x in zip(parts, run(forward), strict=True):
            part.append(x)
    return [torch.cat(p) for p in parts]


def ridge(x_fit: torch.Tensor, y_fit: torch.Tensor, x_new: torch.Tensor, penalties) -> list[torch.Tensor]:
    """Predictions for x_new of a ridge regression fitted on (x_fit, y_fit), one per penalty (the Gram
    matrix, the costly part, is built once for all of them)."""
    mean, std = x_fit.mean(0), x_fit.std(0).clamp_min(1e-6)
    a, b = (x_fit - mean) / std, (x_new - mean) / std
    gram, rhs, eye = a.T @ a, a.T @ (y_fit - y_fit.mean()), torch.eye(a.shape[1], dtype=a.dtype)
    return [b @ torch.linalg.solve(gram + p * len(a) * eye, rhs) + y_fit.mean() for p in penalties]


def r_squared(y: torch.Tensor, pred: torch.Tensor) -> float:
    return float(1 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum())


def feature_bytes(lm: LanguageModel, windows: int = WINDOWS) -> int:
    """The residual-stream vectors one probe holds at once (every point, one mask setting)."""
    return windows * WINDOW * lm.config.d_model * 4 * len(stream_points(lm))


def fit_and_score(x: torch.Tensor, y: torch.Tensor, n_fit: int) -> tuple[float, float]:
    """The probe fitted on the first n_fit rows (its penalty chosen by two folds of them, whole windows
    each), scored on the rest: (R², mean absolute error)."""
    x = x.double()
    half = n_fit // 2 // WINDOW * WINDOW
    first, second = slice(0, half), slice(half, n_fit)
    folds = [
        [r_squared(y[test], pred) for pred in ridge(x[train], y[train], x[test], PENALTIES)]
        for train, test in ((first, second), (second, first))
    ]
    best = max(range(len(PENALTIES)), key=lambda i: folds[0][i] + folds[1][i])
    (pred,) = ridge(x[:n_fit], y[:n_fit], x[n_fit:], [PENALTIES[best]])
    return r_squared(y[n_fit:], pred), float((y[n_fit:] - pred).abs().mean())


def position_probe(lm: LanguageModel, run: Runner | None = None, windows: int = WINDOWS) -> Probe:
    """The probe at every point of the residual stream, with the causal mask on and off. `run(fn)`
    runs each forward and each point's fit as its own job (a server interleaves other requests)."""
    t0 = time.perf_counter()
    run = run or (lambda fn: fn())
    ids = torch.tensor(held_out_ids(lm, windows * WINDOW), device=lm.device).view(windows, WINDOW)
    y = torch.arange(WINDOW, dtype=torch.float64).repeat(windows)  # every token's position in its window
    n_fit = windows // 2 * WINDOW
    chance = float((y[n_fit:] - y[:n_fit].mean()).abs().mean())
    names = [n for n, _ in stream_points(lm)]
    hooks = [h for _, h in stream_points(lm)]
    curves = []
    for causal in (True, False):
        scores = [run(lambda x=x: fit_and_score(x, y, n_fit)) for x in probe_features(lm, ids, causal, run)]
        curves.append([Point(n, h, r2, err) for n, h, (r2, err) in zip(names, hooks, scores, strict=True)])
    return Probe(WINDOW, windows, chance, curves[0], curves[1], time.perf_counter() - t0)
