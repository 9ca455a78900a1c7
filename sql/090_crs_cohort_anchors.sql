-- One row per (scope, axis): cohort-mode anchors, lo = min and hi = max of the axis over every
-- frozen-regime encoder present now (scope = dataset id or 'global'), via crs_anchors. Unlike a
-- frozen panel's anchors these move whenever an encoder is added: cohort mode exists only for
-- comparison (SPEC 5.2). A degenerate axis (hi = lo) makes the cohort CRS NULL, not an error.
create or replace view crs_cohort_anchors as
with cohort as (
    select 'cohort' as grp, scope, encoder_id, regime = 'frozen' as in_panel, discrimination,
           calibration, label_efficiency, robustness
    from axes_scoped
)
select scope, axis, lo, hi, n_members from crs_anchors('cohort');
