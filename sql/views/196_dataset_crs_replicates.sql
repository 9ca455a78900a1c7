-- View dataset_crs_replicates: One row per (panel, dataset, bootstrap replicate, member encoder): the
-- member's per-dataset CRS under one draw of `crsbench analyze bootstrap` (replicate 0: every seed and
-- test image once). The stored output of the panel's last bootstrap run with keep_replicates (empty
-- until one runs). docs/METHODS.md §10. Generated from analysis bootstrap's registration and
-- crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not edit by hand.
create or replace view dataset_crs_replicates as
select cast("panel" as VARCHAR) as "panel",
       cast("dataset_id" as VARCHAR) as "dataset_id",
       cast("replicate" as BIGINT) as "replicate",
       cast("encoder_id" as VARCHAR) as "encoder_id",
       cast("crs" as DOUBLE) as "crs"
from analysis_bootstrap_dataset_crs_replicates;

comment on view dataset_crs_replicates is 'One row per (panel, dataset, bootstrap replicate, member encoder): the member''s per-dataset CRS under one draw of `crsbench analyze bootstrap` (replicate 0: every seed and test image once). The stored output of the panel''s last bootstrap run with keep_replicates (empty until one runs). docs/METHODS.md §10.';
comment on column dataset_crs_replicates."panel" is 'Reference panel whose members were bootstrapped (''cohort'' = every frozen-regime encoder with aggregate axes, when no panel is frozen); anchors and Pareto reference are recomputed over its members in every replicate. docs/METHODS.md §10.';
comment on column dataset_crs_replicates."dataset_id" is 'Dataset of the per-dataset CRS (its own anchors, recomputed over the members in each replicate). docs/METHODS.md §10.';
comment on column dataset_crs_replicates."replicate" is 'Bootstrap replicate: 0 = the point estimate (every seed and test image once), 1..R = resampled. docs/METHODS.md §10.';
comment on column dataset_crs_replicates."encoder_id" is 'Encoder id (registry name). docs/METHODS.md §10.';
comment on column dataset_crs_replicates."crs" is 'Per-dataset CRS of the encoder in this replicate; replicate 0 equals crs_cell while the panel''s runs are those it was frozen on; [0, 1], higher is better; NULL where the cell is incomplete. docs/METHODS.md §10.';
