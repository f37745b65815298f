"""Settings: which models to serve and the limits in force, from arguments or `ATLAS_*` variables.

`python -m app` passes its flags through the environment (ATLAS_MODELS as a JSON list,
ATLAS_DEVICE, ...) so every uvicorn worker process builds the same settings.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# The bundled three: the Llama-style classroom model (the default), its GPT-2-style twin and its twin with
# no positional encoding, so the model selector, the position lab's learned positions, its probe of where
# position lives and every preset work on all of them out of the box.
DEFAULT_MODELS = ("classroom", "classroom-gpt2", "classroom-nope")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATLAS_", extra="forbid")

    # Bundled names, model folders or Hugging Face names (from the local cache); the first is the default.
    models: list[str] = Field(default_factory=lambda: list(DEFAULT_MODELS), min_length=1)
    device: Literal["cpu", "cuda"] = "cpu"
    dtype: Literal["float32", "bfloat16", "float16"] | None = None  # None: float32 on CPU, bfloat16 on CUDA
    max_prompt_chars: int = Field(default=4000, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)  # None: each model's context length
    max_cost_n: int = Field(default=4096, ge=1)  # cap for the cost experiment's sequence length
    # Memory one timing may hold (labs.cost.timing_bytes): 256 MiB times the bundled model up to n = 2048;
    # its n = 4096 would hold 1 GiB (+1.05 GB of RSS measured) on a server a whole class shares.
    max_timing_bytes: int = Field(default=256 * 2**20, ge=2**20)
    max_request_bytes: int = Field(default=64 * 1024, ge=1024)
    max_top_k: int = Field(default=50, ge=1)
    lens_k: int = Field(default=5, ge=1, le=20)  # logit-lens tokens per layer and position
    cache_bytes: int = Field(default=128 * 1024 * 1024, ge=0)  # response cache budget; 0 disables it
    # Attention tensors of recent traces (app/trace/handler.py), so /api/head and /api/heads/prompt reuse the forward
    # the keystroke already ran: float32, L x H x n^2 x 4 bytes (512 MiB holds a Llama-3.2-1B-shaped forward
    # at n = 512, or 256 of the bundled model's at n = 128). 0 turns it off: /api/head runs the model.
    pattern_cache_bytes: int = Field(default=512 * 2**20, ge=0)
    parallel_runs: int = Field(default=2, ge=1)  # forward passes at once; more only fight for 2 cores
    torch_threads: int | None = Field(default=None, ge=1)  # per process; None: PyTorch's default
    host: str | None = None  # the address served (set by `python -m app`); loopback turns on the Host check
    # Model jobs waiting, each on a request thread; more: 503. 64: a class of 50 (one request in flight
    # each) is never refused; `page_threads` more request threads stay free for pages and files.
    max_waiting: int = Field(default=64, ge=1)
    page_threads: int = Field(default=32, ge=1)
    # Connections (app/protocol.py): seconds to send a whole request, idle seconds kept open after an
    # answer, seconds an answer may wait for a client that stopped reading, and open connections at most.
    request_timeout_s: float = Field(default=10.0, gt=0)
    keep_alive_s: int = Field(default=5, ge=1)
    send_stall_s: float = Field(default=30.0, gt=0)
    max_connections: int = Field(default=1000, ge=1)


@lru_cache
def get_settings() -> Settings:
    return Settings()
