-- Table shortcut_audit: one row per (dataset, property set, split, metric) written by `crsbench
-- analyze shortcuts`: how well a logistic regression on the image files' properties alone
-- (width, height, aspect, mode, bit depth, format, JPEG quality, chroma subsampling, EXIF, ICC;
-- with and without the bytes on disk; table image_properties) predicts the labels,
-- cross-validated inside the training pool (pool_cv) and fitted on the pool, scored on the test
-- split (test). A rerun replaces the audited datasets' rows. docs/METHODS.md §19.
create table if not exists shortcut_audit(
    dataset varchar, properties varchar, split varchar, metric varchar, estimate double,
    chance double, warn boolean, n_images bigint, folds bigint);

comment on table shortcut_audit is 'One row per (dataset, property set, split, metric): labels predicted from image file properties alone (no pixels), cross-validated inside the training pool (pool_cv) and scored on the test split (test), with chance and the warning flag (crsbench analyze shortcuts). docs/METHODS.md §19.';
comment on column shortcut_audit.dataset is 'Dataset audited (datasets.dataset_id). docs/METHODS.md §19.';
comment on column shortcut_audit.properties is 'header: every property but the file size (the warning rule reads these rows); header_and_size: the file size added, which also reflects how compressible the pixels are, i.e. partly the image content. docs/METHODS.md §19.';
comment on column shortcut_audit.split is 'pool_cv: out-of-fold predictions of a group-safe k-fold CV inside train + calib; test: fitted on the whole pool, scored on the test split. docs/METHODS.md §19.';
comment on column shortcut_audit.metric is 'balanced_accuracy (mean per-class recall; multilabel: mean over labels at p >= 0.5), auroc (macro one-vs-rest) or max_class_auroc (the single best-predicted class or label). docs/METHODS.md §19.';
comment on column shortcut_audit.estimate is 'The metric of the file-property classifier; higher means the labels are more predictable from file properties. docs/METHODS.md §19.';
comment on column shortcut_audit.chance is 'The metric at chance: 1 / classes for multiclass balanced accuracy, 0.5 otherwise. docs/METHODS.md §19.';
comment on column shortcut_audit.warn is 'True on every row of a dataset whose pool_cv scores on the header properties meet the rule: balanced accuracy > chance + 0.25 and AUROC > 0.80, or max_class_auroc >= 0.95. docs/METHODS.md §19.';
comment on column shortcut_audit.n_images is 'Images scored: the training pool (pool_cv) or the test split (test); count. docs/METHODS.md §19.';
comment on column shortcut_audit.folds is 'Cross-validation folds inside the pool (at most the folds parameter, at most the pool''s groups). docs/METHODS.md §19.';
