-- One row per (scope, encoder, regime): the raw axes in the long "scope" form the CRS macros
-- take. scope = a dataset id for each complete cell of axes_cell, or 'global' for the aggregate
-- axes of axes_encoder; n_datasets = the cells behind the row.
create or replace view axes_scoped as
select dataset_id as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
       robustness, 1::bigint as n_datasets, pretrained
from axes_cell
where complete
union all
select 'global' as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
       robustness, n_datasets, pretrained
from axes_encoder;
