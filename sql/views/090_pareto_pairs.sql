-- One row per (frozen panel, scope, encoder, regime, dominated panel member): encoder_id's
-- normalised axes Pareto-dominate dominated_id's in that scope (>= on every axis, > on one);
-- docs/METHODS.md §8.3 (Pareto term).
-- From the fn_dominance macro that the CRS Pareto term counts. scope = dataset id or 'global'.
create or replace view pareto_pairs as
with normalised as materialized (
    select panel as grp, scope, candidate as encoder_id, in_panel, discrimination, calibration,
           label_efficiency, robustness
    from axes_normalised
),
pairs as (
    select * from fn_dominance('normalised') where dominates
)
select n.panel, n.scope, n.encoder_id, n.regime, p.reference_id as dominated_id
from axes_normalised n
join pairs p on p.grp = n.panel and p.scope = n.scope and p.encoder_id = n.candidate;

comment on view pareto_pairs is 'One row per (frozen panel, scope, encoder, regime, dominated panel member): the pairs the CRS Pareto term counts. docs/METHODS.md §8.3.';
comment on column pareto_pairs.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column pareto_pairs.scope is 'Scope of the anchors and Pareto term: a dataset id (per-dataset) or ''global'' (aggregate axes). docs/METHODS.md §8.4.';
comment on column pareto_pairs.encoder_id is 'Encoder whose normalised axes dominate the other''s (>= on all four, > on at least one); registry name. docs/METHODS.md §8.3.';
comment on column pareto_pairs.regime is 'Regime of the dominating encoder. docs/METHODS.md §13.';
comment on column pareto_pairs.dominated_id is 'The panel member it dominates: its normalised axes are <= on all four and < on at least one. docs/METHODS.md §8.3.';
