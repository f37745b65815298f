"""The real-shapes benchmark still runs end to end (ratios, load in a fresh process, a real server's
/api/trace), on a tiny shape so CI can afford it; and it says why when it skips a measurement."""

import pytest

from bench import fixture, shapes


@pytest.fixture
def standin_outside_the_tree(tmp_path_factory, monkeypatch):
    """`make bench` keeps its stand-in model in bench/results (ignored by git); a test builds its own in
    the temporary folder instead, so the checkout stays as it was."""
    monkeypatch.setattr(fixture, "STANDIN", tmp_path_factory.getbasetemp() / "bench-standin")


def test_shapes_part_measures_every_column_on_a_tiny_shape(standin_outside_the_tree):
    result = shapes.run(tiny=True)
    (row,) = result["rows"]
    assert [r["n"] for r in row["ratios"]] == list(shapes.TINY_NS)
    for r in row["ratios"]:
        assert r["sdpa_ms"] > 0 and r["ratio"]["capture"] > 0 and r["ratio"]["trace"] > 0
    assert {c["dtype"]: c["got"] for c in row["load"]} == {
        "float32": "torch.float32",
        "bfloat16": "torch.bfloat16",
    }
    assert all(c["peak_rss_mib"] >= c["import_rss_mib"] > 0 for c in row["load"])
    for a in row["api"]:
        assert a["p99_ms"] >= a["p50_ms"] > 0 and a["body_bytes"] > 0 and a["wire_bytes"] > 0
    lines = shapes.table(result)
    assert sum(line.startswith("| tiny GQA") for line in lines) == 2  # the ratios table and the load table
    assert "skipped: not in --tiny" in "\n".join(lines)  # a skipped measurement says so


def test_shapes_skip_a_forward_over_budget_with_the_reason():
    net = shapes.random_shape("tiny", shapes.TINY["tiny GQA"])
    row = shapes.ratios(net, 16, shapes.Budget(ratios=0.0, api=0, browser=0, reps=1))
    assert row["skip"].startswith("one plain forward takes") and "budget" in row["skip"]
