-- Table analysis_screen_screen_scores, declared empty so view screen_scores exists before `crsbench
-- analyze screen` runs (the analysis replaces it with its output). A row of the view: One row per
-- (dataset, encoder, depth, transferability estimator): the estimator's score on the train split's
-- clean features and labels, and the encoder's rank by it. The stored output of `crsbench screen`
-- (analysis screen; empty until it runs), with the column names of the rest of the warehouse.
-- docs/METHODS.md §21. Generated from analysis screen's registration and crsbench/analyses/views.py by
-- `python scripts/analysis_sql.py`; do not edit by hand.
create table if not exists analysis_screen_screen_scores(
    "dataset_id" VARCHAR,
    "encoder_id" VARCHAR,
    "depth" DOUBLE,
    "estimator" VARCHAR,
    "score" DOUBLE,
    "rank" BIGINT,
    "ranked_by" BOOLEAN,
    "keep" BIGINT,
    "n_train" BIGINT,
    "pretrained" BOOLEAN);

comment on table analysis_screen_screen_scores is 'Output ''screen_scores'' of analysis screen (crsbench analyze screen): Pre-screen: transferability estimators per encoder, dataset and depth, from cached features alone. Parameters and code version: table analyses. docs/METHODS.md §10-§12, §16-§17.';
comment on column analysis_screen_screen_scores."dataset_id" is 'Dataset id (the name given at ingest); for probe results, the dataset the probe was trained on. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."encoder_id" is 'Encoder key: the encoder id, or id@regime for an adapted variant. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."depth" is 'Relative depth of the features scored: 0.25, 0.5, 0.75 or 1.0; clean condition, train split. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."estimator" is 'Transferability estimator (probes.screening registry): logme, hscore, gbc, transrate, nleep, knn_loo or a plugin. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."score" is 'The estimator''s score on the train split''s standardised clean features and labels; higher is better, comparable across encoders of one dataset and depth only. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."rank" is '1 + encoders with a strictly higher score on the same dataset, depth and estimator. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."ranked_by" is 'True for the estimator the run ranked by (--rank-by): the one views screen_ranking and screen_trust follow. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."keep" is 'The keep-top-k the run was asked for (--keep): the pre-screen keeps encoders of rank <= keep. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."n_train" is 'Train images scored; count. docs/METHODS.md §21.';
comment on column analysis_screen_screen_scores."pretrained" is 'False marks features of a random-initialised stand-in, never a pretrained model''s. docs/METHODS.md §21.';
