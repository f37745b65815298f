"""`python -m app --model gpt2`: served from a fake Hugging Face cache, with `--dtype`, and one sentence
naming the command to run when the name is not cached and nothing may be downloaded."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

import app.__main__ as cli
from tests.hub_cache import add_to_cache, commit_id, save_hf_files, tiny_gpt2
from tests.servers import ROOT, free_port, run_app
from tests.tiny import make_tokenizer

PROMPT = "The cat sat on the mat"


@pytest.fixture
def hub_env(tmp_path) -> dict[str, str]:
    """A cache holding gpt2 (a tiny random GPT-2), offline: the server must find it without a network."""
    cache = tmp_path / "hf-cache"
    add_to_cache(cache, "gpt2", save_hf_files(tiny_gpt2(), tmp_path / "files"), commit_id(1))
    return {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}


def trace(url: str) -> dict:
    r = httpx.post(f"{url}/api/trace", json={"prompt": PROMPT, "model": "gpt2"}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_cli_serves_a_hub_name_from_the_local_cache(tmp_path, hub_env):
    with run_app(["--model", "gpt2"], tmp_path / "server.log", env=hub_env) as server:
        info = httpx.get(f"{server.url}/api/models").json()
        assert info["default"] == "gpt2"
        assert [(m["name"], m["arch"], m["n_layer"], m["n_head"]) for m in info["models"]] == [
            ("gpt2", "gpt2", 2, 4)
        ]
        assert trace(server.url)["token_ids"] == make_tokenizer().encode(PROMPT)  # the cached tokenizer
    assert "loading gpt2 on cpu (float32)" in server.output()


def test_cli_dtype_bfloat16_loads_and_traces(tmp_path, hub_env):
    args = ["--model", "gpt2", "--model", "classroom", "--dtype", "bfloat16"]
    with run_app(args, tmp_path / "server.log", env=hub_env) as server:
        t = trace(server.url)
        assert t["n"] == len(make_tokenizer().encode(PROMPT)) and t["thumbnails"]["format"] == "u8-tril"
    assert "on cpu (bfloat16)" in server.output()


def test_cli_a_missing_hub_name_offline_is_one_sentence_and_exit_1(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLAS_", "HF_"))}
    env |= {"HF_HUB_CACHE": str(tmp_path / "empty-cache"), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "app", "--model", "Qwen/Qwen2.5-0.5B", "--port", str(free_port())]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "ready" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # one sentence, nothing else
    assert lines[0].startswith("Cannot start: 'Qwen/Qwen2.5-0.5B' is not a bundled model")
    assert "hf download Qwen/Qwen2.5-0.5B" in lines[0] and str(tmp_path / "empty-cache") in lines[0]


def test_cli_dtype_flag_and_what_is_not_a_model_name():
    assert cli.parse_args([]).dtype is None  # then float32 on cpu, bfloat16 on cuda
    assert cli.parse_args(["--dtype", "float16"]).dtype == "float16"
    with pytest.raises(SystemExit):
        cli.parse_args(["--dtype", "float64"])
    assert cli.model_problem("gpt2") is None and cli.model_problem("Qwen/Qwen2.5-0.5B@main") is None
    assert "nor a Hugging Face model name" in cli.model_problem("/no/such/folder")
