"""Benchmarks for Attention Atlas: capture overhead, API latency, browser latency, load.

`python -m bench` runs all parts; `python -m bench capture|api|browser|load` runs one. Every part prints
ratios measured in the same run (they survive a busy machine better than absolute times) and writes
JSON to `bench/results/`.
"""
