-- Table analysis_agreement_classifier_transfer, declared empty so view classifier_transfer exists
-- before `crsbench analyze agreement` runs (the analysis replaces it with its output). A row of the
-- view: One row per (labelled dataset, ordered encoder pair, depth, seed): AUROC retention and ECE of
-- encoder_b's stored full-label logreg probe applied to encoder_a's test features mapped into
-- encoder_b's space by a ridge map fitted on unlabelled training images. The stored output of
-- `crsbench analyze agreement` (table analysis_agreement_classifier_transfer; empty until the analysis
-- runs), with the column names of the rest of the warehouse (dataset_id for the dataset).
-- docs/METHODS.md §17. Generated from analysis agreement's registration and crsbench/analyses/views.py
-- by `python scripts/analysis_sql.py`; do not edit by hand.
create table if not exists analysis_agreement_classifier_transfer(
    "dataset_id" VARCHAR,
    "encoder_a" VARCHAR,
    "encoder_b" VARCHAR,
    "depth" DOUBLE,
    "seed" BIGINT,
    "m_images" BIGINT,
    "auroc_b" DOUBLE,
    "auroc_mapped" DOUBLE,
    "retention" DOUBLE,
    "lo" DOUBLE,
    "hi" DOUBLE,
    "ece_b" DOUBLE,
    "ece_mapped" DOUBLE,
    "n_test" BIGINT);

comment on table analysis_agreement_classifier_transfer is 'Output ''classifier_transfer'' of analysis agreement (crsbench analyze agreement): Representation agreement of every encoder pair: mutual k-NN, CKA, neighbour composition, transfer. Parameters and code version: table analyses. docs/METHODS.md §10-§12, §16-§17.';
comment on column analysis_agreement_classifier_transfer."dataset_id" is 'Labelled dataset whose training images fit the map and whose test images score the transferred probe. docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."encoder_a" is 'Encoder whose test features are mapped into encoder_b''s space (the current encoder whose probe is reused is encoder_b). docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."encoder_b" is 'Encoder whose stored full-label logreg probe is applied to encoder_a''s mapped test features (encoder key). docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."depth" is 'Relative depth of both encoders'' features: 0.25, 0.5, 0.75 or 1.0; clean condition. docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."seed" is 'Seed of encoder_b''s full-label logreg probe (its label-fraction family, 0..4). docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."m_images" is 'Unlabelled training images the ridge map from encoder_a to encoder_b was fitted on; min(transfer_images, n_train). docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."auroc_b" is 'Macro-AUROC of encoder_b''s probe on encoder_b''s own clean test features. docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."auroc_mapped" is 'Macro-AUROC of encoder_b''s probe on encoder_a''s clean test features mapped by the ridge map. docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."retention" is 'auroc_mapped / auroc_b: the share of encoder_b''s AUROC kept when its probe reads encoder_a; 1 = nothing lost. docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."lo" is '2.5th percentile of the retention over bootstrap resamples of the test images (both AUROCs on the same resample). docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."hi" is '97.5th percentile of the retention over the same test-image resamples. docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."ece_b" is 'ECE (15 equal-width bins) of encoder_b''s probe on its own clean test features. docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."ece_mapped" is 'ECE (15 equal-width bins) of encoder_b''s probe on encoder_a''s mapped test features. docs/METHODS.md §17.';
comment on column analysis_agreement_classifier_transfer."n_test" is 'Test images both AUROCs were computed on; count. docs/METHODS.md §17.';
