-- View screen_scores: One row per (dataset, encoder, depth, transferability estimator): the
-- estimator's score on the train split's clean features and labels, and the encoder's rank by it. The
-- stored output of `crsbench screen` (analysis screen; empty until it runs), with the column names of
-- the rest of the warehouse. docs/METHODS.md §21. Generated from analysis screen's registration and
-- crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not edit by hand.
create or replace view screen_scores as
select cast("dataset_id" as VARCHAR) as "dataset_id",
       cast("encoder_id" as VARCHAR) as "encoder_id",
       cast("depth" as DOUBLE) as "depth",
       cast("estimator" as VARCHAR) as "estimator",
       cast("score" as DOUBLE) as "score",
       cast("rank" as BIGINT) as "rank",
       cast("ranked_by" as BOOLEAN) as "ranked_by",
       cast("keep" as BIGINT) as "keep",
       cast("n_train" as BIGINT) as "n_train",
       cast("pretrained" as BOOLEAN) as "pretrained"
from analysis_screen_screen_scores;

comment on view screen_scores is 'One row per (dataset, encoder, depth, transferability estimator): the estimator''s score on the train split''s clean features and labels, and the encoder''s rank by it. The stored output of `crsbench screen` (analysis screen; empty until it runs), with the column names of the rest of the warehouse. docs/METHODS.md §21.';
comment on column screen_scores."dataset_id" is 'Dataset id (the name given at ingest); for probe results, the dataset the probe was trained on. docs/METHODS.md §21.';
comment on column screen_scores."encoder_id" is 'Encoder key: the encoder id, or id@regime for an adapted variant. docs/METHODS.md §21.';
comment on column screen_scores."depth" is 'Relative depth of the features scored: 0.25, 0.5, 0.75 or 1.0; clean condition, train split. docs/METHODS.md §21.';
comment on column screen_scores."estimator" is 'Transferability estimator (probes.screening registry): logme, hscore, gbc, transrate, nleep, knn_loo or a plugin. docs/METHODS.md §21.';
comment on column screen_scores."score" is 'The estimator''s score on the train split''s standardised clean features and labels; higher is better, comparable across encoders of one dataset and depth only. docs/METHODS.md §21.';
comment on column screen_scores."rank" is '1 + encoders with a strictly higher score on the same dataset, depth and estimator. docs/METHODS.md §21.';
comment on column screen_scores."ranked_by" is 'True for the estimator the run ranked by (--rank-by): the one views screen_ranking and screen_trust follow. docs/METHODS.md §21.';
comment on column screen_scores."keep" is 'The keep-top-k the run was asked for (--keep): the pre-screen keeps encoders of rank <= keep. docs/METHODS.md §21.';
comment on column screen_scores."n_train" is 'Train images scored; count. docs/METHODS.md §21.';
comment on column screen_scores."pretrained" is 'False marks features of a random-initialised stand-in, never a pretrained model''s. docs/METHODS.md §21.';
