-- Table analysis_agreement_encoder_agreement, declared empty so view encoder_agreement exists before
-- `crsbench analyze agreement` runs (the analysis replaces it with its output). A row of the view: One
-- row per (dataset, unordered encoder pair, depth, measure): mutual k-NN overlap of the two encoders'
-- neighbour lists with its 95 % bootstrap interval over images and chance level k / (n - 1), or linear
-- CKA. The stored output of `crsbench analyze agreement` (table analysis_agreement_encoder_agreement;
-- empty until the analysis runs), with the column names of the rest of the warehouse (dataset_id for
-- the dataset). docs/METHODS.md §17. Generated from analysis agreement's registration and
-- crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not edit by hand.
create table if not exists analysis_agreement_encoder_agreement(
    "dataset_id" VARCHAR,
    "encoder_a" VARCHAR,
    "encoder_b" VARCHAR,
    "depth" DOUBLE,
    "k" BIGINT,
    "measure" VARCHAR,
    "estimate" DOUBLE,
    "lo" DOUBLE,
    "hi" DOUBLE,
    "chance" DOUBLE,
    "n_images" BIGINT);

comment on table analysis_agreement_encoder_agreement is 'Output ''encoder_agreement'' of analysis agreement (crsbench analyze agreement): Representation agreement of every encoder pair: mutual k-NN, CKA, neighbour composition, transfer. Parameters and code version: table analyses. docs/METHODS.md §10-§12, §16-§17.';
comment on column analysis_agreement_encoder_agreement."dataset_id" is 'Dataset whose images both encoders'' features describe (all images, or the split asked for). docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."encoder_a" is 'First encoder of the pair (encoder key: id, or id@regime for an adapted variant); pairs are unordered, encoder_a < encoder_b. docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."encoder_b" is 'Second encoder of the pair (encoder key); pairs are unordered, encoder_a < encoder_b. docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."depth" is 'Relative depth of both encoders'' features: 0.25, 0.5, 0.75 or 1.0; clean condition. docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."k" is 'Neighbours per image (cosine similarity of the L2-normalised features, the image itself excluded, ties to the lower row); NULL for CKA. docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."measure" is 'mutual_knn (mean over images of |N_A(i) & N_B(i)| / k) or cka (linear CKA of the centred features, Kornblith et al. 2019). docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."estimate" is 'The measure on all images; [0, 1], 1 = the same neighbours (mutual_knn) or the same representation up to rotation and scale (cka). docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."lo" is '2.5th percentile of the mean over bootstrap resamples of the images (the same resamples for every pair of the dataset); NULL for CKA. docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."hi" is '97.5th percentile of the mean over the same image resamples; NULL for CKA. docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."chance" is 'Mutual k-NN overlap expected of unrelated neighbour lists, k / (n - 1); NULL for CKA. docs/METHODS.md §17.';
comment on column analysis_agreement_encoder_agreement."n_images" is 'Images the measure was computed on; count. docs/METHODS.md §17.';
