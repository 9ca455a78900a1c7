-- Table macro fn_anchors(axes) returns one row per (grp, scope, axis): lo = min and hi = max of
-- the axis over the rows with in_panel = true; docs/METHODS.md §8.1 (Reference panel and anchors).
-- `axes` names a relation shaped like fn_crs_scores' input (grp, scope, encoder_id, in_panel,
-- discrimination, calibration, label_efficiency, robustness). Panel freeze stores its output
-- (after refusing hi = lo); cohort mode and bootstrap replicates feed it straight to fn_crs_scores.
-- Returns (grp, scope, axis, lo, hi, n_members).
create or replace macro fn_anchors(axes) as table
unpivot (
    select grp, scope, count(*) as n_members,
           min(discrimination) as discrimination_lo, max(discrimination) as discrimination_hi,
           min(calibration) as calibration_lo, max(calibration) as calibration_hi,
           min(label_efficiency) as label_efficiency_lo, max(label_efficiency) as label_efficiency_hi,
           min(robustness) as robustness_lo, max(robustness) as robustness_hi
    from query_table(axes)
    where in_panel
    group by grp, scope
)
on (discrimination_lo, discrimination_hi) as discrimination,
   (calibration_lo, calibration_hi) as calibration,
   (label_efficiency_lo, label_efficiency_hi) as label_efficiency,
   (robustness_lo, robustness_hi) as robustness
into name axis value lo, hi;

comment on macro table fn_anchors is 'Table macro fn_anchors(axes): per (grp, scope, axis) the anchors lo = min and hi = max of the axis over the in_panel rows, and n_members. docs/METHODS.md §8.1.';
