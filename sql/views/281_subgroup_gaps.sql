-- Table subgroup_gaps: one row per (run, metadata key, metric) written by `crsbench analyze
-- subgroups`: the worst group, the best-worst gap over the scored groups and its 95 % interval
-- over image-level bootstrap replicates (the draws of bootstrap_intervals). A rerun replaces
-- every row. `crsbench leaderboard --subgroup KEY` reads it. docs/METHODS.md §16.2.
create table if not exists subgroup_gaps(
    run_id varchar, encoder_id varchar, dataset_id varchar, eval_dataset_id varchar, probe varchar,
    depth double, label_fraction double, seed integer, condition varchar, "key" varchar, metric varchar,
    n_groups bigint, worst_group varchar, worst double, best double, gap double, gap_lo double, gap_hi double,
    replicates bigint);

comment on table subgroup_gaps is 'One row per (run, metadata key, metric): worst subgroup, best - worst gap and its image-level bootstrap 95 % interval (crsbench analyze subgroups). docs/METHODS.md §16.2.';
comment on column subgroup_gaps.run_id is 'The run whose stored predictions were scored (runs.run_id). docs/METHODS.md §16.2.';
comment on column subgroup_gaps.encoder_id is 'Encoder id (registry name). docs/METHODS.md §16.2.';
comment on column subgroup_gaps.dataset_id is 'Dataset the probe was trained on. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.eval_dataset_id is 'Dataset evaluated (its test split): the training dataset itself, or a shift target. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.probe is 'Probe of the run (logreg, the primary probe, by default). docs/METHODS.md §16.2.';
comment on column subgroup_gaps.depth is 'Relative encoder depth of the features. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.label_fraction is 'Fraction of the training split the probe was fitted on. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.seed is 'Seed of the label-fraction subset and of a seeded probe. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.condition is 'Evaluation condition (as runs.condition). docs/METHODS.md §16.2.';
comment on column subgroup_gaps."key" is 'Metadata key the groups come from (image_metadata.key). docs/METHODS.md §16.2.';
comment on column subgroup_gaps.metric is 'auroc, ece, brier or accuracy. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.n_groups is 'Scored (sufficient) subgroups of the key; count. A gap needs at least 2. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.worst_group is 'The worst scored subgroup: lowest AUROC or accuracy, highest ECE or Brier. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.worst is 'The metric of the worst subgroup (worst-group AUROC for metric auroc). docs/METHODS.md §16.2.';
comment on column subgroup_gaps.best is 'The metric of the best subgroup. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.gap is '|best - worst| over the scored subgroups; >= 0, lower is fairer. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.gap_lo is '2.5th percentile of the gap over the image-level bootstrap replicates. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.gap_hi is '97.5th percentile of the gap over the image-level bootstrap replicates. docs/METHODS.md §16.2.';
comment on column subgroup_gaps.replicates is 'Replicates with a gap (at least two subgroups scored in the replicate); count. docs/METHODS.md §16.2.';
