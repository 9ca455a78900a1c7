"""crsbench.probes: probes over cached features, the run-record metrics and the probe grid (METHODS.md §3-§4).

Public entry points:

* `crsbench.probes.metrics`: `macro_auroc, ece, adaptive_ece, brier, nll, accuracy,
  mean_confidence, qwk, ordinal_mae, all_metrics` — each `(y, p, task)`;
* `crsbench.probes.registry`: `register_probe, get_probe, probe_names` (built-in kinds: `crsbench.probes.kinds`);
* `crsbench.probes.grid`: `plan_fits, run_grid` and `crsbench.probes.records.FitKey`.
"""
