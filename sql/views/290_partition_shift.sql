-- Table partition_shift: one row per (dataset, encoder, pair) written by `crsbench analyze
-- partition`: the cross-validated AUROC of a logreg partition classifier telling the dataset's
-- training pool (train + calib) from its test split (pair pool_vs_test) or from a shift target's
-- test split (pair shift), with a 95 % clustered DeLong interval. Declared empty here so it exists
-- before the analysis runs; a rerun replaces every row. docs/METHODS.md §18.1.
create table if not exists partition_shift(
    dataset varchar, encoder_id varchar, pair varchar, other_dataset varchar, auroc double,
    auroc_lo double, auroc_hi double, n_pool bigint, n_other bigint, folds integer);

comment on table partition_shift is 'One row per (dataset, encoder, pair): cross-validated AUROC of the partition classifier (primary logreg probe on the clean depth-1.0 features, group-safe stratified folds) telling the training pool (train + calib) from the test split or a shift target''s test split; 0.5 = indistinguishable (crsbench analyze partition). docs/METHODS.md §18.1.';
comment on column partition_shift.dataset is 'Dataset whose training pool (train + calib images) is one side of the pair. docs/METHODS.md §18.1.';
comment on column partition_shift.encoder_id is 'Encoder id (registry name) whose frozen clean features at depth 1.0 the classifier reads. docs/METHODS.md §18.1.';
comment on column partition_shift.pair is 'pool_vs_test (the pool against the dataset''s own test split) or shift (the pool against a declared shift target''s test split). docs/METHODS.md §18.1.';
comment on column partition_shift.other_dataset is 'Dataset of the other side: the dataset itself (pool_vs_test) or the shift target (shift). docs/METHODS.md §18.1.';
comment on column partition_shift.auroc is 'AUROC of the out-of-fold scores for the other side against the pool; [0, 1], 0.5 = the two cannot be told apart, higher = more shift. docs/METHODS.md §18.1.';
comment on column partition_shift.auroc_lo is 'Lower end of the 95 % clustered DeLong interval of auroc (patient/lesion groups as units). docs/METHODS.md §18.1.';
comment on column partition_shift.auroc_hi is 'Upper end of the 95 % clustered DeLong interval of auroc. docs/METHODS.md §18.1.';
comment on column partition_shift.n_pool is 'Images of the pool (train + calib); count. docs/METHODS.md §18.1.';
comment on column partition_shift.n_other is 'Images of the other side (a test split); count. docs/METHODS.md §18.1.';
comment on column partition_shift.folds is 'Cross-validation folds (whole groups, stratified by side). docs/METHODS.md §18.1.';
