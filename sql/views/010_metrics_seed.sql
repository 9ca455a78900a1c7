-- One row per (encoder, dataset, eval dataset, regime, probe, depth, label fraction, condition):
-- every run metric aggregated over seeds; docs/METHODS.md §5 (Seed means).
-- Only runs of the declared grid (runs_grid.in_grid): an extra run (an off-grid seed, probe or
-- depth) never enters a seed mean.
-- mean = fn_exact_mean (bit-for-bit reproducible), sample sd and n over the seeds with a finite
-- value; n_seeds counts all seeds. The sd feeds no score and is not guaranteed to the last bit
-- across thread schedules.
-- The line `-- @metric_aggregates` stands for <metric>_mean, _sd and _n of every metric registered
-- in crsbench.probes.metrics, with their comments: crsbench.warehouse.metrics_seed generates them.
create or replace view metrics_seed as
select
    encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, condition,
    count(distinct seed) as n_seeds,
    -- @metric_aggregates
    fn_exact_mean(fit_seconds) as fit_seconds_mean,
    min(n_train) as n_train_min,
    max(n_train) as n_train_max,
    min(n_test) as n_test_min,
    max(n_test) as n_test_max,
    bool_and(pretrained) as pretrained
from runs_grid
where in_grid
group by encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, condition;

comment on view metrics_seed is 'One row per (encoder, dataset, eval dataset, regime, probe, depth, label fraction, condition): each run metric of the declared grid''s runs (runs_grid.in_grid) averaged over seeds (exact mean), with its sample sd and count. docs/METHODS.md §5.';
comment on column metrics_seed.encoder_id is 'Encoder id (registry name) whose features the probe was fitted on. docs/METHODS.md §2.';
comment on column metrics_seed.dataset_id is 'Dataset the probe was trained on (the source). docs/METHODS.md §1.';
comment on column metrics_seed.eval_dataset_id is 'Dataset evaluated: the source itself, or a shift target (condition shift). docs/METHODS.md §3.';
comment on column metrics_seed.regime is 'Encoder regime: frozen (the encoder''s weights as loaded, pretrained or random-init, never updated) or an adapted variant such as lora-s0 (LoRA-fine-tuned with seed 0). docs/METHODS.md §13.';
comment on column metrics_seed.probe is 'Probe estimator: logreg (primary), mlp or knn. docs/METHODS.md §3.';
comment on column metrics_seed.depth is 'Relative encoder depth the features were taken at: 0.25, 0.5, 0.75 or 1.0 (last block). docs/METHODS.md §2.';
comment on column metrics_seed.label_fraction is 'Fraction of the training split used to fit: 0.01, 0.05, 0.10, 0.25 or 1.0. docs/METHODS.md §1.';
comment on column metrics_seed.condition is 'Evaluation condition: clean, <perturbation>-s<severity 1..3>, calib (the clean calibration split) or shift (the target''s clean test split). docs/METHODS.md §2, §3.';
comment on column metrics_seed.n_seeds is 'Number of distinct seeds with a run in this group; count (5 in the protocol). docs/METHODS.md §5.';
comment on column metrics_seed.fit_seconds_mean is 'Mean over seeds of runs.fit_seconds: wall-clock probe fit time in seconds; lower is cheaper. docs/METHODS.md §4.';
comment on column metrics_seed.n_train_min is 'Smallest number of training images over the seeds; count. docs/METHODS.md §1.';
comment on column metrics_seed.n_train_max is 'Largest number of training images over the seeds; count. docs/METHODS.md §1.';
comment on column metrics_seed.n_test_min is 'Smallest number of evaluated images over the seeds; count. docs/METHODS.md §1.';
comment on column metrics_seed.n_test_max is 'Largest number of evaluated images over the seeds; count. docs/METHODS.md §1.';
comment on column metrics_seed.pretrained is 'True when every run used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
