-- Table macro crs_axes_aggregate(cells): THE one definition of an encoder's aggregate axes
-- (SPEC 5.1) = the exact_mean of its complete cells (missing datasets are never imputed). The
-- axes_encoder view calls it on axes_cell; the bootstrap, leave-one-dataset-out and estimator
-- analyses on their own cells (grp = replicate, held-out dataset, estimator variant, ...).
--   cells  name of a relation shaped like crs_axes_cell's output (grp, encoder_id, dataset_id,
--          regime, discrimination, calibration, label_efficiency, robustness, aulc, complete,
--          pretrained); rows with complete = false are skipped.
-- Returns (grp, encoder_id, regime, discrimination, calibration, label_efficiency, robustness,
--          aulc, n_datasets, datasets, pretrained); discrimination is the aggregate AUROC.
create or replace macro crs_axes_aggregate(cells) as table
select grp, encoder_id, regime,
       exact_mean(discrimination) as discrimination,
       exact_mean(calibration) as calibration,
       exact_mean(label_efficiency) as label_efficiency,
       exact_mean(robustness) as robustness,
       exact_mean(aulc) as aulc,
       count(*) as n_datasets,
       list(dataset_id order by dataset_id) as datasets,
       bool_and(pretrained) as pretrained
from query_table(cells)
where complete
group by grp, encoder_id, regime;
