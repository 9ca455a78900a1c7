-- One row per (frozen panel, encoder, regime): the aggregate CRS of SPEC 5.2 (aggregate axes,
-- 'global' anchors, Pareto term over the whole panel minus the encoder) from crs_scores, next to
-- the aggregate AUROC (= aggregate discrimination).
-- Ranks are taken against the panel so that they too stay fixed when encoders are added:
-- crs_rank = 1 + the number of panel members (other than the encoder) with a higher CRS, and
-- likewise auroc_rank. For members this is their 'min' rank within the panel; for any other
-- encoder it is the place it would take among the panel. Leaderboard: order by crs desc.
create or replace view crs_encoder as
with aggregates as (
    select 'global' as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
           robustness, n_datasets, pretrained
    from axes_encoder
),
candidates as materialized (
    select * from crs_panel_candidates('aggregates')
),
global_axes as (
    select panel as grp, scope, candidate as encoder_id, in_panel, discrimination, calibration,
           label_efficiency, robustness
    from candidates
),
global_anchors as (
    select panel as grp, scope, axis, lo, hi from reference_anchors where scope = 'global'
),
scores as (
    select * from crs_scores('global_axes', 'global_anchors')
),
scored as materialized (
    select c.panel, c.encoder_id, c.regime, c.candidate, c.in_panel, c.n_datasets, c.pretrained,
           s.dominance, s.ideal, s.worst, s.crs, c.discrimination as auroc
    from candidates c
    join scores s on s.grp = c.panel and s.scope = c.scope and s.encoder_id = c.candidate
),
ranks as (
    select x.panel, x.candidate,
           case when x.crs is not null then 1 + count(*) filter (where y.crs > x.crs) end as crs_rank,
           case when x.auroc is not null then 1 + count(*) filter (where y.auroc > x.auroc) end
               as auroc_rank
    from scored x
    left join scored y on y.panel = x.panel and y.in_panel and y.candidate <> x.candidate
    group by x.panel, x.candidate, x.crs, x.auroc
)
select s.panel, s.encoder_id, s.regime, s.dominance, s.ideal, s.worst, s.crs, s.auroc,
       r.crs_rank, r.auroc_rank, s.in_panel, s.n_datasets, s.pretrained
from scored s
join ranks r on r.panel = s.panel and r.candidate = s.candidate;
