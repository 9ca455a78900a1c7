-- One row per (encoder, regime): cohort-mode aggregate CRS, for comparison with crs_encoder;
-- docs/METHODS.md §8.6 (Cohort mode).
-- fn_crs_scored(..., cohort := true) over axes_encoder and fn_panel_ranks: the reference is every
-- frozen-regime encoder present now and the anchors are recomputed over their aggregate axes, so
-- these rows move when encoders are added. Ranks as in crs_encoder, i.e. ordinary 'min' ranks
-- within the cohort. An encoder with an unconfirmed degenerate feature set is no cohort member
-- and gets no rank (flagged; docs/METHODS.md §2.7).
create or replace view crs_cohort_encoder as
with aggregates as (
    select 'global' as scope, encoder_id, regime, discrimination, calibration, label_efficiency,
           robustness, n_datasets, pretrained
    from axes_encoder
),
scored as materialized (
    select *, discrimination as auroc from fn_crs_scored('aggregates', cohort := true)
),
ranks as (
    select * from fn_panel_ranks('scored')
),
flagged as (
    select distinct encoder_id, regime from fn_flagged_sets()
)
select s.encoder_id, s.regime, s.dominance, s.ideal, s.worst, s.crs, s.auroc,
       case when f.encoder_id is null then r.crs_rank end as crs_rank,
       case when f.encoder_id is null then r.auroc_rank end as auroc_rank,
       s.in_panel, s.n_datasets, s.pretrained, f.encoder_id is not null as flagged
from scored s
join ranks r on r.panel = s.panel and r.candidate = s.candidate
left join flagged f on f.encoder_id = s.encoder_id and f.regime = s.regime;

comment on view crs_cohort_encoder is 'One row per (encoder, regime): aggregate CRS and ranks in cohort mode: reference = every frozen-regime encoder present now; moves when encoders are added. For comparison with crs_encoder. docs/METHODS.md §8.6.';
comment on column crs_cohort_encoder.encoder_id is 'Encoder id (registry name). docs/METHODS.md §2.';
comment on column crs_cohort_encoder.regime is 'Encoder regime: frozen, or an adapted variant such as lora-s0. docs/METHODS.md §13.';
comment on column crs_cohort_encoder.dominance is 'Pareto term: share of the other cohort members in this scope whose normalised axes this encoder dominates (>= on all four, > on one); [0, 1], higher is better; NULL when no other member. docs/METHODS.md §8.3.';
comment on column crs_cohort_encoder.ideal is 'Ideal-point term 1 - sqrt(sum over the four axes a of w_a (1 - x~_a)^2), where x~_a = clip((x_a - lo_a) / (hi_a - lo_a), 0, 1) is the raw axis a normalised with the global cohort anchors lo_a (minimum over every frozen-regime encoder) and hi_a (maximum), and w_a = 0.25 is the axis weight; [0, 1], 1 = the ideal point, higher is better. docs/METHODS.md §8.3.';
comment on column crs_cohort_encoder.worst is 'Worst-axis term: the smallest of the four normalised axes; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_cohort_encoder.crs is 'Clinical Reliability Score = 0.60 dominance + 0.25 ideal + 0.15 worst; [0, 1], higher is better. docs/METHODS.md §8.3.';
comment on column crs_cohort_encoder.auroc is 'Aggregate AUROC = the aggregate discrimination axis (exact mean of the complete cells'' clean full-label AUROC); [0, 1], higher is better. docs/METHODS.md §7.';
comment on column crs_cohort_encoder.crs_rank is 'CRS rank within the cohort: 1 + the number of other frozen-regime encoders with a higher CRS (1 = best; ''min'' rank for members, the place a non-member would take); NULL when crs is NULL. docs/METHODS.md §8.5.';
comment on column crs_cohort_encoder.auroc_rank is 'AUROC rank within the cohort: 1 + the number of other frozen-regime encoders with a higher aggregate AUROC (1 = best); NULL when auroc is NULL. docs/METHODS.md §8.5.';
comment on column crs_cohort_encoder.in_panel is 'True for frozen-regime rows (the cohort members). docs/METHODS.md §8.6.';
comment on column crs_cohort_encoder.n_datasets is 'Number of complete cells behind the aggregate axes; count. docs/METHODS.md §7.';
comment on column crs_cohort_encoder.pretrained is 'True when every run behind the row used pretrained weights; false marks tiny random-initialised stand-ins. docs/METHODS.md §2.';
comment on column crs_cohort_encoder.flagged is 'True when the encoder has a degenerate feature set that no user has confirmed: it is no cohort member and gets no rank until crsbench feature-sets --confirm accepts the set. docs/METHODS.md §2.7.';
