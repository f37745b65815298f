"""Head roles: what each attention head does.

- `registry`: one `Role` entry per role (name, badge label, threshold, probe, detector, explanation)
  and the per-head summary scores; everything else reads it.
- `detectors`: the pure scores, attention (..., n, n) -> one number per head.
- `probes`: the fixed inputs (prose, repeated random tokens, pronoun sentences) and `measure_roles`,
  the model card's figures.
- `atlas`: every head of a model scored and labelled, once per loaded model.
- `knockout`: knock heads out and measure what the model loses.
"""
