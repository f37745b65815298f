"""Hugging Face names: found in a fake local cache with no network, `name@revision`, one sentence when
missing offline, and the download path against a mocked huggingface_hub (never the internet)."""

from __future__ import annotations

import sys
import types

import pytest
import torch

import model.hub as hub
from model import ModelLoadError, load
from tests.hub_cache import add_to_cache, commit_id, save_hf_files, tiny_gpt2


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """An empty cache of our own, offline: no test may reach the Hub unless it mocks the client."""
    root = tmp_path / "hf-cache"
    root.mkdir()
    for name in ("HF_HOME", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


@pytest.fixture(scope="module")
def gpt2_files(tmp_path_factory):
    reference = tiny_gpt2()
    return reference, save_hf_files(reference, tmp_path_factory.mktemp("gpt2-files"))


def test_hub_load_from_the_cache_equals_transformers(cache, gpt2_files):
    reference, files = gpt2_files
    snapshot = add_to_cache(cache, "gpt2", files, commit_id(1))
    assert hub.resolve("gpt2") == snapshot
    lm = load("gpt2")
    assert lm.name == "gpt2" and lm.config.n_layer == 2
    ids = torch.randint(0, 300, (1, 17), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = reference(ids).logits[0]
    torch.testing.assert_close(lm.logits(ids[0].tolist()), expected, atol=1e-4, rtol=1e-4)


def test_hub_org_names_revisions_and_commits(cache, gpt2_files):
    _, files = gpt2_files
    main = add_to_cache(cache, "org/tiny", files, commit_id(1))
    old = add_to_cache(cache, "org/tiny", files, commit_id(2), ref="v1")
    bare = add_to_cache(cache, "org/tiny", files, commit_id(3), ref=None)
    assert hub.resolve("org/tiny") == main
    assert hub.resolve("org/tiny@v1") == old
    assert hub.resolve(f"org/tiny@{commit_id(3)}") == bare
    assert load("org/tiny@v1").name == "org/tiny@v1"  # the name the page shows and requests carry


def test_hub_cache_location_follows_huggingface_hub(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub.cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hub.cache_dir() == tmp_path / ".cache" / "huggingface" / "hub"


def test_hub_names_are_told_from_paths():
    for name in ("gpt2", "Qwen/Qwen2.5-0.5B", "meta-llama/Llama-3.2-1B@main", f"gpt2@{commit_id(1)}"):
        assert hub.is_hub_name(name), name
    for path in ("/tmp/model", "./model", "a/b/c", "../gpt2", "org/..", "", "gpt2@", "gpt2@../../x"):
        assert not hub.is_hub_name(path), path
    with pytest.raises(hub.HubError):
        hub.split_name("gpt2@../../../etc")


def test_hub_missing_offline_is_one_sentence_naming_the_command(cache):
    with pytest.raises(ModelLoadError) as e:
        load("Qwen/Qwen2.5-0.5B")
    sentence = str(e.value)
    assert "\n" not in sentence and "HF_HUB_OFFLINE is set" in sentence and str(cache) in sentence
    assert "hf download Qwen/Qwen2.5-0.5B" in sentence and "models--Qwen--Qwen2.5-0.5B" in sentence
    with pytest.raises(ModelLoadError, match=r"--revision v2"):
        load("Qwen/Qwen2.5-0.5B@v2")


def test_hub_an_incomplete_snapshot_says_what_it_lacks(cache, gpt2_files):
    _, files = gpt2_files
    snapshot = add_to_cache(cache, "gpt2", files, commit_id(1))
    (snapshot / "tokenizer.json").unlink()
    with pytest.raises(ModelLoadError, match=r"lacks tokenizer\.json.*hf download gpt2"):
        load("gpt2")


def test_hub_without_the_package_says_so(cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails, as when not installed
    with pytest.raises(ModelLoadError, match="huggingface_hub package is not installed.*hf download gpt2"):
        load("gpt2")


class FakeHub:
    """huggingface_hub's two calls we make, answered from local files: what was asked is recorded."""

    def __init__(self, cache, files, repo_files, fail=None):
        self.cache, self.files, self.repo_files, self.fail, self.asked = cache, files, repo_files, fail, []

    def model_info(self, repo, revision=None, timeout=None):
        assert timeout is not None  # without a network, a lookup must not hang
        if self.fail:
            raise self.fail
        return types.SimpleNamespace(siblings=[types.SimpleNamespace(rfilename=f) for f in self.repo_files])

    def snapshot_download(self, repo, revision=None, cache_dir=None, allow_patterns=None):
        self.asked.append(allow_patterns)
        assert str(cache_dir) == str(self.cache)
        return str(add_to_cache(self.cache, repo, self.files, commit_id(9), ref=revision))

    def install(self, monkeypatch):
        import huggingface_hub

        monkeypatch.delenv("HF_HUB_OFFLINE")
        api = types.SimpleNamespace(model_info=self.model_info)
        monkeypatch.setattr(huggingface_hub, "HfApi", lambda: api)
        monkeypatch.setattr(huggingface_hub, "snapshot_download", self.snapshot_download)
        return self


GPT2_REPO = ["config.json", "model.safetensors", "pytorch_model.bin", "flax_model.msgpack", "tokenizer.json",
             "vocab.json", "merges.txt", "onnx/decoder_model.onnx", "README.md"]  # fmt: skip


def test_hub_downloads_only_the_files_we_read_then_finds_them_cached(cache, gpt2_files, monkeypatch):
    reference, files = gpt2_files
    fake = FakeHub(cache, files, GPT2_REPO).install(monkeypatch)
    lm = load("gpt2")
    assert fake.asked == [["config.json", "tokenizer.json", "model.safetensors"]]
    ids = [1, 5, 9, 40]
    with torch.no_grad():
        torch.testing.assert_close(
            lm.logits(ids), reference(torch.tensor([ids])).logits[0], atol=1e-4, rtol=1e-4
        )
    load("gpt2")
    assert len(fake.asked) == 1  # the second time it is in the cache: no network


def test_hub_download_picks_sharded_or_bin_weights(cache, gpt2_files):
    sharded = ["config.json", "tokenizer.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
               "model-00002-of-00002.safetensors", "consolidated.safetensors"]  # fmt: skip
    assert hub.wanted_files(sharded, "x") == [
        "config.json", "tokenizer.json", "model.safetensors.index.json", "model-*.safetensors"
    ]  # fmt: skip
    assert (
        hub.wanted_files(["config.json", "tokenizer.json", "pytorch_model.bin"], "x")[-1]
        == "pytorch_model.bin"
    )
    with pytest.raises(hub.HubError, match="no model.safetensors"):
        hub.wanted_files(["config.json", "tokenizer.json", "tf_model.h5"], "x")


def test_hub_a_repo_without_tokenizer_json_is_refused_before_downloading(cache, gpt2_files, monkeypatch):
    _, files = gpt2_files
    fake = FakeHub(cache, files, ["config.json", "model.safetensors", "vocab.json", "merges.txt"])
    fake.install(monkeypatch)
    with pytest.raises(ModelLoadError) as e:
        load("old/gpt")
    sentence = str(e.value)
    assert (
        "ships no tokenizer.json" in sentence
        and "vocab.json, merges.txt" in sentence
        and "\n" not in sentence
    )
    assert fake.asked == []  # no weights fetched for a model we could not tokenize


def test_hub_no_network_is_one_sentence_naming_the_command(cache, gpt2_files, monkeypatch):
    _, files = gpt2_files
    FakeHub(cache, files, [], fail=OSError("[Errno -2] Name or service not known")).install(monkeypatch)
    with pytest.raises(ModelLoadError) as e:
        load("gpt2")
    sentence = str(e.value)
    assert "downloading it failed (OSError: [Errno -2] Name or service not known)" in sentence
    assert "hf download gpt2" in sentence and "\n" not in sentence


def test_hub_gated_and_unknown_repos_say_what_to_do(cache, gpt2_files, monkeypatch):
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    _, files = gpt2_files
    response = types.SimpleNamespace(headers={}, status_code=401, request=None, url="https://huggingface.co")
    for error, said in ((GatedRepoError("401 gated", response=response), "hf auth login"),
                        (RepositoryNotFoundError("404", response=response), "not a model on the Hugging Face Hub")):  # fmt: skip
        with monkeypatch.context() as m:
            FakeHub(cache, files, [], fail=error).install(m)
            with pytest.raises(ModelLoadError, match=said):
                load("meta-llama/Llama-3.2-1B")
