-- Table macro fn_crs_scored(scoped, cohort := false) returns one row per (panel, scope, encoder,
-- regime) of fn_candidates(scoped, cohort) that has anchors: its CRS and the three terms;
-- docs/METHODS.md §8.4 (per-dataset and aggregate CRS) and §8.6 (cohort mode).
-- The wiring the CRS views share: candidates, their anchors, fn_crs_scores.
--   cohort = false: the anchors frozen with each panel (table reference_anchors), so a row never
--                   changes when another encoder is added (fixed reference, §8.5);
--   cohort = true:  anchors recomputed by fn_anchors over the current frozen-regime cohort, so
--                   rows move when encoders are added; a degenerate axis gives NULL, not an error.
-- The Pareto term of a row counts the reference members present in its scope (the members
-- observed on that dataset, or all of them for 'global'), the encoder itself excluded.
-- Returns (panel, scope, encoder_id, regime, candidate, in_panel, discrimination, calibration,
-- label_efficiency, robustness, n_datasets, pretrained, dominance, ideal, worst, crs); the axes
-- are the raw (not normalised) ones.
create or replace macro fn_crs_scored(scoped, cohort := false) as table
with candidates as materialized (
    select * from fn_candidates(scoped, cohort := cohort)
),
candidate_axes as (
    select panel as grp, scope, candidate as encoder_id, in_panel, discrimination, calibration,
           label_efficiency, robustness
    from candidates
),
candidate_anchors as (
    select panel as grp, scope, axis, lo, hi from reference_anchors where not cohort
    union all
    select grp, scope, axis, lo, hi from fn_anchors('candidate_axes') where cohort
),
scores as (
    select * from fn_crs_scores('candidate_axes', 'candidate_anchors')
)
select c.*, s.dominance, s.ideal, s.worst, s.crs
from candidates c
join scores s on s.grp = c.panel and s.scope = c.scope and s.encoder_id = c.candidate;

comment on macro table fn_crs_scored is 'Table macro fn_crs_scored(scoped, cohort := false): the candidates of fn_candidates with their CRS terms (dominance, ideal, worst, crs), against frozen anchors (cohort false) or anchors recomputed over the current cohort (cohort true). docs/METHODS.md §8.4-§8.6.';
