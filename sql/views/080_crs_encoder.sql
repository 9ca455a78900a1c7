-- One row per (frozen panel, encoder, regime): the aggregate CRS (aggregate axes, 'global'
-- anchors, Pareto term over the whole panel minus the encoder) next to the aggregate AUROC, with
-- ranks against the panel; docs/METHODS.md §8.4 (aggregate CRS) and §8.5 (ranks).
-- fn_crs_scored over axes_encoder, ranks from fn_panel_ranks, so they too stay fixed when
-- encoders are added. The leaderboard: order by crs desc.
create or replace view crs_encoder as
with aggregates as (
    select 'global' as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
           robustness, n_datasets, pretrained
    from axes_encoder
),
scored as materialized (
    select *, discrimination as auroc from fn_crs_scored('aggregates')
),
ranks as (
    select * from fn_panel_ranks('scored')
)
select s.panel, s.encoder_id, s.regime, s.dominance, s.ideal, s.worst, s.crs, s.auroc,
       r.crs_rank, r.auroc_rank, s.in_panel, s.n_datasets, s.pretrained
from scored s
join ranks r on r.panel = s.panel and r.candidate = s.candidate;

comment on view crs_encoder is 'One row per (frozen panel, encoder, regime): the aggregate Clinical Reliability Score and aggregate AUROC with their ranks against the panel; the leaderboard (order by crs desc). docs/METHODS.md §8.4, §8.5.';
comment on column crs_encoder.panel is 'Frozen reference panel the row is scored against (table panels). docs/METHODS.md §8.1.';
comment on column crs_encoder.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column crs_encoder.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column crs_encoder.dominance is 'Pareto term: share of the other reference members in this scope whose normalised axes this encoder dominates (>= on all four, > on one); [0, 1], higher is better; NULL when no other member. docs/METHODS.md §8.3.';
comment on column crs_encoder.ideal is 'Ideal-point term 1 - sqrt(sum_a w_a (1 - x~_a)^2), w_a = 0.25; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_encoder.worst is 'Worst-axis term: the smallest of the four normalised axes; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_encoder.crs is 'Clinical Reliability Score = 0.60 dominance + 0.25 ideal + 0.15 worst; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_encoder.auroc is 'Aggregate AUROC = the aggregate discrimination axis (exact mean of the complete cells'' clean full-label AUROC); [0, 1], higher is better. docs/METHODS.md §7.';
comment on column crs_encoder.crs_rank is 'CRS rank against the reference: 1 + the number of other members with a higher CRS (1 = best; ''min'' rank for members, the place a non-member would take); NULL when crs is NULL. docs/METHODS.md §8.5.';
comment on column crs_encoder.auroc_rank is 'AUROC rank against the reference: 1 + the number of other members with a higher aggregate AUROC (1 = best); NULL when auroc is NULL. docs/METHODS.md §8.5.';
comment on column crs_encoder.in_panel is 'True when this row is a member of the reference (frozen regime and in the panel; in cohort mode every frozen-regime encoder). docs/METHODS.md §8.1.';
comment on column crs_encoder.n_datasets is 'Number of complete cells behind the aggregate axes; count. docs/METHODS.md §7.';
comment on column crs_encoder.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
