-- One row per (encoder, dataset, eval dataset, regime, probe, depth, label fraction, condition):
-- every run metric aggregated over seeds; docs/METHODS.md §5 (Seed means).
-- Only runs of the declared grid (runs_grid.in_grid): an extra run (an off-grid seed, probe or
-- depth) never enters a seed mean.
-- mean = fn_exact_mean (bit-for-bit reproducible), sample sd and n over the seeds with a finite
-- value; n_seeds counts all seeds. The sd feeds no score and is not guaranteed to the last bit
-- across thread schedules.
create or replace view metrics_seed as
select
    encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, condition,
    count(distinct seed) as n_seeds,
    fn_exact_mean(auroc) as auroc_mean,
    stddev_samp(case when isfinite(auroc) then auroc end) as auroc_sd,
    count(case when isfinite(auroc) then auroc end) as auroc_n,
    fn_exact_mean(ece) as ece_mean,
    stddev_samp(case when isfinite(ece) then ece end) as ece_sd,
    count(case when isfinite(ece) then ece end) as ece_n,
    fn_exact_mean(ece_adaptive) as ece_adaptive_mean,
    stddev_samp(case when isfinite(ece_adaptive) then ece_adaptive end) as ece_adaptive_sd,
    count(case when isfinite(ece_adaptive) then ece_adaptive end) as ece_adaptive_n,
    fn_exact_mean(brier) as brier_mean,
    stddev_samp(case when isfinite(brier) then brier end) as brier_sd,
    count(case when isfinite(brier) then brier end) as brier_n,
    fn_exact_mean(nll) as nll_mean,
    stddev_samp(case when isfinite(nll) then nll end) as nll_sd,
    count(case when isfinite(nll) then nll end) as nll_n,
    fn_exact_mean(accuracy) as accuracy_mean,
    stddev_samp(case when isfinite(accuracy) then accuracy end) as accuracy_sd,
    count(case when isfinite(accuracy) then accuracy end) as accuracy_n,
    fn_exact_mean(mean_confidence) as mean_confidence_mean,
    stddev_samp(case when isfinite(mean_confidence) then mean_confidence end) as mean_confidence_sd,
    count(case when isfinite(mean_confidence) then mean_confidence end) as mean_confidence_n,
    fn_exact_mean(qwk) as qwk_mean,
    stddev_samp(case when isfinite(qwk) then qwk end) as qwk_sd,
    count(case when isfinite(qwk) then qwk end) as qwk_n,
    fn_exact_mean(ordinal_mae) as ordinal_mae_mean,
    stddev_samp(case when isfinite(ordinal_mae) then ordinal_mae end) as ordinal_mae_sd,
    count(case when isfinite(ordinal_mae) then ordinal_mae end) as ordinal_mae_n,
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
comment on column metrics_seed.auroc_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.auroc: macro one-vs-rest AUROC; [0, 1], higher is better. docs/METHODS.md §5.';
comment on column metrics_seed.auroc_sd is 'Sample standard deviation over seeds of the finite runs.auroc values (NULL with one seed); same unit as auroc_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.auroc_n is 'Number of seeds with a finite runs.auroc value behind auroc_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.ece_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.ece: expected calibration error, 15 equal-width bins; [0, 1], lower is better. docs/METHODS.md §5.';
comment on column metrics_seed.ece_sd is 'Sample standard deviation over seeds of the finite runs.ece values (NULL with one seed); same unit as ece_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.ece_n is 'Number of seeds with a finite runs.ece value behind ece_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.ece_adaptive_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.ece_adaptive: adaptive ECE, 15 equal-mass bins; [0, 1], lower is better. docs/METHODS.md §5.';
comment on column metrics_seed.ece_adaptive_sd is 'Sample standard deviation over seeds of the finite runs.ece_adaptive values (NULL with one seed); same unit as ece_adaptive_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.ece_adaptive_n is 'Number of seeds with a finite runs.ece_adaptive value behind ece_adaptive_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.brier_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.brier: Brier score; [0, 2] (multiclass) or [0, 1] (multilabel), lower is better. docs/METHODS.md §5.';
comment on column metrics_seed.brier_sd is 'Sample standard deviation over seeds of the finite runs.brier values (NULL with one seed); same unit as brier_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.brier_n is 'Number of seeds with a finite runs.brier value behind brier_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.nll_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.nll: negative log-likelihood in nats; >= 0, lower is better. docs/METHODS.md §5.';
comment on column metrics_seed.nll_sd is 'Sample standard deviation over seeds of the finite runs.nll values (NULL with one seed); same unit as nll_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.nll_n is 'Number of seeds with a finite runs.nll value behind nll_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.accuracy_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.accuracy: accuracy (argmax, or per-label at 0.5); [0, 1], higher is better. docs/METHODS.md §5.';
comment on column metrics_seed.accuracy_sd is 'Sample standard deviation over seeds of the finite runs.accuracy values (NULL with one seed); same unit as accuracy_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.accuracy_n is 'Number of seeds with a finite runs.accuracy value behind accuracy_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.mean_confidence_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.mean_confidence: mean confidence of the predicted class/label; [0, 1], neither direction is better (compare with accuracy). docs/METHODS.md §5.';
comment on column metrics_seed.mean_confidence_sd is 'Sample standard deviation over seeds of the finite runs.mean_confidence values (NULL with one seed); same unit as mean_confidence_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.mean_confidence_n is 'Number of seeds with a finite runs.mean_confidence value behind mean_confidence_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.qwk_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.qwk: quadratic weighted kappa, ordinal tasks only (NULL otherwise); [-1, 1], higher is better. docs/METHODS.md §5.';
comment on column metrics_seed.qwk_sd is 'Sample standard deviation over seeds of the finite runs.qwk values (NULL with one seed); same unit as qwk_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.qwk_n is 'Number of seeds with a finite runs.qwk value behind qwk_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.ordinal_mae_mean is 'Mean over seeds (fn_exact_mean, finite values) of runs.ordinal_mae: mean absolute grade error, ordinal tasks only (NULL otherwise); grades >= 0, lower is better. docs/METHODS.md §5.';
comment on column metrics_seed.ordinal_mae_sd is 'Sample standard deviation over seeds of the finite runs.ordinal_mae values (NULL with one seed); same unit as ordinal_mae_mean; not bit-for-bit reproducible, feeds no score. docs/METHODS.md §5.';
comment on column metrics_seed.ordinal_mae_n is 'Number of seeds with a finite runs.ordinal_mae value behind ordinal_mae_mean; count. docs/METHODS.md §5.';
comment on column metrics_seed.fit_seconds_mean is 'Mean over seeds of runs.fit_seconds: wall-clock probe fit time in seconds; lower is cheaper. docs/METHODS.md §4.';
comment on column metrics_seed.n_train_min is 'Smallest number of training images over the seeds; count. docs/METHODS.md §1.';
comment on column metrics_seed.n_train_max is 'Largest number of training images over the seeds; count. docs/METHODS.md §1.';
comment on column metrics_seed.n_test_min is 'Smallest number of evaluated images over the seeds; count. docs/METHODS.md §1.';
comment on column metrics_seed.n_test_max is 'Largest number of evaluated images over the seeds; count. docs/METHODS.md §1.';
comment on column metrics_seed.pretrained is 'True when every run used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
