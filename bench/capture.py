"""Capture overhead: what it costs to see everything, relative to a plain SDPA forward.

Variants, all on the same weights and the same token ids, interleaved in one run:
- `sdpa`: plain forward through `F.scaled_dot_product_attention` (the baseline, see plain.py);
- `ours_fwd`: our forward with explicit attention and no capture (`lm.logits`' path);
- `ours_hooks`: `lm.run_with_cache` storing every hook a trace needs, without norms or logit lens;
- `ours_trace`: the full `run_trace` with the logit lens (all hooks, residual norms, write norms, lens),
  what POST /api/lens runs and what every keystroke ran before the lens was fetched on its own;
- `keystroke`: what POST /api/trace computes per keystroke of the page (`predict: "last"`): the trace
  without the lens, top-10 next tokens at the last position, the head to open first and every head's
  max-pooled thumbnail;
- `hf_eager`: HF transformers eager with `output_attentions` and `output_hidden_states`.
"""

from __future__ import annotations

import torch

from app.wire import encode_thumbnails
from labs.predict import top_k
from labs.showcase import showcase_head
from model import LanguageModel, ModelConfig, Run, Transformer
from model.trace import capture_names, run_trace

from .hf_baseline import hf_capture, hf_model
from .models import bench_models
from .plain import check_plain_forward, plain_forward
from .timing import interleaved, median

NS = (16, 64, 128, 256, 512, 1024)
TARGET_N, TARGET_RATIO = 128, 1.15
KEYSTROKE_RATIO = 1.3  # what one keystroke's answer may cost, against a plain forward, at TARGET_N


def with_context(net: Transformer, n: int) -> Transformer:
    """The same weights with room for n tokens (RoPE has no position table, so this is free)."""
    if net.cfg.context_length >= n or net.cfg.arch != "llama":
        return net
    wider = Transformer(ModelConfig(**{**net.cfg.to_dict(), "context_length": n}))
    wider.load_state_dict(net.state_dict())
    return wider.eval()


def keystroke(net: Transformer, ids: list[int], tokens: list[str]) -> None:
    """The model work of app/trace/handler.py's `trace` for the page's keystroke, `predict: "last"` (its
    JSON and token text are not timed)."""
    t = run_trace(net, ids, tokens, Run(), lens_k=0, last_logits_only=True)
    top_k(t.logits, 10, 1.0)
    showcase_head(t.attention)
    encode_thumbnails(t.attention, causal=True)


def variants(net: Transformer, ref, idx: torch.Tensor) -> dict:
    ids = idx[0].tolist()
    tokens = [str(i) for i in ids]
    names = capture_names(net.cfg.n_layer)
    lm = LanguageModel(net, tokenizer=None, name=net.cfg.name)  # token ids in, so no tokenizer is needed

    return {
        "sdpa": lambda: plain_forward(net, idx),
        "ours_fwd": lambda: torch.inference_mode()(net)(idx),
        "ours_hooks": lambda: lm.run_with_cache(idx, names),
        "ours_trace": lambda: run_trace(net, ids, tokens, Run(), lens_k=5),  # the app's lens_k
        "keystroke": lambda: keystroke(net, ids, tokens),
        "hf_eager": lambda: hf_capture(ref, idx),
    }


def reps_for(n: int, d_model: int, quick: bool) -> int:
    big = n * d_model >= 512 * 768
    if quick:
        return 3 if big else 7
    return 7 if big else 25


def run(ns=NS, quick: bool = True) -> dict:
    rows = []
    for label, net in bench_models():
        net = with_context(net, max(ns))
        ref = hf_model(net)
        check_plain_forward(net, torch.randint(0, net.cfg.vocab_size, (1, 33)))
        for n in ns:
            if n > net.cfg.context_length:
                continue
            idx = torch.randint(0, net.cfg.vocab_size, (1, n), generator=torch.Generator().manual_seed(n))
            times = interleaved(variants(net, ref, idx), reps_for(n, net.cfg.d_model, quick))
            med = {k: median(v) for k, v in times.items()}
            rows.append({"model": label, "n": n, "reps": len(times["sdpa"]), "median_s": med,
                         "ratio_vs_sdpa": {k: v / med["sdpa"] for k, v in med.items()}})  # fmt: skip
        del ref
    return {"rows": rows, "target": {"n": TARGET_N, "max_ratio": TARGET_RATIO}}


def table(result: dict) -> list[str]:
    lines = ["Capture overhead (median time, and ratio to a plain SDPA forward on the same weights)",
             f"{'model':28} {'n':>5} {'reps':>4} {'sdpa ms':>8} {'fwd':>6} {'hooks':>6} {'trace':>6} {'keys':>6} {'HF eager':>8}"]  # fmt: skip
    for r in result["rows"]:
        q = r["ratio_vs_sdpa"]
        lines.append(
            f"{r['model']:28} {r['n']:>5} {r['reps']:>4} {r['median_s']['sdpa'] * 1e3:>8.2f} {q['ours_fwd']:>5.2f}x "
            f"{q['ours_hooks']:>5.2f}x {q['ours_trace']:>5.2f}x {q['keystroke']:>5.2f}x {q['hf_eager']:>7.2f}x"
        )
    return lines


def verdicts(result: dict) -> list[str]:
    t = result["target"]
    out = []
    for r in result["rows"]:
        if r["n"] == t["n"]:
            q = r["ratio_vs_sdpa"]["ours_hooks"]
            ok = "met" if q <= t["max_ratio"] else f"MISSED by {(q / t['max_ratio'] - 1) * 100:.0f}%"
            out.append(
                f"capture target ({r['model']}, n={t['n']}): every hook {q:.2f}x <= {t['max_ratio']}x: {ok}"
            )
            k = r["ratio_vs_sdpa"]["keystroke"]
            ok = "met" if k <= KEYSTROKE_RATIO else f"MISSED by {(k / KEYSTROKE_RATIO - 1) * 100:.0f}%"
            out.append(f"keystroke target ({r['model']}, n={t['n']}): {k:.2f}x <= {KEYSTROKE_RATIO}x: {ok}")
    return out
