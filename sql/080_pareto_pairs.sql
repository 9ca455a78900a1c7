-- One row per (frozen panel, scope, encoder, regime, dominated panel member): encoder_id's
-- normalised axes Pareto-dominate dominated_id's in that scope (>= on every axis, > on one),
-- from the crs_dominance macro that the CRS Pareto term counts. scope = dataset id or 'global'.
create or replace view pareto_pairs as
with normalised as materialized (
    select panel as grp, scope, candidate as encoder_id, in_panel, discrimination, calibration,
           label_efficiency, robustness
    from axes_normalised
),
pairs as (
    select * from crs_dominance('normalised') where dominates
)
select n.panel, n.scope, n.encoder_id, n.regime, p.reference_id as dominated_id
from axes_normalised n
join pairs p on p.grp = n.panel and p.scope = n.scope and p.encoder_id = n.candidate;
