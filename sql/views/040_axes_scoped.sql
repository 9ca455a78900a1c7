-- One row per (scope, encoder, regime): the raw axes in the long "scope" form the CRS macros take;
-- docs/METHODS.md §8.4 (Per-dataset and aggregate CRS).
-- scope = a dataset id for each complete cell of axes_cell, or 'global' for the aggregate axes of
-- axes_encoder; n_datasets = the cells behind the row.
-- axes_cell is read once: the global rows are axes_encoder's fn_axes_aggregate call over the same
-- cells, so the cells and their grid checks are evaluated once per query.
create or replace view axes_scoped as
with cells as materialized (
    select 'all' as grp, * from axes_cell
)
select dataset_id as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
       robustness, 1::bigint as n_datasets, pretrained
from cells
where complete
union all
select 'global' as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
       robustness, n_datasets, pretrained
from fn_axes_aggregate('cells');

comment on view axes_scoped is 'One row per (scope, encoder, regime): raw axes of each complete cell (scope = dataset id) and the aggregate axes (scope = global), the input of the CRS macros. docs/METHODS.md §8.4.';
comment on column axes_scoped.scope is 'Scope of the anchors and Pareto term: a dataset id (per-dataset) or ''global'' (aggregate axes). docs/METHODS.md §8.4.';
comment on column axes_scoped.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column axes_scoped.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column axes_scoped.discrimination is 'Discrimination axis D = clean full-label AUROC (seed mean) of the logreg probe at depth 1.0; [0, 1], higher is better. docs/METHODS.md §6 Per-dataset value for a dataset scope, aggregate for ''global''.';
comment on column axes_scoped.calibration is 'Calibration axis C = 1 - clean full-label ECE (seed mean); [0, 1], higher is better. docs/METHODS.md §6 Per-dataset value for a dataset scope, aggregate for ''global''.';
comment on column axes_scoped.label_efficiency is 'Label-efficiency axis LE = mean over label fractions f < 1 of AUROC_clean(f) / AUROC_clean(100 %); a ratio, usually in [0, 1] (may exceed 1), higher is better. docs/METHODS.md §6 Per-dataset value for a dataset scope, aggregate for ''global''.';
comment on column axes_scoped.robustness is 'Robustness axis R = 1 - (0.5 mean + 0.5 max) of the AUROC drops max(0, clean - condition) over the perturbed conditions and shift targets; at most 1, higher is better. docs/METHODS.md §6 Per-dataset value for a dataset scope, aggregate for ''global''.';
comment on column axes_scoped.n_datasets is 'Number of complete cells (datasets) behind the row; count (1 for a per-dataset row). docs/METHODS.md §7.';
comment on column axes_scoped.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
