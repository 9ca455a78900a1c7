-- One row per (frozen panel, scope, encoder, regime, dominated panel member): encoder_id's
-- normalised axes Pareto-dominate dominated_id's in that scope (>= on every axis, > on one),
-- from the crs_dominance macro that the CRS Pareto term counts. scope = dataset id or 'global'.
create or replace view pareto_pairs as
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
normalised as materialized (
    select * from crs_normalise('candidate_axes', 'panel_anchors')
),
pairs as (
    select * from crs_dominance('normalised') where dominates
)
select c.panel, c.scope, c.encoder_id, c.regime, p.reference_id as dominated_id
from candidates c
join pairs p on p.grp = c.panel and p.scope = c.scope and p.encoder_id = c.candidate;
