-- Table macro crs_anchors(axes): the anchors of SPEC 5.2, one row per (grp, scope, axis):
-- lo = min and hi = max of the axis over the rows with in_panel = true. `axes` names a relation
-- shaped like crs_scores' input (grp, scope, encoder_id, in_panel, discrimination, calibration,
-- label_efficiency, robustness). Panel freeze stores its output (after refusing hi = lo); cohort
-- mode and bootstrap replicates feed it straight to crs_scores.
-- Returns (grp, scope, axis, lo, hi, n_members).
create or replace macro crs_anchors(axes) as table
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
