-- One row per (encoder, regime, dataset): cohort-mode per-dataset CRS, for comparison with the
-- fixed-reference crs_cell. Same crs_scores macro, but the "panel" is every frozen-regime encoder
-- with a complete cell on the dataset now, and the anchors are crs_anchors over them, so these
-- rows move when encoders are added. A degenerate axis gives NULL scores, not an error.
create or replace view crs_cohort_cell as
with scoped as materialized (
    select dataset_id as scope, encoder_id, regime,
           encoder_key(encoder_id, regime)
               as candidate,
           discrimination, calibration, label_efficiency, robustness, pretrained
    from axes_cell
    where complete
),
cohort_axes as materialized (
    select 'cohort' as grp, scope, candidate as encoder_id, regime = 'frozen' as in_panel,
           discrimination, calibration, label_efficiency, robustness
    from scoped
),
cohort_anchors as (
    select * from crs_anchors('cohort_axes')
),
scores as (
    select * from crs_scores('cohort_axes', 'cohort_anchors')
)
select a.encoder_id, a.regime, a.scope as dataset_id, s.dominance, s.ideal, s.worst, s.crs,
       a.regime = 'frozen' as in_panel, a.pretrained
from scoped a
join scores s on s.scope = a.scope and s.encoder_id = a.candidate;
