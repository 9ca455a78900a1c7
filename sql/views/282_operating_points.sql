-- Table operating_points: one row per (run, threshold rule, class or label) written by `crsbench
-- analyze operating_points`: the threshold chosen on the fit's calibration split (stored calib
-- predictions), applied to the run's images (test split, a perturbed condition or a shift target),
-- the binary rates reached and the threshold transfer gap. A rerun replaces every row.
-- docs/METHODS.md §16.3.
create table if not exists operating_points(
    run_id varchar, encoder_id varchar, dataset_id varchar, eval_dataset_id varchar, probe varchar,
    depth double, label_fraction double, seed integer, condition varchar, fit_id varchar, "rule" varchar,
    label_idx bigint, label varchar, threshold double, sensitivity double, specificity double,
    balanced_accuracy double, ppv double, npv double, optimal_threshold double,
    optimal_balanced_accuracy double, transfer_gap double);

comment on table operating_points is 'One row per (run, threshold rule, class or label): threshold chosen on the calibration split, applied to the test split, perturbed conditions and shift targets, with sensitivity, specificity, balanced accuracy, PPV, NPV and the threshold transfer gap (crsbench analyze operating_points). docs/METHODS.md §16.3.';
comment on column operating_points.run_id is 'The run whose stored predictions were thresholded (runs.run_id). docs/METHODS.md §16.3.';
comment on column operating_points.encoder_id is 'Encoder id (registry name). docs/METHODS.md §16.3.';
comment on column operating_points.dataset_id is 'Dataset the probe was trained on; its calib split chose the threshold. docs/METHODS.md §16.3.';
comment on column operating_points.eval_dataset_id is 'Dataset evaluated: the training dataset (test split) or a shift target (condition shift). docs/METHODS.md §16.3.';
comment on column operating_points.probe is 'Probe of the run (logreg, the primary probe, by default). docs/METHODS.md §16.3.';
comment on column operating_points.depth is 'Relative encoder depth of the features (1.0 by default). docs/METHODS.md §16.3.';
comment on column operating_points.label_fraction is 'Fraction of the training split the probe was fitted on (1.0 by default). docs/METHODS.md §16.3.';
comment on column operating_points.seed is 'Seed of the label-fraction subset and of a seeded probe. docs/METHODS.md §16.3.';
comment on column operating_points.condition is 'Evaluation condition: clean, a perturbed condition, or shift (as runs.condition). docs/METHODS.md §16.3.';
comment on column operating_points.fit_id is 'The probe fit whose calib predictions chose the threshold (runs.fit_id). docs/METHODS.md §16.3.';
comment on column operating_points."rule" is 'youden (Youden J) or sens90 (most specific threshold with calib sensitivity >= the target, 0.90) for binary and multilabel tasks; argmax or youden_ovr (per-class one-vs-rest Youden J) for multiclass and ordinal; fixed (the user''s threshold, --threshold) for any task. docs/METHODS.md §16.3.';
comment on column operating_points.label_idx is 'Index of the class (one-vs-rest) or label into datasets.label_names; class 1 for a 2-class task. docs/METHODS.md §16.3.';
comment on column operating_points.label is 'Name of the class or label. docs/METHODS.md §16.3.';
comment on column operating_points.threshold is 'Probability threshold chosen on calib: an image is called positive when p >= threshold; NULL for argmax (no threshold) or where calib holds one outcome only. docs/METHODS.md §16.3.';
comment on column operating_points.sensitivity is 'TP / (TP + FN) at the threshold on the evaluated images; [0, 1], higher is better. docs/METHODS.md §16.3.';
comment on column operating_points.specificity is 'TN / (TN + FP) at the threshold; [0, 1], higher is better. docs/METHODS.md §16.3.';
comment on column operating_points.balanced_accuracy is '(sensitivity + specificity) / 2 at the calibration-chosen threshold; [0, 1], higher is better. docs/METHODS.md §16.3.';
comment on column operating_points.ppv is 'Positive predictive value TP / (TP + FP); NULL when nothing is called positive. docs/METHODS.md §16.3.';
comment on column operating_points.npv is 'Negative predictive value TN / (TN + FN); NULL when nothing is called negative. docs/METHODS.md §16.3.';
comment on column operating_points.optimal_threshold is 'Test-optimal threshold: Youden J on the evaluated images themselves (an oracle, for the transfer gap only). docs/METHODS.md §16.3.';
comment on column operating_points.optimal_balanced_accuracy is 'Balanced accuracy at the test-optimal threshold: (1 + max J) / 2. docs/METHODS.md §16.3.';
comment on column operating_points.transfer_gap is 'Threshold transfer gap: optimal_balanced_accuracy - balanced_accuracy; lower is better (the calib threshold transfers). >= 0 for the threshold rules; argmax calls are no threshold on the class probability, so its gap can be negative. docs/METHODS.md §16.3.';
