"""The chapter's cost arithmetic against hand calculations, and the timing fit on a fake clock."""

from __future__ import annotations

import pytest

from labs.census import attention_params, feed_forward_params, param_census
from labs.cost import (
    REFERENCE,
    chapter_table,
    crossover_n,
    curve_ns,
    curves,
    feed_forward_share,
    fit_exponent,
    flops,
    kv_cache,
    kv_cache_bytes,
    ladder,
    measure,
    score_counts,
    time_attention,
)
from tests.tiny import tiny_model

GPT2, L7, L70, L3 = (REFERENCE[k] for k in ("gpt2-small", "llama-2-7b", "llama-2-70b", "llama-3-8b"))


def test_census_llama2_7b_is_6_74_billion():
    total = param_census(L7)["total"]
    assert total == 6_738_415_616  # 2 * 32000 * 4096 + 32 * (4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096) + 4096
    assert abs(total - 6.74e9) / 6.74e9 < 0.01


def test_census_gpt2_small_is_124_million_with_tied_embeddings_counted_once():
    c = param_census(GPT2)
    assert c["unembedding"] == 0 and c["tied"]
    assert c["total"] == 124_439_808
    assert abs(c["total"] - 124e6) / 124e6 < 0.01


def test_census_llama2_7b_feed_forward_is_two_thirds_of_a_block():
    block = attention_params(L7) + feed_forward_params(L7) + 2 * L7.d_model
    assert block == 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096
    assert feed_forward_share(L7) == feed_forward_params(L7) / block == pytest.approx(2 / 3, abs=0.01)
    # GPT-2's 4x MLP holds two thirds too; the whole-model share is lower because of the embeddings.
    assert feed_forward_share(GPT2) == pytest.approx(2 / 3, abs=0.01)


def test_chapter_table_is_n_squared():
    assert [(r["n"], r["scores"]) for r in chapter_table()] == [
        (100, 10_000),
        (1_000, 1_000_000),
        (100_000, 10_000_000_000),
    ]
    assert chapter_table()[2]["fp32_bytes"] == 40_000_000_000  # 40 GB for one head of one layer


def test_score_counts_gpt2_small_at_its_context():
    c = score_counts(GPT2, 1024)
    assert c["per_head"] == 1_048_576
    assert c["per_layer"] == 12 * 1_048_576
    assert c["total"] == 144 * 1_048_576 == 150_994_944
    assert c["bytes"]["fp32"]["per_head"] == 4_194_304
    assert c["bytes"]["fp16"]["total"] == 2 * 150_994_944


def test_score_counts_llama2_7b_at_4096():
    c = score_counts(L7, 4096)
    assert c["per_head"] == 16_777_216
    assert c["total"] == 16_777_216 * 32 * 32 == 17_179_869_184


def test_flops_llama2_7b_by_hand():
    n = 4096
    f = flops(L7, n)["per_layer"]
    assert f["attention_projections"] == 8 * 4096**3  # q, k, v, o: four 4096x4096 matmuls of n rows
    assert f["attention_scores"] == f["attention_weighted_sum"] == 2 * 4096**2 * 32 * 128
    assert f["feed_forward"] == 2 * n * 3 * 4096 * 11008
    assert flops(L7, n)["total"]["feed_forward"] == 32 * f["feed_forward"]


def test_flops_per_token_are_twice_the_weights():
    # An independent check that the FLOP and census formulas agree: a matmul does one multiply-add
    # per weight per token (Llama-style blocks have no biases).
    f = flops(L70, 1)["per_layer"]
    assert f["attention_projections"] == 2 * attention_params(L70)
    assert f["feed_forward"] == 2 * feed_forward_params(L70)


def test_crossover_is_where_quadratic_attention_equals_feed_forward():
    assert crossover_n(L7) == 16_512  # 3 * 4096 * 11008 / (2 * 32 * 128)
    assert crossover_n(GPT2) == 3072  # 2 * 768 * 3072 / (2 * 12 * 64)
    for cfg in REFERENCE.values():
        x = crossover_n(cfg)
        if x == int(x):
            f = flops(cfg, int(x))["per_layer"]
            assert f["attention_quadratic"] == f["feed_forward"]
        below, above = flops(cfg, int(x) // 2)["per_layer"], flops(cfg, int(x) * 2)["per_layer"]
        assert below["attention_quadratic"] < below["feed_forward"]
        assert above["attention_quadratic"] > above["feed_forward"]


def test_kv_cache_by_hand():
    assert kv_cache_bytes(L7, 4096) == 2 * 32 * 32 * 128 * 4096 * 2 == 2 * 1024**3
    assert kv_cache_bytes(L70, 4096) == 2 * 80 * 8 * 128 * 4096 * 2
    assert kv_cache_bytes(GPT2, 1024, bytes_per=4) == 2 * 12 * 12 * 64 * 1024 * 4


def test_kv_cache_gqa_saving_is_heads_over_kv_heads():
    assert kv_cache(L70, 4096)["saving"] == 8
    assert kv_cache(L3, 8192)["saving"] == 4
    assert kv_cache(L7, 4096)["saving"] == 1
    k = kv_cache(L3, 8192)
    assert k["mha_bytes"] == 4 * k["bytes"] == 4 * 2 * 32 * 8 * 128 * 8192 * 2


def test_curves_run_from_16_to_131072_and_match_the_pointwise_numbers():
    ns = curve_ns()
    assert ns[0] == 16 and ns[-1] == 131_072 and ns[2] == 32
    c = curves(L3, ns)
    i = ns.index(8192)
    assert c["kv_bytes"][i] == kv_cache_bytes(L3, 8192) and c["kv_mha_bytes"][i] == 4 * c["kv_bytes"][i]
    assert c["feed_forward"][i] == flops(L3, 8192)["per_layer"]["feed_forward"]


def test_ladder_is_powers_of_two_up_to_the_cap():
    assert ladder(2048) == [16, 32, 64, 128, 256, 512, 1024, 2048]
    assert ladder(3000)[-1] == 2048
    assert ladder(8) == []


class FakeClock:
    """A clock that only moves when a fake call 'works' for a known time."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def series(self, cost):
        return lambda n: lambda: setattr(self, "t", self.t + cost(n))


def test_fit_recovers_the_exponent_on_a_fake_timer():
    clock = FakeClock()
    series = {
        "quadratic": clock.series(lambda n: 1e-9 * n * n + 1e-5),
        "linear": clock.series(lambda n: 1e-6 * n),
    }
    t = measure(series, ladder(4096), repeats=3, budget_s=1e9, clock=clock)
    assert t.ns == ladder(4096) and not t.skipped
    quad = fit_exponent(t.ns, t.seconds["quadratic"])
    assert quad["exponent"] == pytest.approx(2.0, abs=0.02)  # the constant overhead fades at large n
    assert quad["doubling_factor"] == pytest.approx(4.0, rel=0.02)
    assert quad["fit_from"] == 512
    assert quad["fit_ns"] == [512, 1024, 2048, 4096]
    assert quad["fitted"][-1] == pytest.approx(t.seconds["quadratic"][-1], rel=0.02)
    assert fit_exponent(t.ns, t.seconds["linear"])["exponent"] == pytest.approx(1.0, abs=1e-9)


def test_measure_stops_before_overrunning_the_budget():
    clock = FakeClock()
    series = {"slow": clock.series(lambda n: 1e-6 * n * n)}  # n=1024: 1 s per call, 4 calls
    t = measure(series, ladder(8192), repeats=3, budget_s=10.0, clock=clock)
    assert t.ns[-1] == 1024 and t.skipped == [2048, 4096, 8192]
    assert clock.t <= 10.0 + 1e-6 * 16 * 16  # + the untimed first warm-up


def test_fit_needs_two_points():
    with pytest.raises(ValueError):
        fit_exponent([16], [0.1])


def test_time_attention_runs_the_live_modules():
    net = tiny_model()
    r = time_attention(net, cap=64, repeats=1, budget_s=1e9)
    assert r["timing"].ns == [16, 32, 64]
    assert set(r["timing"].seconds) == {"attention", "block"}
    assert all(s > 0 for s in r["timing"].seconds["block"])
    assert r["fits"]["attention"]["exponent"] == r["fits"]["attention"]["exponent"]  # not NaN
