-- One row per (panel, resample, encoder, regime) of crs_encoder: the CRS and AUROC with their 95 %
-- bootstrap intervals (bootstrap_intervals, aggregate rows; frozen-regime members only, other rows
-- have NULL intervals and resample NULL when the panel has no bootstrap yet) and the tier: '=1'
-- for every encoder whose CRS gap to the leader has an interval reaching 0 when there are several
-- ('1' when the leader stands alone), else its CRS rank.
-- An interval that cannot vary (bootstrap_intervals.note) is NULL with its note here, and its
-- NULL CRS gap counts in no tie.
-- A stale bootstrap (bootstrap_freshness: its runs changed since it ran) gives no interval and
-- no tie here: stale is true and the intervals are NULL, so an old interval is never shown
-- beside a current point estimate; rerun the bootstrap to fill them.
-- docs/METHODS.md §10 (Uncertainty).
-- bootstrap_freshness (the run digests) is evaluated once (freshness) for both of its uses.
create or replace view crs_encoder_ci as
with freshness as materialized (
    select panel, resample, stale from bootstrap_freshness
),
resamples as (
    select distinct panel, resample from bootstrap_intervals
),
ci as (
    select panel, resample, encoder_id,
           max(lo) filter (where metric = 'crs') as crs_lo,
           max(hi) filter (where metric = 'crs') as crs_hi,
           max(lo) filter (where metric = 'discrimination') as auroc_lo,
           max(hi) filter (where metric = 'discrimination') as auroc_hi,
           max(lo) filter (where metric = 'crs_gap') as gap_lo,
           max(hi) filter (where metric = 'crs_gap') as gap_hi,
           max(lo) filter (where metric = 'auroc_rank') as auroc_rank_lo,
           max(hi) filter (where metric = 'auroc_rank') as auroc_rank_hi,
           max(replicates) filter (where metric = 'crs') as replicates,
           max(note) filter (where metric = 'crs') as crs_note,
           max(note) filter (where metric = 'discrimination') as auroc_note
    from bootstrap_intervals b
    where dataset_id is null and encoder_id is not null
      and not exists (
          select 1 from freshness f
          where f.panel = b.panel and f.resample = b.resample and f.stale
      )
    group by panel, resample, encoder_id
),
joined as (
    select c.panel, r.resample, c.encoder_id, c.regime, c.crs, i.crs_lo, i.crs_hi, c.auroc,
           i.auroc_lo, i.auroc_hi, i.gap_lo, i.gap_hi, c.crs_rank, c.auroc_rank, i.auroc_rank_lo,
           i.auroc_rank_hi, c.in_panel, c.n_datasets, c.pretrained, i.replicates,
           coalesce(f.stale, false) as stale, c.coverage, i.crs_note, i.auroc_note
    from crs_encoder c
    left join resamples r on r.panel = c.panel
    left join freshness f on f.panel = r.panel and f.resample = r.resample
    left join ci i on i.panel = c.panel and i.resample = r.resample
         and i.encoder_id = c.encoder_id and c.regime = 'frozen'
),
tied as (
    select *,
           count(*) filter (where gap_lo <= 0) over (partition by panel, resample) as n_tied
    from joined
)
select panel, resample, encoder_id, regime, crs, crs_lo, crs_hi, auroc, auroc_lo, auroc_hi,
       case when gap_lo is null then crs_rank::varchar
            when gap_lo <= 0 and n_tied > 1 then '=1'
            when gap_lo <= 0 then '1'
            else crs_rank::varchar end as tier,
       gap_lo, gap_hi, crs_rank, auroc_rank, auroc_rank_lo, auroc_rank_hi, in_panel, n_datasets,
       pretrained, replicates, stale, coverage, crs_note, auroc_note
from tied;

comment on view crs_encoder_ci is 'One row per (panel, resample, encoder, regime) of crs_encoder with 95 % bootstrap intervals of CRS and AUROC and the tier (=1: tied with the leader). docs/METHODS.md §10.';
comment on column crs_encoder_ci.panel is 'Frozen reference panel the scores and the bootstrap are taken against (table panels). docs/METHODS.md §8.1.';
comment on column crs_encoder_ci.resample is 'The bootstrap the intervals come from (images+seeds, seeds, images); NULL when the panel has none. docs/METHODS.md §10.';
comment on column crs_encoder_ci.encoder_id is 'Encoder scored (registry name); one row per panel, resample and regime. docs/METHODS.md §2.';
comment on column crs_encoder_ci.regime is 'frozen or an adaptation regime (intervals exist for frozen members only). docs/METHODS.md §10.';
comment on column crs_encoder_ci.crs is 'Aggregate CRS (crs_encoder). docs/METHODS.md §10.';
comment on column crs_encoder_ci.crs_lo is '2.5th percentile of the CRS over the replicates. docs/METHODS.md §10.';
comment on column crs_encoder_ci.crs_hi is '97.5th percentile of the CRS over the replicates. docs/METHODS.md §10.';
comment on column crs_encoder_ci.auroc is 'Aggregate AUROC (= discrimination). docs/METHODS.md §10.';
comment on column crs_encoder_ci.auroc_lo is '2.5th percentile of the aggregate AUROC. docs/METHODS.md §10.';
comment on column crs_encoder_ci.auroc_hi is '97.5th percentile of the aggregate AUROC. docs/METHODS.md §10.';
comment on column crs_encoder_ci.tier is '=1 when the interval of the CRS gap to the leader reaches 0 (several encoders share rank 1), 1 for a leader alone, else the CRS rank. docs/METHODS.md §10.';
comment on column crs_encoder_ci.gap_lo is '2.5th percentile of the leader''s CRS minus this encoder''s (paired per replicate). docs/METHODS.md §10.';
comment on column crs_encoder_ci.gap_hi is '97.5th percentile of the CRS gap to the leader. docs/METHODS.md §10.';
comment on column crs_encoder_ci.crs_rank is 'CRS rank against the panel (crs_encoder). docs/METHODS.md §10.';
comment on column crs_encoder_ci.auroc_rank is 'AUROC rank against the panel (crs_encoder). docs/METHODS.md §10.';
comment on column crs_encoder_ci.auroc_rank_lo is '2.5th percentile of the AUROC rank among the members. docs/METHODS.md §10.';
comment on column crs_encoder_ci.auroc_rank_hi is '97.5th percentile of the AUROC rank among the members. docs/METHODS.md §10.';
comment on column crs_encoder_ci.in_panel is 'Whether the encoder is a panel member. docs/METHODS.md §10.';
comment on column crs_encoder_ci.n_datasets is 'Complete cells the aggregate averages. docs/METHODS.md §10.';
comment on column crs_encoder_ci.pretrained is 'Whether the encoder carries pretrained weights. docs/METHODS.md §10.';
comment on column crs_encoder_ci.replicates is 'Replicates with a CRS value. docs/METHODS.md §10.';
comment on column crs_encoder_ci.stale is 'True when the stored bootstrap of this panel and resample read runs that have changed since (bootstrap_freshness): its intervals and ties are withheld (NULL) rather than shown beside the current CRS; rerun crsbench analyze bootstrap --panel P. docs/METHODS.md §10.';
comment on column crs_encoder_ci.coverage is 'full or partial, as crs_encoder.coverage: partial encoders miss a panel dataset and have no aggregate rank. docs/METHODS.md §8.5.';
comment on column crs_encoder_ci.crs_note is 'Why crs_lo / crs_hi are NULL although the bootstrap ran (bootstrap_intervals.note): the CRS cannot vary under this resampling for any member (then no tie is counted either), or is pinned at one value for this one. NULL otherwise. docs/METHODS.md §10.';
comment on column crs_encoder_ci.auroc_note is 'Why auroc_lo / auroc_hi are NULL although the bootstrap ran (bootstrap_intervals.note), e.g. the AUROC under seeds resampling. NULL otherwise. docs/METHODS.md §10.';
