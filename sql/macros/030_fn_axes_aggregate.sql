-- Table macro fn_axes_aggregate(cells) returns one row per (grp, encoder, regime): the encoder's
-- aggregate axes = the fn_exact_mean of its complete cells; docs/METHODS.md §7 (Aggregate axes).
-- THE one definition of aggregation (missing datasets are never imputed). The axes_encoder view
-- calls it on axes_cell; the bootstrap, leave-one-dataset-out and estimator analyses on their
-- own cells (grp = replicate, held-out dataset, estimator variant, ...).
--   cells  name of a relation shaped like fn_axes_cell's output (grp, encoder_id, dataset_id,
--          regime, discrimination, calibration, label_efficiency, robustness, aulc, complete,
--          pretrained); rows with complete = false are skipped.
-- Returns (grp, encoder_id, regime, discrimination, calibration, label_efficiency, robustness,
--          aulc, n_datasets, datasets, pretrained); discrimination is the aggregate AUROC.
create or replace macro fn_axes_aggregate(cells) as table
select grp, encoder_id, regime,
       fn_exact_mean(discrimination) as discrimination,
       fn_exact_mean(calibration) as calibration,
       fn_exact_mean(label_efficiency) as label_efficiency,
       fn_exact_mean(robustness) as robustness,
       fn_exact_mean(aulc) as aulc,
       count(*) as n_datasets,
       list(dataset_id order by dataset_id) as datasets,
       bool_and(pretrained) as pretrained
from query_table(cells)
where complete
group by grp, encoder_id, regime;

comment on macro table fn_axes_aggregate is 'Table macro fn_axes_aggregate(cells): an encoder''s aggregate axes = exact mean of its complete cells (never imputed), one row per (grp, encoder_id, regime) with the four axes, aulc, n_datasets, datasets, pretrained. docs/METHODS.md §7.';
