-- Table resplit_selection: one row per (dataset, criterion, encoder) written by `crsbench analyze
-- resplit --repeats R`, a REFIT analysis: the training pool is re-drawn R times into train and
-- calib (group-safe, stratified; test fixed), the primary logreg probe refitted on each draw, and
-- each draw selects one encoder on its calib split (calib_auroc or calib_crs). Declared empty here
-- so it exists before the analysis runs; a rerun replaces every row. docs/METHODS.md §18.2.
create table if not exists resplit_selection(
    dataset varchar, criterion varchar, encoder_id varchar, frequency double, repeats integer,
    test_auroc_mean double, test_auroc_sd double, test_auroc_min double, test_auroc_max double);

comment on table resplit_selection is 'REFIT analysis (crsbench analyze resplit): one row per (dataset, criterion, encoder): how often the encoder is selected first on the calibration split of R group-safe re-draws of train/calib (test fixed, primary logreg refitted at full fraction, clean, depth 1.0), and the spread of its test AUROC over the draws. docs/METHODS.md §18.2.';
comment on column resplit_selection.dataset is 'Dataset whose training pool (train + calib) was re-drawn; its test split is fixed. docs/METHODS.md §18.2.';
comment on column resplit_selection.criterion is 'Selection criterion on the re-drawn calib split: calib_auroc (macro AUROC) or calib_crs (cohort-mode CRS from calib discrimination and calibration and the stored label efficiency and robustness). docs/METHODS.md §18.2.';
comment on column resplit_selection.encoder_id is 'Encoder id (registry name). docs/METHODS.md §18.2.';
comment on column resplit_selection.frequency is 'Share of the draws that select this encoder first (ties to the lower id); [0, 1], sums to 1 per dataset and criterion. docs/METHODS.md §18.2.';
comment on column resplit_selection.repeats is 'Draws of the train/calib partition (--repeats). docs/METHODS.md §18.2.';
comment on column resplit_selection.test_auroc_mean is 'Mean over the draws of the refitted probe''s macro AUROC on the fixed test split. docs/METHODS.md §18.2.';
comment on column resplit_selection.test_auroc_sd is 'Standard deviation (ddof 1) over the draws of that test AUROC: the split-level uncertainty. docs/METHODS.md §18.2.';
comment on column resplit_selection.test_auroc_min is 'Lowest test AUROC over the draws. docs/METHODS.md §18.2.';
comment on column resplit_selection.test_auroc_max is 'Highest test AUROC over the draws. docs/METHODS.md §18.2.';
