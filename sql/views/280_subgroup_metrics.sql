-- Table subgroup_metrics: one row per (run, metadata key, subgroup) written by `crsbench analyze
-- subgroups` from the stored predictions (no refit); a rerun replaces every row. Groups with too
-- few positives or negatives for every class are reported (status insufficient), never scored.
-- docs/METHODS.md §16.2.
create table if not exists subgroup_metrics(
    run_id varchar, encoder_id varchar, dataset_id varchar, eval_dataset_id varchar, probe varchar,
    depth double, label_fraction double, seed integer, condition varchar, "key" varchar, "value" varchar,
    n_images bigint, n_columns bigint, status varchar, auroc double, ece double, brier double, accuracy double);

comment on table subgroup_metrics is 'One row per (run, metadata key, subgroup): AUROC, ECE, Brier and accuracy of the run''s stored predictions on the images of the subgroup (crsbench analyze subgroups). docs/METHODS.md §16.2.';
comment on column subgroup_metrics.run_id is 'The run whose stored predictions were scored (runs.run_id). docs/METHODS.md §16.2.';
comment on column subgroup_metrics.encoder_id is 'Encoder id (registry name). docs/METHODS.md §16.2.';
comment on column subgroup_metrics.dataset_id is 'Dataset the probe was trained on. docs/METHODS.md §16.2.';
comment on column subgroup_metrics.eval_dataset_id is 'Dataset evaluated (its test split): the training dataset itself, or a shift target (condition shift). docs/METHODS.md §16.2.';
comment on column subgroup_metrics.probe is 'Probe of the run (logreg, the primary probe, by default). docs/METHODS.md §16.2.';
comment on column subgroup_metrics.depth is 'Relative encoder depth of the features (1.0 by default). docs/METHODS.md §16.2.';
comment on column subgroup_metrics.label_fraction is 'Fraction of the training split the probe was fitted on (1.0 by default). docs/METHODS.md §16.2.';
comment on column subgroup_metrics.seed is 'Seed of the label-fraction subset and of a seeded probe: 0..4. docs/METHODS.md §16.2.';
comment on column subgroup_metrics.condition is 'Evaluation condition: clean or shift by default (as runs.condition). docs/METHODS.md §16.2.';
comment on column subgroup_metrics."key" is 'Metadata key the groups come from (image_metadata.key: age, sex, site, view, projection, ...). docs/METHODS.md §16.2.';
comment on column subgroup_metrics."value" is 'The subgroup: the image_metadata value (age binned, e.g. 40-60). Images without a value are in no group. docs/METHODS.md §16.2.';
comment on column subgroup_metrics.n_images is 'Test images of the eval dataset in the subgroup; count. docs/METHODS.md §16.2.';
comment on column subgroup_metrics.n_columns is 'Classes (labels) with at least min_positives positives and min_negatives negatives in the subgroup, the columns its macro AUROC averages; count. docs/METHODS.md §16.2.';
comment on column subgroup_metrics.status is 'scored, or insufficient (no class reaches the minimum counts: metrics NULL, never scored). docs/METHODS.md §16.2.';
comment on column subgroup_metrics.auroc is 'Macro one-vs-rest AUROC over the n_columns classes (labels) of the subgroup; [0, 1], higher is better. docs/METHODS.md §16.2.';
comment on column subgroup_metrics.ece is 'ECE (15 equal-width bins, as runs.ece) on the subgroup''s images; [0, 1], lower is better. docs/METHODS.md §16.2.';
comment on column subgroup_metrics.brier is 'Brier score (as runs.brier) on the subgroup''s images; lower is better. docs/METHODS.md §16.2.';
comment on column subgroup_metrics.accuracy is 'Accuracy (as runs.accuracy) on the subgroup''s images; [0, 1], higher is better. docs/METHODS.md §16.2.';
