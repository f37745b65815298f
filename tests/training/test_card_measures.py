"""What the model cards measure beyond head scores: bits per byte, the in-context demos and the
atlas summary, checked on the tiny model against a direct computation."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from labs.demos import COUNTING, IOI_PAIRS, measure_demos, next_token
from training.card import atlas_figures, bars_met, bits_per_byte


def test_bits_per_byte_is_the_loss_over_the_bytes_of_the_predicted_tokens(tiny_lm):
    text = "The cat sat on the mat. " * 40
    ids, T = tiny_lm.encode(text), tiny_lm.config.context_length
    assert len(ids) > T  # more than one window
    nats, nbytes = 0.0, 0
    for i in range(0, len(ids) - 1, T):
        w = ids[i : i + T]
        logits = tiny_lm.logits(w)
        nats += F.cross_entropy(logits[:-1], torch.tensor(w[1:]), reduction="sum").item()
        nbytes += len(tiny_lm.tokenizer.decode(w[1:]).encode())
    assert bits_per_byte(tiny_lm, text) == round(nats / math.log(2) / nbytes, 4)


def test_next_token_ranks_the_expected_token(tiny_lm):
    d = next_token(tiny_lm, *COUNTING)
    probs = tiny_lm.logits(tiny_lm.encode(COUNTING[0]))[-1].softmax(-1)
    want = tiny_lm.encode(COUNTING[1])[0]
    assert d["expected_rank"] == int((probs > probs[want]).sum()) + 1
    assert d["right"] == (d["expected_rank"] == 1) and 0 <= d["expected_prob"] <= d["top_prob"] <= 1


def test_demos_and_atlas_summary_have_every_figure_the_bars_read(tiny_lm):
    demos = measure_demos(tiny_lm)
    ioi = demos["indirect_object"]
    assert len(ioi["sentences"]) == len(IOI_PAIRS) and 0 <= ioi["a_more_likely"] <= len(IOI_PAIRS)
    atlas = atlas_figures(tiny_lm)
    L, H = tiny_lm.config.n_layer, tiny_lm.config.n_head
    assert len(atlas["labels"]) == L and all(len(row) == H for row in atlas["labels"])
    assert 0 <= atlas["max_layer_share"] <= 1
    roles = {"previous_token_table": [[0.7] * H] * L, "induction_table": [[0.6] * H] * L,
             "first_copy_loss": 9.0, "second_copy_loss": 1.0}  # fmt: skip
    f = {"roles": roles, "atlas": atlas, "demos": demos, "previous_token_unaided": {"score": 0.7},
         "tokenizer": {"preset_words_split": []}}  # fmt: skip
    bars = bars_met(f, "llama")
    assert bars["previous_token"] and bars["induction"] and bars["copy_ratio"] and bars["words"]
    assert bars["roles"] == (len(atlas["roles"]) >= 4)
    assert set(bars_met(f, "gpt2")) == {
        "previous_token",
        "induction",
        "copy_ratio",
        "counting",
        "made_up_name",
        "words",
    }


def test_card_states_the_copy_curriculum_as_the_recipe_ran_it():
    from dataclasses import asdict

    from training.card import short_text
    from training.recipe import Recipe

    plain = short_text(asdict(Recipe()))
    assert "first 300 steps train on 32 short rows x 128 tokens" in plain and "alphabet" not in plain
    r = asdict(Recipe(early_span_vocab=64, early_span_steps=300, span_double_every=75, early_span_keep=0.5))
    text = short_text(r)
    assert "first 300 steps the random spans draw from the first 64 token ids" in text
    assert "twice as many ids every 75 steps" in text
    assert "50% of the short rows keep the first alphabet" in text
    assert "From step" not in plain
    late = short_text(asdict(Recipe(short_steps=4200, short_every=3, short_late_from=2800)))
    assert "one step in 3 trains" in late and "From step 2800 on, one step in 2 trains on them." in late
    assert "with repeats" not in plain
    reuse = short_text(asdict(Recipe(span_reuse=0.5)))
    assert (
        "From step 300 on, 50% of the random spans (short rows and copy episodes alike) drew their tokens"
        in reuse
    )


def test_the_card_names_each_training_only_knob_the_recipe_used_and_no_other():
    from training.card import scaffold_text

    assert scaffold_text({}) == ""
    text = scaffold_text({"copy_free_heads": 4, "copy_dropout": 0.5, "copy_dropout_layer": 1})
    assert "the last 4 heads of every layer" in text
    assert "copying heads of layer 1 were knocked out on 50% of the copy rows" in text
    assert "learned without any hint" not in text  # the hint dropout was off
    assert "In layer 0" not in text
    later = scaffold_text({"copy_free_heads": 4, "copy_free_layer0_steps": 600})
    assert "In layer 0 only for the first 600 steps; after that they learned from the copy rows too." in later
    assert "Only inside the copy episode" not in later
    beside = scaffold_text({"copy_free_heads": 4, "copy_free_text": True})
    assert "Only inside the copy episode itself, though: at the real text around it they learned" in beside


def test_the_card_says_when_queries_keys_and_values_have_biases():
    from training.card import architecture_text
    from training.recipe import Recipe
    from training.train import model_config

    plain = architecture_text(model_config(Recipe(), 8192), 5.0, "bfloat16")
    biased = architecture_text(model_config(Recipe(qkv_bias=True), 8192), 5.0, "bfloat16")
    assert "biases" not in plain and "Queries, keys and values have biases, as Qwen2's do" in biased
    assert biased.startswith("Llama-style: 8 query heads sharing 4 key/value heads")
