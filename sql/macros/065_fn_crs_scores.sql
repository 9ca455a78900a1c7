-- Table macro fn_crs_scores(axes, anchors [, w_d := 0.25, w_c := 0.25, w_le := 0.25,
-- w_r := 0.25, w_dom := 0.60, w_ideal := 0.25, w_worst := 0.15]) returns one row per axes row
-- whose (grp, scope) has anchors: (grp, scope, encoder_id, dominance, ideal, worst, crs), the
-- CRS of fn_crs_scores_weighted with one set of weights for every grp; docs/METHODS.md §8.3.
-- The defaults are the protocol weights (METHODS §14), read through fn_crs_weight (generated
-- from crsbench.core.CRS_WEIGHTS, their one home); the bootstrap and stability analyses pass
-- many groups at once (grp = replicate id).
create or replace macro fn_crs_scores(axes, anchors, w_d := fn_crs_weight('w_d'),
                                      w_c := fn_crs_weight('w_c'), w_le := fn_crs_weight('w_le'),
                                      w_r := fn_crs_weight('w_r'), w_dom := fn_crs_weight('w_dom'),
                                      w_ideal := fn_crs_weight('w_ideal'),
                                      w_worst := fn_crs_weight('w_worst')) as table
with crs_default_weights as (
    select distinct grp, w_d as w_d, w_c as w_c, w_le as w_le, w_r as w_r, w_dom as w_dom,
           w_ideal as w_ideal, w_worst as w_worst
    from query_table(anchors)
)
select * from fn_crs_scores_weighted(axes, anchors, 'crs_default_weights');

comment on macro table fn_crs_scores is 'Table macro fn_crs_scores(axes, anchors, w_d, w_c, w_le, w_r, w_dom, w_ideal, w_worst): CRS = w_dom dominance + w_ideal ideal + w_worst worst with one weighting for every grp (defaults 0.25 x4 and 0.60/0.25/0.15); returns grp, scope, encoder_id, dominance, ideal, worst, crs in [0, 1], higher is better. docs/METHODS.md §8.3.';
