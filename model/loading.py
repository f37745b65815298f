"""`load()`: a bundled model by name, a folder in our format, a Hugging Face model folder, or a
Hugging Face name found in the local cache (model/hub.py)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from .config import ModelConfig
from .hf_names import SUPPORTED, UnsupportedModel, config_from_hf, state_dict_from_hf
from .hub import HubError, is_hub_name, resolve
from .lm import LanguageModel
from .tokenizer import Tokenizer
from .transformer import Transformer, rope_inv_freq

CHECKPOINTS = Path(__file__).parent / "checkpoints"
BUNDLED = (
    "classroom",
    "classroom-gpt2",
    "classroom-nope",
)  # Llama-style, its GPT-2-style twin, its no-position twin (training/recipe.py)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelLoadError(ValueError):
    pass


def bundled_path(name: str) -> Path:
    return CHECKPOINTS / name


def load(
    name_or_path: str | Path, device: str = "cpu", dtype: torch.dtype | str | None = None
) -> LanguageModel:
    """Load a model by bundled name, folder path or Hugging Face name (`gpt2`, `Qwen/Qwen2.5-0.5B`,
    `name@revision`: the local cache first, see model/hub.py). `dtype`: the weights' dtype, float32 on
    CPU and bfloat16 on CUDA unless given. Errors say what is wrong and what is supported."""
    dtype = resolve_dtype(dtype, device)
    folder, name = locate(name_or_path)
    config_file = folder / "config.json"
    if not config_file.exists():
        raise ModelLoadError(f"{folder} has no config.json")
    try:
        raw = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise ModelLoadError(f"{config_file} is not valid JSON text: {e}") from e
    if not isinstance(raw, dict):
        raise ModelLoadError(f"{config_file} must hold a JSON object of settings")
    try:
        cfg, sd = _read_ours(folder, raw, name) if "arch" in raw else _read_hf(folder, raw, name)
    except UnsupportedModel as e:
        raise ModelLoadError(str(e)) from e
    except ModelLoadError:
        raise
    except KeyError as e:
        raise ModelLoadError(f"{folder}: config or weights are missing {e}; supported: {SUPPORTED}") from e
    except (TypeError, ValueError, OverflowError) as e:  # e.g. "n_layer": "four"
        raise ModelLoadError(f"{config_file} has a setting of the wrong kind or range: {e}") from e
    tok_file = folder / "tokenizer.json"
    if not tok_file.exists():
        raise ModelLoadError(f"{folder} has no tokenizer.json (Hugging Face `tokenizers` format)")
    net = build(cfg, sd, folder, dtype)
    try:
        tokenizer = Tokenizer.from_file(tok_file)
    except Exception as e:  # the tokenizers library raises its own Exception subclass for a bad file
        raise ModelLoadError(f"{tok_file} is not a readable Hugging Face tokenizer: {e}") from e
    base_vocab = tokenizer.hf.get_vocab_size(with_added_tokens=False)
    if base_vocab > cfg.vocab_size:  # ids past the embedding table would fail inside the first forward
        raise ModelLoadError(
            f"{tok_file} has {base_vocab} tokens but the model has only {cfg.vocab_size} embeddings: "
            "the tokenizer does not belong to these weights"
        )
    card = folder / "MODEL_CARD.md"
    return LanguageModel(
        net.to(device=device).eval(),
        tokenizer,
        name=name,
        card=card.read_text() if card.exists() else None,
    )


def resolve_dtype(dtype: torch.dtype | str | None, device: str | torch.device = "cpu") -> torch.dtype:
    """A dtype from its name (or itself); None: float32 on CPU, bfloat16 on CUDA (half the memory, and
    the dtype GPUs multiply fastest in)."""
    if dtype is None:
        return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
    found = DTYPES.get(dtype) if isinstance(dtype, str) else dtype
    if found not in DTYPES.values():
        raise ModelLoadError(f"dtype {dtype!r} is not supported; choose one of {', '.join(DTYPES)}")
    return found


def locate(name_or_path: str | Path) -> tuple[Path, str]:
    """(folder, name shown): a bundled model, a folder, or a Hugging Face name found in the local cache
    (or downloaded, where this machine can). A folder wins over a Hub name spelt the same."""
    spec = str(name_or_path)
    if spec in BUNDLED:
        folder = bundled_path(spec)
        if not (folder / "model.safetensors").exists():
            raise ModelLoadError(
                f"the bundled model {spec!r} is not in {folder}; train it with `python -m training.train`"
            )
        return folder, spec
    if Path(spec).is_dir():
        return Path(spec), Path(spec).name
    if isinstance(name_or_path, str) and is_hub_name(spec):
        try:
            return resolve(spec), spec
        except HubError as e:
            raise ModelLoadError(str(e)) from e
    raise ModelLoadError(
        f"{spec!r} is neither a bundled model ({', '.join(BUNDLED)}) nor a folder"
        " nor a Hugging Face model name (org/name)"
    )


def _read_ours(folder: Path, raw: dict, name: str):
    cfg = ModelConfig.from_dict({**raw, "name": name})
    return cfg, _read_weights(folder)


def _read_hf(folder: Path, raw: dict, name: str):
    cfg = config_from_hf(raw, name)
    return cfg, state_dict_from_hf(cfg, _read_weights(folder))


def _read_weights(folder: Path) -> dict[str, torch.Tensor]:
    try:
        if (folder / "model.safetensors").exists():
            return load_file(folder / "model.safetensors")
        index = folder / "model.safetensors.index.json"
        if index.exists():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            return {k: v for s in shards for k, v in load_file(folder / Path(s).name).items()}
        if (folder / "pytorch_model.bin").exists():
            return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True, mmap=True)
    except (SafetensorError, OSError, RuntimeError, json.JSONDecodeError) as e:
        raise ModelLoadError(f"the weights in {folder} are corrupt or unreadable: {e}") from e
    raise ModelLoadError(f"{folder} has no model.safetensors or pytorch_model.bin")


def build(
    cfg: ModelConfig,
    sd: dict[str, torch.Tensor],
    folder: Path | str = "weights",
    dtype: torch.dtype = torch.float32,
) -> Transformer:
    """Our Transformer holding `sd`'s tensors at `dtype`, with no weights of its own allocated first:
    built on the meta device, then given the tensors themselves (`assign=True`). A tensor already at
    `dtype` stays the memory-mapped one safetensors returned, so a bfloat16 checkpoint loaded as
    bfloat16 is never copied; any other is converted once."""
    try:
        with torch.device("meta"):
            net = Transformer(cfg)
    except (RuntimeError, MemoryError, TypeError, ValueError, OverflowError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelLoadError(
            f"{folder}: cannot build the model its config.json describes (a setting out of range): {first[:200]}"
        ) from e
    expected = net.state_dict()
    missing = [k for k in expected if k not in sd and not (cfg.tie_embeddings and k == "unembed.weight")]
    if missing:
        raise ModelLoadError(f"{folder}: weights missing for {missing[:5]} ({len(missing)} in all)")
    for k, v in sd.items():
        if k in expected and expected[k].shape != v.shape:
            raise ModelLoadError(
                f"{folder}: {k} has shape {tuple(v.shape)}, config says {tuple(expected[k].shape)}"
            )
    try:
        # A tied head is the embedding itself (tied again below): converting it too would make a second
        # copy of the largest matrix (1 GB for Llama-3.2-1B in float32) just to throw it away.
        tied = {"unembed.weight"} if cfg.tie_embeddings else set()
        weights = {k: v.to(dtype) for k, v in sd.items() if k in expected and k not in tied}
        net.load_state_dict(weights, strict=False, assign=True)
    except (RuntimeError, MemoryError) as e:
        raise ModelLoadError(
            f"{folder}: the weights do not fit in this machine's memory at {dtype}: {e}"
        ) from e
    if cfg.tie_embeddings:  # one Parameter under both names, as Transformer() ties them
        net.unembed.weight = net.embed.weight
    if cfg.arch == "llama":  # RoPE's speeds are in no checkpoint: computed in float32, as Attention does
        inv_freq = rope_inv_freq(cfg.hd, cfg.rope_base, cfg.rope_llama3).float()
        for block in net.blocks:
            block.attn.inv_freq = inv_freq
    left = [n for n, t in [*net.named_parameters(), *net.named_buffers()] if t.is_meta]
    if left:
        raise ModelLoadError(f"{folder}: no weights for {left[:5]}")
    return net


def save(
    lm_net: Transformer, tokenizer: Tokenizer, folder: Path, card: str | None = None, dtype: str | None = None
) -> None:
    """Write our own format: config.json + model.safetensors + tokenizer.json (+ MODEL_CARD.md), the
    weights in `dtype` ("bfloat16" halves the file; loading converts to the dtype asked for)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    cfg = {k: v for k, v in lm_net.cfg.to_dict().items() if k != "name"}
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    to = resolve_dtype(dtype) if dtype else None
    sd = {k: v.detach().cpu().to(to or v.dtype).contiguous() for k, v in lm_net.state_dict().items()}
    if lm_net.cfg.tie_embeddings:
        sd.pop("unembed.weight")
    save_file(sd, folder / "model.safetensors")
    tokenizer.hf.save(str(folder / "tokenizer.json"))
    if card is not None:
        (folder / "MODEL_CARD.md").write_text(card)
