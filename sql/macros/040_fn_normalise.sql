-- Table macro fn_normalise(axes, anchors) returns one row per row of `axes` whose (grp, scope)
-- has anchors, every axis normalised x~ = clip((x - lo) / (hi - lo), 0, 1); docs/METHODS.md §8.2
-- (Normalisation).
-- `axes` and `anchors` are relation names (a table, view or CTE) read with query_table():
--   axes    (grp, scope, encoder_id, in_panel, discrimination, calibration, label_efficiency, robustness)
--   anchors (grp, scope, axis, lo, hi), axis in the four axis names above
-- A degenerate anchor (hi = lo) or a NULL axis gives NULL (never a silent 0 or 1);
-- freezing a panel refuses degenerate anchors, so only ad-hoc callers can meet it.
-- Returns (grp, scope, encoder_id, in_panel, discrimination, calibration, label_efficiency, robustness).
create or replace macro fn_normalise(axes, anchors) as table
with bounds as (
    select grp, scope,
           max(lo) filter (where axis = 'discrimination') as d_lo,
           max(hi) filter (where axis = 'discrimination') as d_hi,
           max(lo) filter (where axis = 'calibration') as c_lo,
           max(hi) filter (where axis = 'calibration') as c_hi,
           max(lo) filter (where axis = 'label_efficiency') as le_lo,
           max(hi) filter (where axis = 'label_efficiency') as le_hi,
           max(lo) filter (where axis = 'robustness') as r_lo,
           max(hi) filter (where axis = 'robustness') as r_hi
    from query_table(anchors)
    group by grp, scope
),
scaled as (
    select a.grp, a.scope, a.encoder_id, a.in_panel,
           (a.discrimination - b.d_lo) / nullif(b.d_hi - b.d_lo, 0) as d,
           (a.calibration - b.c_lo) / nullif(b.c_hi - b.c_lo, 0) as c,
           (a.label_efficiency - b.le_lo) / nullif(b.le_hi - b.le_lo, 0) as le,
           (a.robustness - b.r_lo) / nullif(b.r_hi - b.r_lo, 0) as r
    from query_table(axes) a
    join bounds b on a.grp = b.grp and a.scope = b.scope
)
-- greatest()/least() skip NULLs, so the clip is spelled out to keep NULL as NULL.
select grp, scope, encoder_id, in_panel,
       case when d < 0 then 0.0 when d > 1 then 1.0 else d end as discrimination,
       case when c < 0 then 0.0 when c > 1 then 1.0 else c end as calibration,
       case when le < 0 then 0.0 when le > 1 then 1.0 else le end as label_efficiency,
       case when r < 0 then 0.0 when r > 1 then 1.0 else r end as robustness
from scaled;

comment on macro table fn_normalise is 'Table macro fn_normalise(axes, anchors): each axis scaled by its (grp, scope) anchors, x~ = clip((x - lo) / (hi - lo), 0, 1) in [0, 1], NULL for a NULL axis or degenerate anchor; returns grp, scope, encoder_id, in_panel and the four normalised axes. docs/METHODS.md §8.2.';
