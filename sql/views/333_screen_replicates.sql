-- View screen_replicates: One row per (dataset, encoder, depth, bootstrap replicate): the full grid's
-- full-label logreg AUROC on the clean test split under one image-level draw (replicate 0: every image
-- once). The stored output of `crsbench screen` (analysis screen; empty until it runs), with the
-- column names of the rest of the warehouse. docs/METHODS.md §21. Generated from analysis screen's
-- registration and crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not edit by
-- hand.
create or replace view screen_replicates as
select cast("dataset_id" as VARCHAR) as "dataset_id",
       cast("encoder_id" as VARCHAR) as "encoder_id",
       cast("depth" as DOUBLE) as "depth",
       cast("replicate" as BIGINT) as "replicate",
       cast("auroc" as DOUBLE) as "auroc"
from analysis_screen_screen_replicates;

comment on view screen_replicates is 'One row per (dataset, encoder, depth, bootstrap replicate): the full grid''s full-label logreg AUROC on the clean test split under one image-level draw (replicate 0: every image once). The stored output of `crsbench screen` (analysis screen; empty until it runs), with the column names of the rest of the warehouse. docs/METHODS.md §21.';
comment on column screen_replicates."dataset_id" is 'Dataset id (the name given at ingest); for probe results, the dataset the probe was trained on. docs/METHODS.md §21.';
comment on column screen_replicates."encoder_id" is 'Encoder key: the encoder id, or id@regime for an adapted variant. docs/METHODS.md §21.';
comment on column screen_replicates."depth" is 'Relative depth of the features scored: 0.25, 0.5, 0.75 or 1.0; clean condition, train split. docs/METHODS.md §21.';
comment on column screen_replicates."replicate" is 'Bootstrap replicate: 0 is every test image once (the grid''s own AUROC), 1.. one stratified draw of test images by patient group each, the same draw for every encoder and depth of the dataset. docs/METHODS.md §21.';
comment on column screen_replicates."auroc" is 'The full grid''s answer under the replicate''s draw: macro AUROC of the logreg probe fitted on all labels, clean test split, mean over seeds, rescored from the stored predictions (no refit). docs/METHODS.md §21.';
