-- One row per (frozen panel, scope, encoder, regime): the four axes normalised by the panel's
-- frozen anchors for that scope (dataset id or 'global'), x~ = clip((x - lo) / (hi - lo), 0, 1),
-- via the crs_normalise macro. Scopes the panel has no anchors for are absent. `candidate` is the
-- key the CRS macros score (encoder id, or encoder@regime for adapted variants).
create or replace view axes_normalised as
with candidates as materialized (
    select * from crs_candidates
),
candidate_axes as (
    select panel as grp, scope, candidate as encoder_id, in_panel, discrimination, calibration,
           label_efficiency, robustness
    from candidates
),
panel_anchors as (
    select panel as grp, scope, axis, lo, hi from reference_anchors
),
normalised as (
    select * from crs_normalise('candidate_axes', 'panel_anchors')
)
select c.panel, c.scope, c.encoder_id, c.regime, c.candidate, c.in_panel,
       n.discrimination, n.calibration, n.label_efficiency, n.robustness
from candidates c
join normalised n on n.grp = c.panel and n.scope = c.scope and n.encoder_id = c.candidate;
