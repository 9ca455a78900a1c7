-- One row per (encoder, regime): the aggregate axes of SPEC 5.1 = the mean of the encoder's
-- complete cells in axes_cell (missing datasets are never imputed). Its aggregate AUROC, used for
-- the AUROC ranking, is its aggregate discrimination. exact_mean keeps them bit-for-bit
-- reproducible.
create or replace view axes_encoder as
select encoder_id, regime,
       exact_mean(discrimination) as discrimination,
       exact_mean(calibration) as calibration,
       exact_mean(label_efficiency) as label_efficiency,
       exact_mean(robustness) as robustness,
       exact_mean(aulc) as aulc,
       count(*) as n_datasets,
       list(dataset_id order by dataset_id) as datasets,
       bool_and(pretrained) as pretrained
from axes_cell
where complete
group by encoder_id, regime;
