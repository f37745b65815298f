"""The shipped classroom models: recompute their head scores, atlas, demos and losses, compare with
their cards and the bars of issue #17.

Nothing here reads a score from a card without recomputing it from the weights first. The figures
that need the corpus (validation losses, bits per byte, the corpus's most frequent words) are
recomputed by `python -m training.card FOLDER`; the tests check what the card says about them.
"""

from __future__ import annotations

import json
import re

import pytest
import torch
from safetensors import safe_open

from labs.roles.evidence_prose import EVIDENCE_PROSE
from model import load
from model.loading import bundled_path
from training.card import bars_met, measure_fixed, read_figures, text_loss
from training.recipe import RECIPES, Recipe
from training.vocab import preset_words

TOL = 2e-3  # fp32 on another CPU may differ in the last digits, never by this much
MODELS = ("classroom", "classroom-gpt2", "classroom-nope")


@pytest.fixture(scope="module", params=MODELS)
def shipped(request):
    torch.set_num_threads(1)
    lm = load(request.param)
    return lm, read_figures(lm.card), measure_fixed(lm)


@pytest.mark.parametrize("name", MODELS)
def test_checkpoint_format_and_size(name):
    folder = bundled_path(name)
    for file in ("config.json", "model.safetensors", "tokenizer.json", "MODEL_CARD.md"):
        assert (folder / file).is_file(), file
    assert (folder / "model.safetensors").stat().st_size <= 20 * 1024 * 1024
    with safe_open(folder / "model.safetensors", "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}  # stored small ...
    lm = load(name)
    assert next(lm.net.parameters()).dtype == torch.float32  # ... computed in float32
    cfg = lm.config
    assert cfg.context_length >= 256
    if name == "classroom":
        assert cfg.arch == "llama" and cfg.n_kv_head < cfg.n_head  # RoPE, RMSNorm, SwiGLU, GQA
        assert cfg.positional == "rope"
    elif name == "classroom-nope":  # the same block with no positional encoding at all
        assert cfg.arch == "llama" and cfg.positional == "none" and not hasattr(lm.net, "pos_embed")
    else:
        assert cfg.arch == "gpt2" and cfg.positional == "learned" and cfg.n_kv_head == cfg.n_head


def test_the_twins_share_tokenizer_size_and_recipe():
    a, b, c = (load(n) for n in MODELS)
    for twin in MODELS[1:]:
        assert (bundled_path(MODELS[0]) / "tokenizer.json").read_bytes() == (
            bundled_path(twin) / "tokenizer.json"
        ).read_bytes()
    assert (a.config.n_layer, a.config.d_model, a.config.n_head) == (
        b.config.n_layer,
        b.config.d_model,
        b.config.n_head,
    )
    # A knob added after a card's run is missing from its recipe: that run had it off (the default).
    added = {"early_span_vocab": 0, "early_span_steps": 0, "span_double_every": 0, "early_span_keep": 0.0,
             "copy_free_heads": 0, "copy_free_first_layer": 0, "copy_free_spread": False,
             "no_position": False, "hint_dropout": 0.0, "copy_dropout": 0.0, "copy_dropout_layer": 1,
             "invented_name_share": 0.0, "short_late_from": 0, "short_late_every": 2,
             "copy_free_layer0_steps": 0, "qkv_bias": False,
             "copy_free_text": False, "span_reuse": 0.0}  # fmt: skip
    assert all(getattr(Recipe(), k) == v for k, v in added.items())
    ra, rb = ({**added, **read_figures(m.card)["training"]["recipe"]} for m in (a, b))
    differ = {k for k in ra if ra[k] != rb[k]}
    # The block, the hint (with its dropout) and each model's copy curriculum differ (the cards say why: the
    # twin's heads form with no help, the Llama-style model's copy-free heads keep layer 1 half induction and
    # its spans with recurring tokens teach layer 0 to read two and three back); the corpus, mixture, copy
    # rows' places and lengths, seed, size and tokenizer are the same.
    curriculum = {"lr", "short_seq", "short_steps", "short_every", "short_late_from", "short_late_every", "steps",
                  "early_span_vocab", "early_span_steps", "span_double_every", "early_span_keep",
                  "copy_free_heads", "copy_free_layer0_steps", "span_reuse"}  # fmt: skip
    assert differ <= {"name", "arch", "n_kv_head", "d_ff", "hint_steps", "hint_dropout"} | curriculum, differ
    assert rb["hint_steps"] == 0 and ra == vars(RECIPES["classroom"])
    assert rb == vars(RECIPES["classroom-gpt2"])
    # The no-position twin: the classroom recipe with RoPE taken out and, with it, the hint.
    rc = {**added, **read_figures(c.card)["training"]["recipe"]}
    assert {k for k in rc if rc[k] != ra.get(k, False)} == {"name", "no_position", "hint_steps"}
    assert rc == vars(RECIPES["classroom-nope"]) and c.config.n_layer == a.config.n_layer


def test_head_scores_match_the_card(shipped):
    _, card, now = shipped
    for key in ("previous_token_table", "induction_table"):
        for row_card, row_now in zip(card["roles"][key], now["roles"][key], strict=True):
            assert row_now == pytest.approx(row_card, abs=TOL), key
    for key in ("previous_token", "induction"):
        assert now["roles"][key]["score"] == pytest.approx(card["roles"][key]["score"], abs=TOL)
        assert (now["roles"][key]["layer"], now["roles"][key]["head"]) == (
            card["roles"][key]["layer"], card["roles"][key]["head"])  # fmt: skip
    for key in ("first_copy_loss", "second_copy_loss"):
        assert now["roles"][key] == pytest.approx(card["roles"][key], abs=1e-2)
    assert now["previous_token_unaided"]["score"] == pytest.approx(
        card["previous_token_unaided"]["score"], abs=TOL
    )


def test_atlas_and_demos_match_the_card(shipped):
    _, card, now = shipped
    for key in ("labels", "roles", "pure_self_heads"):
        assert now["atlas"][key] == card["atlas"][key], key
    assert now["atlas"]["max_layer_share"] == pytest.approx(card["atlas"]["max_layer_share"])
    for d_now, d_card in zip([now["demos"]["counting"], *now["demos"]["names"]],
                             [card["demos"]["counting"], *card["demos"]["names"]], strict=True):  # fmt: skip
        assert (d_now["top"], d_now["right"], d_now["expected_rank"]) == (
            d_card["top"],
            d_card["right"],
            d_card["expected_rank"],
        )
        assert d_now["expected_prob"] == pytest.approx(d_card["expected_prob"], abs=TOL)
    ioi_now, ioi_card = now["demos"]["indirect_object"], card["demos"]["indirect_object"]
    assert ioi_now["a_more_likely"] == ioi_card["a_more_likely"]
    assert ioi_now["mean_p_a"] == pytest.approx(ioi_card["mean_p_a"], abs=TOL)


def test_card_prose_names_the_measured_heads(shipped):
    lm, card, _ = shipped
    pt, ind = card["roles"]["previous_token"], card["roles"]["induction"]
    assert re.search(
        rf"previous-token head: \*\*L{pt['layer']}H{pt['head']}\*\*, score {pt['score']:.3f}", lm.card
    )
    assert re.search(
        rf"induction head: \*\*L{ind['layer']}H{ind['head']}\*\*, score {ind['score']:.3f}", lm.card
    )


def test_position_probe_matches_the_card(shipped):
    lm, card, now = shipped
    for curve in ("causal", "no_mask"):
        got, want = now["position_probe"][curve], card["position_probe"][curve]
        assert [p["name"] for p in got] == [p["name"] for p in want]
        assert [p["r2"] for p in got] == pytest.approx([p["r2"] for p in want], abs=1e-2), curve
    assert "## Position in the residual stream" in lm.card


def test_where_each_model_keeps_position(shipped):
    lm, _, now = shipped
    probe = now["position_probe"]
    on, off = ([p["r2"] for p in probe[k]] for k in ("causal", "no_mask"))
    assert on[0] < 0.1  # token embeddings alone: no position
    if lm.config.positional == "none":
        # The chapter's caveat, measured: no positional encoding, yet a linear read finds each token's
        # position once a block has attended under the causal mask, and nothing without the mask.
        assert max(on) > 0.5 and max(off) < 0.1
    elif lm.config.positional == "learned":  # the position vectors put it there before block 0
        assert probe["causal"][1]["name"] == "embeddings + position vectors" and on[1] > 0.9
    else:  # RoPE turns queries and keys inside attention; the stream between blocks keeps little
        assert max(on) < 0.5


def test_losses_and_completions_match_the_card(shipped):
    _, card, now = shipped
    for key in ("position_on", "position_off"):
        assert now["prose_loss"][key] == pytest.approx(card["prose_loss"][key], abs=1e-2)
    assert now["completions"] == card["completions"]


def test_tokenizer_keeps_the_words_a_class_types_whole(shipped):
    lm, card, now = shipped
    words = card["tokenizer"]["top_word_list"]  # the corpus's 1,000 most frequent, listed by the training run
    assert len(words) == 1000
    single = sum(len(lm.encode(" " + w)) == 1 for w in words) / len(words)
    assert single == pytest.approx(card["tokenizer"]["top_words_single"], abs=1e-4)
    assert single >= 0.95
    split = [w for w in preset_words() if len(lm.encode(w)) != 1]
    assert split == now["tokenizer"]["preset_words_split"] == []
    assert [lm.tokenizer.decode([i]) for i in lm.encode("The dog bites the man.")] == [
        "The", " dog", " bites", " the", " man", "."]  # fmt: skip


def test_card_claims_only_the_bars_the_weights_meet(shipped):
    lm, card, now = shipped
    # Re-judged on recomputed figures (the corpus-wide word share as the card lists it, checked above).
    now["tokenizer"]["top_words_single"] = card["tokenizer"]["top_words_single"]
    assert bars_met(now, lm.config.arch) == card["bars_met"]
    assert lm.card.count("**NOT met**") == sum(not ok for ok in card["bars_met"].values())


def test_training_fits_the_budget(shipped):
    _, card, _ = shipped
    tr = card["training"]
    assert tr["total_minutes"] <= 75  # training and evaluation, one command, 2 cores
    assert json.loads(json.dumps(tr["recipe"]))["steps"] == tr["history"][-1]["step"]


def test_position_matters(shipped):
    lm, card, now = shipped
    if lm.config.positional == "none":  # nothing to turn off: the switch changes no number at all
        assert now["prose_loss"]["position_off"] == now["prose_loss"]["position_on"]
        assert all(v["position_off"] == v["position_on"] for v in card["validation"].values())
        return
    # Turning positions off must damage predictions everywhere, and visibly on held-out text. The card's
    # one probe sentence (about 60 tokens) is too short to be held to it: the GPT-2-style twin reads its
    # order there from the causal mask alone (v3: 4.520 nats with positions, 4.511 without) while its
    # stories lose 1.27 nats (training_log.md, session 14). Six paragraphs of ordinary English are not.
    on, off = (sum(text_loss(lm, lm.encode(p), flag) for p in EVIDENCE_PROSE) for flag in (True, False))
    assert off > on + 0.05 * len(EVIDENCE_PROSE), (on, off)  # the twin: +0.13 nats a paragraph
    for part, v in card["validation"].items():
        assert v["position_off"] > v["position_on"], part
    assert max(v["position_off"] - v["position_on"] for v in card["validation"].values()) > 0.3


def test_completions_are_text(shipped):
    _, _, now = shipped
    assert "Once upon a time" in now["completions"]
    for prompt, completion in now["completions"].items():
        assert len(completion.strip()) > 0, prompt
