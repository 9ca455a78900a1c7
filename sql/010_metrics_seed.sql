-- One row per (encoder, dataset, eval dataset, regime, probe, depth, label fraction, condition):
-- every run metric aggregated over seeds, SPEC 5.1: mean (exact_mean, so bit-for-bit
-- reproducible), sample sd and n over the seeds with a finite value; n_seeds counts all seeds.
-- The sd feeds no score and is not guaranteed to the last bit across thread schedules.
create or replace view metrics_seed as
select
    encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, condition,
    count(distinct seed) as n_seeds,
    exact_mean(auroc) as auroc_mean,
    stddev_samp(case when isfinite(auroc) then auroc end) as auroc_sd,
    count(case when isfinite(auroc) then auroc end) as auroc_n,
    exact_mean(ece) as ece_mean,
    stddev_samp(case when isfinite(ece) then ece end) as ece_sd,
    count(case when isfinite(ece) then ece end) as ece_n,
    exact_mean(ece_adaptive) as ece_adaptive_mean,
    stddev_samp(case when isfinite(ece_adaptive) then ece_adaptive end) as ece_adaptive_sd,
    count(case when isfinite(ece_adaptive) then ece_adaptive end) as ece_adaptive_n,
    exact_mean(brier) as brier_mean,
    stddev_samp(case when isfinite(brier) then brier end) as brier_sd,
    count(case when isfinite(brier) then brier end) as brier_n,
    exact_mean(nll) as nll_mean,
    stddev_samp(case when isfinite(nll) then nll end) as nll_sd,
    count(case when isfinite(nll) then nll end) as nll_n,
    exact_mean(accuracy) as accuracy_mean,
    stddev_samp(case when isfinite(accuracy) then accuracy end) as accuracy_sd,
    count(case when isfinite(accuracy) then accuracy end) as accuracy_n,
    exact_mean(mean_confidence) as mean_confidence_mean,
    stddev_samp(case when isfinite(mean_confidence) then mean_confidence end) as mean_confidence_sd,
    count(case when isfinite(mean_confidence) then mean_confidence end) as mean_confidence_n,
    exact_mean(qwk) as qwk_mean,
    stddev_samp(case when isfinite(qwk) then qwk end) as qwk_sd,
    count(case when isfinite(qwk) then qwk end) as qwk_n,
    exact_mean(ordinal_mae) as ordinal_mae_mean,
    stddev_samp(case when isfinite(ordinal_mae) then ordinal_mae end) as ordinal_mae_sd,
    count(case when isfinite(ordinal_mae) then ordinal_mae end) as ordinal_mae_n,
    exact_mean(fit_seconds) as fit_seconds_mean,
    min(n_train) as n_train_min,
    max(n_train) as n_train_max,
    min(n_test) as n_test_min,
    max(n_test) as n_test_max,
    bool_and(pretrained) as pretrained
from runs
group by encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, condition;
