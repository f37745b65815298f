"""One prompt's views as a single self-contained HTML file, for handouts and notebooks.

    python -m app export "The cat sat on the mat" --model classroom -o lesson.html
    from app.export import export_html; export_html(lm, "The cat sat", "lesson.html")

The file holds the model's numbers for that prompt as JSON, our own stylesheet and our own views
(static/js, inlined by app/jsbundle.py), and nothing else: it opens from disk with no server and no
network (no Plotly: the heatmap, bars, token strip and head grid are canvas or plain HTML). The
model package cannot import the app, so this lives here rather than as a LanguageModel method.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from app.wire import encode_attention, rounded, sig
from model import LanguageModel
from model.loading import ModelLoadError, load

from .jsbundle import bundle

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "static" / "js" / "pages" / "export.js"
STYLES = [ROOT / "static" / "css" / "app.css", ROOT / "static" / "css" / "export.css"]
TEMPLATE = ROOT / "templates" / "export.html"
TOP_K = 10


def exact_attention(attention: torch.Tensor) -> dict:
    """(L, H, n, n) causal probabilities -> little-endian uint16 (p * 65535) of keys 0..i of each row,
    base64: within 8e-6 of the model's, enough for four decimals on hover, half the bytes of float32."""
    L, H, n, _ = attention.shape
    rows, cols = torch.tril_indices(n, n)
    q = (attention[:, :, rows, cols].double() * 65535).round().clamp(0, 65535).numpy().astype("<u2")
    return {"n_layer": L, "n_head": H, "n": n, "data": base64.b64encode(q.tobytes()).decode("ascii")}


def lesson_data(lm: LanguageModel, prompt: str | Sequence[int]) -> dict:
    """Everything the lesson file shows, computed by the model for this prompt (text or token ids)."""
    t = lm.trace(prompt, lens_k=0)  # the lesson shows no lens
    prompt = prompt if isinstance(prompt, str) else lm.tokenizer.decode(t.token_ids)
    top = torch.softmax(t.logits, dim=-1).topk(min(TOP_K, lm.config.vocab_size), dim=-1)
    ids = top.indices.tolist()
    displays = [lm.tokenizer.displays(row) for row in ids]
    next_tokens = [
        [{"id": i, "token": d, "prob": p} for i, d, p in zip(row, drow, prow, strict=True)]
        for row, drow, prow in zip(ids, displays, sig(top.values, 4), strict=True)
    ]
    cfg = lm.config
    return {
        "model": lm.name, "prompt": prompt, "tokens": t.tokens, "token_ids": t.token_ids,
        "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_kv_head": cfg.n_kv_head,
        "attention": encode_attention(t.attention, causal=True),  # what the head grid draws
        "exact": exact_attention(t.attention),  # what the heatmap shows on hover
        "next": next_tokens,
        "resid": {"stages": t.stage_names, "norms": rounded(t.resid_norms, 3)},
    }  # fmt: skip


def script_json(value: dict) -> str:
    """JSON safe inside <script>: no '<' to close the element, and '/' escaped, so token text such as
    'https://...' never appears in the file as a URL."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("/", "\\/")


def lesson_html(lm: LanguageModel, prompt: str | Sequence[int]) -> str:
    data = lesson_data(lm, prompt)
    prompt = data["prompt"]
    styles = "\n".join(p.read_text(encoding="utf-8") for p in STYLES)
    script = bundle(ENTRY).replace("</script", "<\\/script")
    page = TEMPLATE.read_text(encoding="utf-8")
    for key, value in (("TITLE", html.escape(f"{lm.name}: {prompt}")[:200]), ("STYLES", styles),
                       ("DATA", script_json(data)), ("SCRIPT", script)):  # fmt: skip
        page = page.replace(f"<!--{key}-->", value, 1)
    return page


def export_html(lm: LanguageModel, prompt: str | Sequence[int], path: str | Path | None = None) -> str:
    """The lesson file's HTML for `prompt`; also written to `path` when one is given."""
    page = lesson_html(lm, prompt)
    if path is not None:
        Path(path).write_text(page, encoding="utf-8")
    return page


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m app export",
                                description="Write one prompt's views as a single HTML file that opens offline.")  # fmt: skip
    p.add_argument("prompt", help="the text to run through the model")
    p.add_argument(
        "--model", default="classroom",
        help="a bundled model name, a model folder or a Hugging Face name such as gpt2 (default classroom)",
    )  # fmt: skip
    p.add_argument("-o", "--output", default="lesson.html", help="the file to write (default lesson.html)")
    args = p.parse_args(argv)
    try:
        lm = load(args.model)
        export_html(lm, args.prompt, args.output)
    except (ModelLoadError, ValueError, OSError) as e:
        sys.exit(f"Cannot export: {e}")
    size = Path(args.output).stat().st_size
    print(f"Wrote {args.output} ({size / 1e6:.2f} MB): open it in any browser, no server needed.")
