-- One row per (scope, axis): cohort-mode anchors, lo = min and hi = max of the axis over every
-- frozen-regime encoder present now (scope = dataset id or 'global'); docs/METHODS.md §8.6
-- (Cohort mode).
-- fn_anchors over fn_candidates(axes_scoped, cohort := true). Unlike a frozen panel's anchors
-- these move whenever an encoder is added: cohort mode exists only for comparison. A degenerate
-- axis (hi = lo) makes the cohort CRS NULL, not an error.
create or replace view crs_cohort_anchors as
with cohort as (
    select panel as grp, scope, candidate as encoder_id, in_panel, discrimination, calibration,
           label_efficiency, robustness
    from fn_candidates('axes_scoped', cohort := true)
)
select scope, axis, lo, hi, n_members from fn_anchors('cohort');

comment on view crs_cohort_anchors is 'One row per (scope, axis): cohort mode: reference = every frozen-regime encoder present now; moves when encoders are added; lo/hi = min/max of the raw axis over that cohort. docs/METHODS.md §8.6.';
comment on column crs_cohort_anchors.scope is 'Scope of the anchors and Pareto term: a dataset id (per-dataset) or ''global'' (aggregate axes). docs/METHODS.md §8.4.';
comment on column crs_cohort_anchors.axis is 'Axis name: discrimination, calibration, label_efficiency or robustness. docs/METHODS.md §6.';
comment on column crs_cohort_anchors.lo is 'Lower anchor: the smallest raw value of the axis over the cohort in this scope (maps to 0). docs/METHODS.md §8.6.';
comment on column crs_cohort_anchors.hi is 'Upper anchor: the largest raw value of the axis over the cohort in this scope (maps to 1). docs/METHODS.md §8.6.';
comment on column crs_cohort_anchors.n_members is 'Number of frozen-regime encoders the anchors were taken over; count. docs/METHODS.md §8.6.';
