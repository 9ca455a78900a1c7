-- View encoder_agreement: One row per (dataset, unordered encoder pair, depth, measure): mutual k-NN
-- overlap of the two encoders' neighbour lists with its 95 % bootstrap interval over images and chance
-- level k / (n - 1), or linear CKA. The stored output of `crsbench analyze agreement` (table
-- analysis_agreement_encoder_agreement; empty until the analysis runs), with the column names of the
-- rest of the warehouse (dataset_id for the dataset). docs/METHODS.md §17. Generated from analysis
-- agreement's registration and crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not
-- edit by hand.
create or replace view encoder_agreement as
select cast("dataset_id" as VARCHAR) as "dataset_id",
       cast("encoder_a" as VARCHAR) as "encoder_a",
       cast("encoder_b" as VARCHAR) as "encoder_b",
       cast("depth" as DOUBLE) as "depth",
       cast("k" as BIGINT) as "k",
       cast("measure" as VARCHAR) as "measure",
       cast("estimate" as DOUBLE) as "estimate",
       cast("lo" as DOUBLE) as "lo",
       cast("hi" as DOUBLE) as "hi",
       cast("chance" as DOUBLE) as "chance",
       cast("n_images" as BIGINT) as "n_images"
from analysis_agreement_encoder_agreement;

comment on view encoder_agreement is 'One row per (dataset, unordered encoder pair, depth, measure): mutual k-NN overlap of the two encoders'' neighbour lists with its 95 % bootstrap interval over images and chance level k / (n - 1), or linear CKA. The stored output of `crsbench analyze agreement` (table analysis_agreement_encoder_agreement; empty until the analysis runs), with the column names of the rest of the warehouse (dataset_id for the dataset). docs/METHODS.md §17.';
comment on column encoder_agreement."dataset_id" is 'Dataset whose images both encoders'' features describe (all images, or the split asked for). docs/METHODS.md §17.';
comment on column encoder_agreement."encoder_a" is 'First encoder of the pair (encoder key: id, or id@regime for an adapted variant); pairs are unordered, encoder_a < encoder_b. docs/METHODS.md §17.';
comment on column encoder_agreement."encoder_b" is 'Second encoder of the pair (encoder key); pairs are unordered, encoder_a < encoder_b. docs/METHODS.md §17.';
comment on column encoder_agreement."depth" is 'Relative depth of both encoders'' features: 0.25, 0.5, 0.75 or 1.0; clean condition. docs/METHODS.md §17.';
comment on column encoder_agreement."k" is 'Neighbours per image (cosine similarity of the L2-normalised features, the image itself excluded, ties to the lower row); NULL for CKA. docs/METHODS.md §17.';
comment on column encoder_agreement."measure" is 'mutual_knn (mean over images of |N_A(i) & N_B(i)| / k) or cka (linear CKA of the centred features, Kornblith et al. 2019). docs/METHODS.md §17.';
comment on column encoder_agreement."estimate" is 'The measure on all images; [0, 1], 1 = the same neighbours (mutual_knn) or the same representation up to rotation and scale (cka). docs/METHODS.md §17.';
comment on column encoder_agreement."lo" is '2.5th percentile of the mean over bootstrap resamples of the images (the same resamples for every pair of the dataset); NULL for CKA. docs/METHODS.md §17.';
comment on column encoder_agreement."hi" is '97.5th percentile of the mean over the same image resamples; NULL for CKA. docs/METHODS.md §17.';
comment on column encoder_agreement."chance" is 'Mutual k-NN overlap expected of unrelated neighbour lists, k / (n - 1); NULL for CKA. docs/METHODS.md §17.';
comment on column encoder_agreement."n_images" is 'Images the measure was computed on; count. docs/METHODS.md §17.';
