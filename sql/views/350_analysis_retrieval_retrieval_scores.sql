-- Table analysis_retrieval_retrieval_scores, declared empty so view retrieval_scores exists before
-- `crsbench analyze retrieval` runs (the analysis replaces it with its output). A row of the view: One
-- row per (dataset, encoder, depth, query condition, relevance, metric): similar-case retrieval of the
-- test images (queries) among the clean train images (gallery) by the encoder's stored embeddings,
-- with its image-bootstrap interval. The stored output of `crsbench analyze retrieval` (empty until it
-- runs). docs/METHODS.md §24. Generated from analysis retrieval's registration and
-- crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not edit by hand.
create table if not exists analysis_retrieval_retrieval_scores(
    "dataset_id" VARCHAR,
    "encoder_id" VARCHAR,
    "depth" DOUBLE,
    "condition" VARCHAR,
    "relevance" VARCHAR,
    "primary_relevance" BOOLEAN,
    "metric" VARCHAR,
    "value" DOUBLE,
    "ci_low" DOUBLE,
    "ci_high" DOUBLE,
    "n_queries" BIGINT,
    "n_gallery" BIGINT,
    "pretrained" BOOLEAN);

comment on table analysis_retrieval_retrieval_scores is 'Output ''retrieval_scores'' of analysis retrieval (crsbench analyze retrieval): Similar-case retrieval: precision@k, recall@k and mAP@R of test queries against the train gallery. Parameters and code version: table analyses. docs/METHODS.md §10-§12, §16-§17.';
comment on column analysis_retrieval_retrieval_scores."dataset_id" is 'Dataset id (the name given at ingest); for probe results, the dataset the probe was trained on. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."encoder_id" is 'Encoder key: the encoder id, or id@regime for an adapted variant. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."depth" is 'Relative depth of the features: 0.25, 0.5, 0.75 or 1.0. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."condition" is 'The queries'' condition: clean, or a perturbation-severity (a corrupted query against the clean gallery). docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."relevance" is 'What counts as a relevant gallery case (probes.retrieval.relevance registry): same_label (multiclass, ordinal), within_one (ordinal), any_shared or jaccard (multilabel). docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."primary_relevance" is 'True for the task''s first relevance (same_label, or any_shared for multilabel): the one the summary, the report''s verdict and leaderboard --with-retrieval read. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."metric" is 'precision@k, recall@k (at least one relevant case among the first k; binary relevance only) or map@r (mAP@R; for jaccard divided by the ideal order''s), k from --cutoff. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."value" is 'The metric''s mean over the test queries that have at least one relevant gallery case. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."ci_low" is '2.5th percentile of the metric over the image-bootstrap replicates of the test queries (stratified by class, grouped by patient); NULL when the split cannot be resampled or --replicates 0. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."ci_high" is '97.5th percentile of the same replicates. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."n_queries" is 'Test images scored as queries: those with at least one relevant gallery case; count. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."n_gallery" is 'Train images in the gallery (clean condition); count. docs/METHODS.md §24.';
comment on column analysis_retrieval_retrieval_scores."pretrained" is 'False marks features of a random-initialised stand-in, never a pretrained model''s. docs/METHODS.md §24.';
