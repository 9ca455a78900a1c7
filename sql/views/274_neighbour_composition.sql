-- View neighbour_composition: One row per (dataset, depth, encoder, field): the mean share of an
-- image's k nearest neighbours with the same label, the same patient or lesion group, or the same
-- value of a metadata key (view, site, sex, ...; images without a value left out), with its 95 %
-- bootstrap interval and chance level. The stored output of `crsbench analyze agreement` (table
-- analysis_agreement_neighbour_composition; empty until the analysis runs), with the column names of
-- the rest of the warehouse (dataset_id for the dataset). docs/METHODS.md §17. Generated from analysis
-- agreement's registration and crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not
-- edit by hand.
create or replace view neighbour_composition as
select cast("dataset_id" as VARCHAR) as "dataset_id",
       cast("depth" as DOUBLE) as "depth",
       cast("encoder_id" as VARCHAR) as "encoder_id",
       cast("k" as BIGINT) as "k",
       cast("field" as VARCHAR) as "field",
       cast("estimate" as DOUBLE) as "estimate",
       cast("lo" as DOUBLE) as "lo",
       cast("hi" as DOUBLE) as "hi",
       cast("chance" as DOUBLE) as "chance",
       cast("n_images" as BIGINT) as "n_images"
from analysis_agreement_neighbour_composition;

comment on view neighbour_composition is 'One row per (dataset, depth, encoder, field): the mean share of an image''s k nearest neighbours with the same label, the same patient or lesion group, or the same value of a metadata key (view, site, sex, ...; images without a value left out), with its 95 % bootstrap interval and chance level. The stored output of `crsbench analyze agreement` (table analysis_agreement_neighbour_composition; empty until the analysis runs), with the column names of the rest of the warehouse (dataset_id for the dataset). docs/METHODS.md §17.';
comment on column neighbour_composition."dataset_id" is 'Dataset whose images the neighbour lists range over (all images, or the split asked for). docs/METHODS.md §17.';
comment on column neighbour_composition."depth" is 'Relative depth of both encoders'' features: 0.25, 0.5, 0.75 or 1.0; clean condition. docs/METHODS.md §17.';
comment on column neighbour_composition."encoder_id" is 'Encoder whose neighbour lists are described (encoder key). docs/METHODS.md §17.';
comment on column neighbour_composition."k" is 'Neighbours per image (cosine similarity of the L2-normalised features, the image itself excluded, ties to the lower row). docs/METHODS.md §17.';
comment on column neighbour_composition."field" is 'What neighbours are compared on: label (the same class, or the same set of labels for a multilabel image), group (the same patient or lesion id), or a metadata key of the dataset (image_metadata.key: view, site, sex, age bin, ...; a key named label or group is meta:label, meta:group). docs/METHODS.md §17.';
comment on column neighbour_composition."estimate" is 'Mean over the images with a value of the field of the share of its k neighbours with the image''s own value; images without a value for a metadata key are left out of that key''s share, and as neighbours never share it; [0, 1]. docs/METHODS.md §17.';
comment on column neighbour_composition."lo" is '2.5th percentile over bootstrap resamples of the images. docs/METHODS.md §17.';
comment on column neighbour_composition."hi" is '97.5th percentile over bootstrap resamples of the images. docs/METHODS.md §17.';
comment on column neighbour_composition."chance" is 'Share expected of neighbours drawn at random from the n - 1 other images: sum_v c_v (c_v - 1) / (n_v (n - 1)) over the field''s values v with c_v images, n_v = sum_v c_v the images with a value (n_v = n for label and group). docs/METHODS.md §17.';
comment on column neighbour_composition."n_images" is 'Images the share is averaged over: those with a value of the field (all images for label and group); count. docs/METHODS.md §17.';
