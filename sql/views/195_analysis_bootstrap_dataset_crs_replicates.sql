-- Table analysis_bootstrap_dataset_crs_replicates, declared empty so view dataset_crs_replicates
-- exists before `crsbench analyze bootstrap` runs (the analysis replaces it with its output). A row of
-- the view: One row per (panel, dataset, bootstrap replicate, member encoder): the member's per-
-- dataset CRS under one draw of `crsbench analyze bootstrap` (replicate 0: every seed and test image
-- once). The stored output of the panel's last bootstrap run with keep_replicates (empty until one
-- runs). docs/METHODS.md §10. Generated from analysis bootstrap's registration and
-- crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not edit by hand.
create table if not exists analysis_bootstrap_dataset_crs_replicates(
    "panel" VARCHAR,
    "dataset_id" VARCHAR,
    "replicate" BIGINT,
    "encoder_id" VARCHAR,
    "crs" DOUBLE);

comment on table analysis_bootstrap_dataset_crs_replicates is 'Output ''dataset_crs_replicates'' of analysis bootstrap (crsbench analyze bootstrap): Bootstrap (test images + seeds by default): 95 % intervals, P(rank 1), ties with the leader. Parameters and code version: table analyses. docs/METHODS.md §10-§12, §16-§17.';
comment on column analysis_bootstrap_dataset_crs_replicates."panel" is 'Reference panel whose members were bootstrapped (''cohort'' = every frozen-regime encoder with aggregate axes, when no panel is frozen); anchors and Pareto reference are recomputed over its members in every replicate. docs/METHODS.md §10.';
comment on column analysis_bootstrap_dataset_crs_replicates."dataset_id" is 'Dataset of the per-dataset CRS (its own anchors, recomputed over the members in each replicate). docs/METHODS.md §10.';
comment on column analysis_bootstrap_dataset_crs_replicates."replicate" is 'Bootstrap replicate: 0 = the point estimate (every seed and test image once), 1..R = resampled. docs/METHODS.md §10.';
comment on column analysis_bootstrap_dataset_crs_replicates."encoder_id" is 'Encoder id (registry name). docs/METHODS.md §10.';
comment on column analysis_bootstrap_dataset_crs_replicates."crs" is 'Per-dataset CRS of the encoder in this replicate; replicate 0 equals crs_cell while the panel''s runs are those it was frozen on; [0, 1], higher is better; NULL where the cell is incomplete. docs/METHODS.md §10.';
