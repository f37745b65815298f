"""Hugging Face Hub names (`gpt2`, `Qwen/Qwen2.5-0.5B`, `gpt2@<revision>`) -> a model folder.

The local Hugging Face cache is read by hand, with no network and without `huggingface_hub` (not one
of our dependencies): `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`, where a
repository lives in `models--org--name/`, its branches and tags in `refs/<name>` (a commit hash) and
the files of each commit in `snapshots/<hash>/`. Only when the name is not there, and only if
`huggingface_hub` is installed and `HF_HUB_OFFLINE` is not set, the files we read (config, weights,
tokenizer) are downloaded into that same cache with its progress bars. Every failure is one sentence
that says what to run, and where.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

# A repository id as the Hub spells them, optionally `@revision` (branch, tag or commit).
HUB_NAME = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*(?:/[A-Za-z0-9][\w.-]*)?)(?:@(?P<rev>[\w./-]+))?")
COMMIT = re.compile(r"[0-9a-f]{40}")
# What the command we suggest fetches: config, tokenizer, and single, sharded or indexed safetensors.
PATTERNS = ("config.json", "tokenizer.json", "model*.safetensors*")
NETWORK_TIMEOUT_S = 10.0  # a first answer from the Hub; without a network the lookup fails at once


class HubError(ValueError):
    """A name that cannot be turned into a folder here; the message is the sentence to show."""


def is_hub_name(spec: str) -> bool:
    return HUB_NAME.fullmatch(spec) is not None and ".." not in spec


def split_name(spec: str) -> tuple[str, str]:
    """ "org/name@rev" -> ("org/name", "rev"); the revision is "main" when none is given."""
    m = HUB_NAME.fullmatch(spec)
    if m is None or ".." in spec:  # the revision names a file under refs/: never a way out of it
        raise HubError(f"{spec!r} is not a Hugging Face model name (org/name or name, optionally @revision)")
    return m["repo"], m["rev"] or "main"


def cache_dir() -> Path:
    """Where huggingface_hub keeps (and would put) downloads, by its own rules."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):  # the older name, still honoured by huggingface_hub
        return Path(os.environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(xdg).expanduser() / "huggingface" / "hub"


def repo_folder(repo: str) -> Path:
    return cache_dir() / ("models--" + repo.replace("/", "--"))


def cached_snapshot(repo: str, revision: str) -> Path | None:
    """The snapshot folder of `revision` (a commit, or a branch/tag recorded in refs/), if present."""
    root = repo_folder(repo)
    commit = revision if COMMIT.fullmatch(revision) else None
    ref = root / "refs" / revision
    if commit is None and ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
    if commit is None:
        return None
    snapshot = root / "snapshots" / commit
    return snapshot if snapshot.is_dir() else None


def missing_files(folder: Path) -> list[str]:
    """What a snapshot lacks of config, weights and tokenizer (a download may have stopped halfway)."""
    missing = [f for f in ("config.json", "tokenizer.json") if not (folder / f).is_file()]
    index = folder / "model.safetensors.index.json"
    if (folder / "model.safetensors").is_file() or (folder / "pytorch_model.bin").is_file():
        return missing
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
        except (ValueError, KeyError, TypeError, AttributeError):
            return [*missing, "model.safetensors.index.json (unreadable)"]
        return missing + sorted(s for s in shards if not (folder / s).is_file())
    return [*missing, "model.safetensors"]


def fetch_advice(repo: str, revision: str) -> str:
    """What to do on a connected machine, and where the result goes here."""
    rev = "" if revision == "main" else f" --revision {revision}"
    include = " ".join(f'--include "{p}"' if "*" in p else f"--include {p}" for p in PATTERNS)
    return (
        f"on a machine with internet run `pip install huggingface_hub && hf download {repo}{rev} {include}`, "
        f"then copy the folder {repo_folder(repo).name} from that machine's ~/.cache/huggingface/hub into "
        f"{cache_dir()} here (or set HF_HUB_CACHE to where it is)"
    )


def resolve(spec: str) -> Path:
    """The folder holding `spec`: from the local cache, else downloaded if this machine can."""
    repo, revision = split_name(spec)
    snapshot = cached_snapshot(repo, revision)
    missing = missing_files(snapshot) if snapshot is not None else []
    if snapshot is not None and not missing:
        return snapshot
    why = offline_reason()
    if why is None:
        return download(repo, revision)
    have = f" (its snapshot {snapshot} lacks {', '.join(missing)})" if snapshot else ""
    raise HubError(
        f"{spec!r} is not a bundled model, not a folder, and not in the Hugging Face cache {cache_dir()}"
        f"{have}, and it cannot be downloaded here ({why}): {fetch_advice(repo, revision)}"
    )


def offline_reason() -> str | None:
    """Why no download is tried, or None if one may be."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
        return "HF_HUB_OFFLINE is set"
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        return "the huggingface_hub package is not installed"
    return None


def download(repo: str, revision: str) -> Path:
    """Only the files we read, into the standard cache, with huggingface_hub's progress bars."""
    import huggingface_hub

    try:
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    except ImportError:  # huggingface_hub before 0.23 kept them in utils
        from huggingface_hub.utils import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    spec = repo if revision == "main" else f"{repo}@{revision}"
    try:
        # Asking for the file list first answers quickly (or fails at once) without a network, and
        # lets us refuse a repository we cannot read before fetching gigabytes of weights.
        info = huggingface_hub.HfApi().model_info(repo, revision=revision, timeout=NETWORK_TIMEOUT_S)
        files = wanted_files([s.rfilename for s in info.siblings or []], spec)
        folder = huggingface_hub.snapshot_download(
            repo, revision=revision, cache_dir=cache_dir(), allow_patterns=files
        )
    except GatedRepoError as e:
        raise HubError(
            f"{spec!r} is gated on the Hugging Face Hub: accept its licence on huggingface.co/{repo}, "
            f"then log in here with `hf auth login` ({_first_line(e)})"
        ) from e
    except RevisionNotFoundError as e:
        raise HubError(f"{spec!r}: the Hub has no revision {revision!r} of {repo}") from e
    except RepositoryNotFoundError as e:
        raise HubError(
            f"{spec!r} is not a bundled model, not a folder here, and not a model on the Hugging Face Hub "
            "(a private repository needs `hf auth login`)"
        ) from e
    except HubError:
        raise
    except Exception as e:  # noqa: BLE001 - httpx/OSError/timeouts: the network is the problem
        raise HubError(
            f"{spec!r} is not in the Hugging Face cache {cache_dir()} and downloading it failed "
            f"({type(e).__name__}: {_first_line(e)}): {fetch_advice(repo, revision)}"
        ) from e
    return Path(folder)


def wanted_files(files: list[str], spec: str) -> list[str]:
    """The repository's files we read: config, tokenizer and one set of weights (safetensors first)."""
    if "config.json" not in files:
        raise HubError(f"{spec!r} has no config.json on the Hub: it is not a transformers model")
    if "tokenizer.json" not in files:
        others = ", ".join(f for f in files if "vocab" in f or "merges" in f or "tokenizer" in f) or "none"
        repo = split_name(spec)[0]
        raise HubError(
            f"{spec!r} ships no tokenizer.json (its tokenizer files: {others}) and we read only that format: "
            f"on a machine with transformers, `AutoTokenizer.from_pretrained({repo!r}).backend_tokenizer"
            ".save('tokenizer.json')` writes one; pass --model a folder holding it, config.json and the weights"
        )
    keep = ["config.json", "tokenizer.json"]
    if "model.safetensors" in files:
        return [*keep, "model.safetensors"]
    if "model.safetensors.index.json" in files:
        return [*keep, "model.safetensors.index.json", "model-*.safetensors"]
    if "pytorch_model.bin" in files:
        return [*keep, "pytorch_model.bin"]
    raise HubError(
        f"{spec!r} has no model.safetensors (single or sharded) or single pytorch_model.bin on the Hub"
    )


def _first_line(e: BaseException) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:200]
