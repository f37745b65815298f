"""RoPE stretched: loss by position past the training length, on a small model."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from labs.stories import HELD_OUT_EVERY, held_out_stories, story_documents
from labs.stretch import held_out_ids, stretch, widened
from model import LanguageModel
from tests.tiny import tiny_model


@pytest.fixture
def lm(tokenizer) -> LanguageModel:
    return LanguageModel(tiny_model(context_length=16), tokenizer, name="tiny")


def test_held_out_stories_are_the_validation_documents():
    docs = story_documents(0, 3 * HELD_OUT_EVERY)
    held = held_out_stories(3)
    assert held == [docs[HELD_OUT_EVERY - 1], docs[2 * HELD_OUT_EVERY - 1], docs[3 * HELD_OUT_EVERY - 1]]
    assert not set(held) & {d for i, d in enumerate(docs) if i % HELD_OUT_EVERY != HELD_OUT_EVERY - 1}


def test_stretch_curves_have_the_right_lengths(lm):
    r = stretch(lm, factor=4, scales=(1, 2, 4), windows=2)
    C, T = 16, 64
    assert (r.context_length, r.length, r.windows, r.tokens) == (C, T, 2, 2 * T)
    assert [c.scale for c in r.curves] == [1.0, 2.0, 4.0]
    assert r.bin_width == C // 8 and r.bin_starts == list(range(0, T - 1, C // 8))
    for c in r.curves:
        assert c.loss.shape == (T - 1,) and c.bins.shape == (len(r.bin_starts),)
        assert torch.isfinite(c.loss).all()
        torch.testing.assert_close(c.inside, float(c.loss[:C].mean()))
        torch.testing.assert_close(c.beyond, float(c.loss[C:].mean()))


def test_stretch_no_scaling_inside_the_context_equals_a_plain_forward(lm):
    ids = held_out_ids(lm, 2 * 64)
    r = stretch(lm, factor=4, scales=(1,), windows=2, ids=ids)
    x = torch.tensor(ids).view(2, 64)[:, :16]  # the first C tokens of each window
    with torch.inference_mode():
        logits = lm.net(x)  # a plain forward: explicit attention, no Run, within the context
    plain = F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none"
    )
    torch.testing.assert_close(r.curves[0].loss[:15], plain.view(2, 15).mean(0), atol=1e-5, rtol=1e-5)


def test_stretch_scale_one_equals_no_scaling_and_does_not_leak(lm):
    ids = held_out_ids(lm, 64)
    a = stretch(lm, factor=4, scales=(1, 3), windows=1, ids=ids)
    b = stretch(lm, factor=4, scales=(1,), windows=1, ids=ids)
    torch.testing.assert_close(a.curves[0].loss, b.curves[0].loss)
    assert not torch.allclose(a.curves[1].loss, a.curves[0].loss)  # scale 3 does change the run
    assert lm.config.context_length == 16 and lm.config.rope_scale == 1.0  # nothing leaked into the model
    with pytest.raises(ValueError, match="exceed the context length"):
        lm.net(torch.zeros(1, 17, dtype=torch.long))  # the model itself still stops at its context


def test_stretch_refuses_learned_positions(tokenizer):
    gpt2 = LanguageModel(tiny_model("gpt2", context_length=16), tokenizer, name="g")
    with pytest.raises(ValueError, match="learned positions"):
        widened(gpt2.net, 64)
