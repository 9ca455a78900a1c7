-- Table macro fn_dominance(normalised) returns one row per (candidate e, reference member p) pair
-- in the same (grp, scope), p drawn from the rows with in_panel = true and p != e (by
-- encoder_id); docs/METHODS.md §8.3 (Pareto term).
-- `normalised` names a relation shaped like fn_normalise's output (grp, scope, encoder_id,
-- in_panel, discrimination, calibration, label_efficiency, robustness), axes already normalised.
-- `dominates` = e's axes are >= p's on every axis and > on at least one (NULL when an axis is
-- NULL). Returns (grp, scope, encoder_id, reference_id, dominates); fn_crs_scores_weighted counts
-- it and pareto_pairs lists it.
create or replace macro fn_dominance(normalised) as table
with n as materialized (select * from query_table(normalised))
select e.grp, e.scope, e.encoder_id, p.encoder_id as reference_id,
       (e.discrimination >= p.discrimination and e.calibration >= p.calibration
        and e.label_efficiency >= p.label_efficiency and e.robustness >= p.robustness
        and (e.discrimination > p.discrimination or e.calibration > p.calibration
             or e.label_efficiency > p.label_efficiency or e.robustness > p.robustness))
           as dominates
from n e
join n p on p.grp = e.grp and p.scope = e.scope and p.in_panel and p.encoder_id <> e.encoder_id;

comment on macro table fn_dominance is 'Table macro fn_dominance(normalised): one row per (encoder, other panel member) pair of a (grp, scope); dominates = normalised axes >= on all four and > on one (Pareto dominance). Returns grp, scope, encoder_id, reference_id, dominates. docs/METHODS.md §8.3.';
