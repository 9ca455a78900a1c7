-- Table bootstrap_intervals: one row per (panel, resample, encoder, dataset, metric) of a
-- bootstrap (`crsbench analyze bootstrap`), dataset_id NULL for the aggregate over datasets and
-- encoder_id NULL for statistics of the whole panel (rank agreement). A rerun for the same panel
-- and resample replaces its rows. Metrics: crs, discrimination (= AUROC), calibration,
-- label_efficiency, robustness, auroc_rank (rank by AUROC among the members), crs_gap (the
-- leader's CRS minus this encoder's, paired per replicate: lo <= 0 means tied with the leader),
-- and, per panel, kendall_tau, spearman_rho, reversals (CRS ranking against AUROC ranking).
-- input_digest records the runs it read; bootstrap_freshness flags the rows stale when they changed.
-- A metric with the same value in every replicate for every member (the resampling does not reach
-- it), or a CRS or axis pinned at one value for one member, has lo = hi = NULL and a note saying
-- so, never [x, x].
-- docs/METHODS.md §10 (Uncertainty).
create table if not exists bootstrap_intervals(
    panel varchar, resample varchar, encoder_id varchar, dataset_id varchar, metric varchar,
    estimate double, lo double, hi double, replicates bigint);
-- Added later: the digest of the runs the bootstrap read (encoder_run_digest over its encoders).
alter table bootstrap_intervals add column if not exists input_digest varchar;
-- Added later: why an interval is n/a (lo and hi NULL) although the bootstrap ran.
alter table bootstrap_intervals add column if not exists note varchar;

comment on table bootstrap_intervals is 'One row per (panel, resample, encoder, dataset, metric) of a bootstrap: point estimate and 95 % percentile interval. dataset_id NULL = aggregate; encoder_id NULL = a panel statistic. docs/METHODS.md §10.';
comment on column bootstrap_intervals.panel is 'The frozen panel (or cohort) the bootstrap ranked. docs/METHODS.md §10.';
comment on column bootstrap_intervals.resample is 'What was resampled: images+seeds (test images stratified by class and grouped by patient, jointly with the label-fraction seeds), seeds (the paired-seed bootstrap) or images. docs/METHODS.md §10.';
comment on column bootstrap_intervals.encoder_id is 'The encoder; NULL for statistics of the whole panel (kendall_tau, spearman_rho, reversals). docs/METHODS.md §10.';
comment on column bootstrap_intervals.dataset_id is 'The dataset; NULL for the aggregate over datasets. docs/METHODS.md §10.';
comment on column bootstrap_intervals.metric is 'crs, discrimination, calibration, label_efficiency, robustness, auroc_rank, crs_gap, kendall_tau, spearman_rho or reversals. docs/METHODS.md §10.';
comment on column bootstrap_intervals.estimate is 'The point estimate (replicate 0: every seed and image once). docs/METHODS.md §10.';
comment on column bootstrap_intervals.lo is '2.5th percentile over the replicates; NULL when the interval cannot vary (see note). docs/METHODS.md §10.';
comment on column bootstrap_intervals.hi is '97.5th percentile over the replicates; NULL when the interval cannot vary (see note). docs/METHODS.md §10.';
comment on column bootstrap_intervals.replicates is 'Replicates with a value for this row. docs/METHODS.md §10.';
comment on column bootstrap_intervals.input_digest is 'Digest of the runs the bootstrap read: MD5 over its encoders'' encoder_run_digest (encoder=digest, sorted); NULL for a bootstrap stored before digests were kept (treated as stale). docs/METHODS.md §10.';
comment on column bootstrap_intervals.note is 'Why lo and hi are NULL although the bootstrap ran (never an interval [x, x]): the metric takes the same value in every replicate for every member (cannot vary: the resampling does not reach it, e.g. the AUROC under seeds; auroc_rank follows discrimination, crs_gap follows crs, the rank-agreement rows follow both), or a CRS or axis does so for this member alone (pinned at a min-max anchor). NULL for a real interval. docs/METHODS.md §10.';
