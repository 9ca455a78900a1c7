-- One row per (frozen panel, encoder, regime, dataset): the per-dataset CRS of SPEC 5.2 from
-- crs_scores, with that dataset's frozen anchors; the Pareto term counts only panel members
-- observed on the dataset, excluding the encoder itself. Only complete cells are scored.
-- Rows of existing encoders never change when another encoder is added (fixed reference).
create or replace view crs_cell as
with cells as (
    select dataset_id as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
           robustness, 1::bigint as n_datasets, pretrained
    from axes_cell
    where complete
),
candidates as materialized (
    select * from crs_panel_candidates('cells')
),
cell_axes as (
    select panel as grp, scope, candidate as encoder_id, in_panel, discrimination, calibration,
           label_efficiency, robustness
    from candidates
),
cell_anchors as (
    select panel as grp, scope, axis, lo, hi from reference_anchors where scope <> 'global'
),
scores as (
    select * from crs_scores('cell_axes', 'cell_anchors')
)
select c.panel, c.encoder_id, c.regime, c.scope as dataset_id,
       s.dominance, s.ideal, s.worst, s.crs, c.in_panel, c.pretrained
from candidates c
join scores s on s.grp = c.panel and s.scope = c.scope and s.encoder_id = c.candidate;
