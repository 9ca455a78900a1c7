-- Table macro fn_crs_scores_weighted(axes, anchors, weights) returns one row per axes row whose
-- (grp, scope) has anchors and weights: THE one definition of the Clinical Reliability Score;
-- docs/METHODS.md §8.3 (CRS terms).
-- Every CRS in crsbench (crs_cell, crs_encoder, the cohort views, bootstrap, stability,
-- weight-sensitivity analyses) comes from this macro, directly or through fn_crs_scores.
--   axes    name (string) of a table / view / CTE with columns
--           (grp, scope, encoder_id, in_panel, discrimination, calibration, label_efficiency, robustness)
--           grp: any key (panel name, bootstrap replicate id, ...); scope: dataset id or 'global';
--           encoder_id: unique within (grp, scope); in_panel: whether the row is a reference member.
--           A (grp, scope) holds every candidate to score and every panel member observed there.
--   anchors name of a relation (grp, scope, axis, lo, hi), one row per axis per (grp, scope).
--   weights name of a relation (grp, w_d, w_c, w_le, w_r, w_dom, w_ideal, w_worst), one row per
--           grp (the weight-sensitivity analysis scores a thousand weightings in one query); a grp
--           without a weights row is not scored.
-- Returns (grp, scope, encoder_id, dominance, ideal, worst, crs):
--     x~        = clip((x - lo) / (hi - lo), 0, 1)                      (fn_normalise)
--     dominance = |{p in panel rows of (grp, scope), p != e : x~_e dominates x~_p}| / |{... p != e}|
--                 (fn_dominance; NULL when the scope has no other member)
--     ideal     = 1 - sqrt(w_d (1 - x~_d)^2 + w_c (1 - x~_c)^2 + w_le (1 - x~_le)^2 + w_r (1 - x~_r)^2)
--     worst     = min over the four x~ (NULL if any is NULL)
--     crs       = w_dom dominance + w_ideal ideal + w_worst worst
create or replace macro fn_crs_scores_weighted(axes, anchors, weights) as table
with n as materialized (
    select * from fn_normalise(axes, anchors)
),
dom as (
    select grp, scope, encoder_id,
           count_if(dominates)::double / count(*) as dominance
    from fn_dominance('n')
    group by grp, scope, encoder_id
),
w as (
    select grp, w_d::double as w_d, w_c::double as w_c, w_le::double as w_le, w_r::double as w_r,
           w_dom::double as w_dom, w_ideal::double as w_ideal, w_worst::double as w_worst
    from query_table(weights)
),
parts as (
    select n.grp, n.scope, n.encoder_id, d.dominance, w.w_dom, w.w_ideal, w.w_worst,
           1 - sqrt(w.w_d * (1 - n.discrimination) ** 2
                    + w.w_c * (1 - n.calibration) ** 2
                    + w.w_le * (1 - n.label_efficiency) ** 2
                    + w.w_r * (1 - n.robustness) ** 2) as ideal,
           case when n.discrimination is null or n.calibration is null
                     or n.label_efficiency is null or n.robustness is null then null
                else least(n.discrimination, n.calibration, n.label_efficiency, n.robustness)
           end as worst
    from n
    join w on w.grp = n.grp
    left join dom d on d.grp = n.grp and d.scope = n.scope and d.encoder_id = n.encoder_id
)
select grp, scope, encoder_id, dominance, ideal, worst,
       w_dom * dominance + w_ideal * ideal + w_worst * worst as crs
from parts;

comment on macro table fn_crs_scores_weighted is 'Table macro fn_crs_scores_weighted(axes, anchors, weights): the one definition of the Clinical Reliability Score with per-grp weights; returns grp, scope, encoder_id, dominance, ideal, worst, crs (each in [0, 1], higher is better). docs/METHODS.md §8.3.';
