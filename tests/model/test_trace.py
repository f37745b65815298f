"""The trace of one prompt: shapes, and numbers that agree with each other."""

from __future__ import annotations

import pytest
import torch

from model.tokenizer import bytes_to_display, make_visible


def test_trace_shapes_and_consistency(tiny_lm):
    t = tiny_lm.trace("The cat sat on the mat", lens_k=3, keep_resid=True)
    L, H, n = tiny_lm.config.n_layer, tiny_lm.config.n_head, t.n_tokens
    assert t.attention.shape == (L, H, n, n)
    torch.testing.assert_close(t.attention.sum(-1), torch.ones(L, H, n))  # rows are distributions
    assert torch.all(t.attention.triu(1) == 0)  # causal: nothing from the future
    assert t.resid_norms.shape == (2 * L + 1, n) and len(t.stage_names) == 2 * L + 1
    assert t.attn_write_norms.shape == t.mlp_write_norms.shape == (L, n)
    assert t.logits.shape == (n, tiny_lm.config.vocab_size)
    assert t.lens_ids.shape == t.lens_probs.shape == (L, n, 3)
    # The last layer's lens is the model's own prediction.
    torch.testing.assert_close(t.lens_ids[-1], t.logits.topk(3).indices)
    torch.testing.assert_close(t.resid_norms[-1], t.resid[-1].norm(dim=-1))
    assert "".join(t.tokens).replace("·", " ") == "The cat sat on the mat"


def test_trace_last_logits_only_is_the_last_row(tiny_lm):
    full = tiny_lm.trace("The cat sat on the mat", lens_k=0)
    last = tiny_lm.trace("The cat sat on the mat", lens_k=0, last_logits_only=True)
    assert last.logits.shape == (1, tiny_lm.config.vocab_size)
    torch.testing.assert_close(last.logits, full.logits[-1:], atol=1e-5, rtol=0)
    torch.testing.assert_close(last.attention, full.attention)
    with pytest.raises(ValueError, match="lens"):
        tiny_lm.trace("The cat", lens_k=3, last_logits_only=True)


def test_trace_logit_lens_reads_intermediate_layers(tiny_lm):
    t = tiny_lm.trace("The cat sat on the mat", lens_k=1, keep_resid=True)
    with torch.inference_mode():
        direct = tiny_lm.net.unembed(tiny_lm.net.ln_final(t.resid[1][None], None))[0].argmax(-1)
    torch.testing.assert_close(t.lens_ids[0, :, 0], direct)


def test_tokenizer_display_shows_what_the_token_is(tokenizer):
    ids = tokenizer.encode("The cat\n\tsat")
    shown = tokenizer.displays(ids)
    assert "".join(shown) == "The·cat⏎⇥sat" and "Ġ" not in "".join(shown)
    assert "⏎" in "".join(shown) and "⇥" in "".join(shown)
    assert make_visible("a\x00b") == "a␀b"
    assert bytes_to_display("é".encode()[:1]) == "<C3>"  # half a UTF-8 character shows as its byte
    emoji = tokenizer.displays(tokenizer.encode("🙂"))
    assert all(s.startswith("<") for s in emoji)  # unseen bytes stay readable, never mojibake
