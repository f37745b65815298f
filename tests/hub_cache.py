"""A fake Hugging Face cache in a temporary folder, laid out as huggingface_hub writes it:
`models--org--name/blobs/<hash>` holding the bytes, `snapshots/<commit>/<file>` linking to them, and
`refs/<branch>` naming the commit. The model is a tiny random GPT-2 saved by transformers."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from tests.tiny import make_tokenizer


def tiny_gpt2(seed: int = 0) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=300, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # HF starts norms at 1 and biases at 0: perturb them so a mix-up would show
        for name, p in model.named_parameters():
            if "ln_" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    return model


def save_hf_files(model: GPT2LMHeadModel, folder: Path) -> Path:
    """config.json, model.safetensors and tokenizer.json, as a Hub repository holds them."""
    model.save_pretrained(folder)
    make_tokenizer().hf.save(str(folder / "tokenizer.json"))
    return folder


def add_to_cache(cache: Path, repo: str, files: Path, commit: str, ref: str | None = "main") -> Path:
    """Put the files of `files` into `cache` as commit `commit` of `repo` (and `refs/<ref>` -> it)."""
    root = cache / ("models--" + repo.replace("/", "--"))
    snapshot = root / "snapshots" / commit
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for f in files.iterdir():
        blob = root / "blobs" / hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copyfile(f, blob)
        (snapshot / f.name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
    if ref is not None:
        (root / "refs").mkdir(exist_ok=True)
        (root / "refs" / ref).write_text(commit)  # huggingface_hub writes no newline
    return snapshot


def commit_id(n: int) -> str:
    return hashlib.sha1(str(n).encode()).hexdigest()
