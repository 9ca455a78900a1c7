-- One row per (encoder, regime): cohort-mode aggregate CRS, for comparison with crs_encoder.
-- Same crs_scores macro; the "panel" is every frozen-regime encoder present now and the anchors
-- are crs_anchors over their aggregate axes, so these rows move when encoders are added. Ranks
-- as in crs_encoder (1 + the number of frozen-regime encoders, other than this one, scoring
-- higher), i.e. ordinary 'min' ranks within the cohort.
create or replace view crs_cohort_encoder as
with scoped as materialized (
    select 'global' as scope, encoder_id, regime,
           encoder_key(encoder_id, regime)
               as candidate,
           discrimination, calibration, label_efficiency, robustness, n_datasets, pretrained
    from axes_encoder
),
cohort_axes as materialized (
    select 'cohort' as grp, scope, candidate as encoder_id, regime = 'frozen' as in_panel,
           discrimination, calibration, label_efficiency, robustness
    from scoped
),
cohort_anchors as (
    select * from crs_anchors('cohort_axes')
),
scores as (
    select * from crs_scores('cohort_axes', 'cohort_anchors')
),
scored as materialized (
    select a.encoder_id, a.regime, a.candidate, a.regime = 'frozen' as in_panel, a.n_datasets,
           a.pretrained, s.dominance, s.ideal, s.worst, s.crs, a.discrimination as auroc
    from scoped a
    join scores s on s.scope = a.scope and s.encoder_id = a.candidate
),
ranks as (
    select x.candidate,
           case when x.crs is not null then 1 + count(*) filter (where y.crs > x.crs) end as crs_rank,
           case when x.auroc is not null then 1 + count(*) filter (where y.auroc > x.auroc) end
               as auroc_rank
    from scored x
    left join scored y on y.in_panel and y.candidate <> x.candidate
    group by x.candidate, x.crs, x.auroc
)
select s.encoder_id, s.regime, s.dominance, s.ideal, s.worst, s.crs, s.auroc, r.crs_rank,
       r.auroc_rank, s.in_panel, s.n_datasets, s.pretrained
from scored s
join ranks r using (candidate);
