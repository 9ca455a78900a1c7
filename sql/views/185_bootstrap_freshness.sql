-- One row per stored bootstrap (panel, resample): whether the runs it read are still the current
-- ones. The digest it recorded (bootstrap_intervals.input_digest) is compared with the digest of
-- the same encoders now (encoder_run_digest); a difference (a run added, deleted or recomputed, a
-- cell made incomplete by a widened grid) makes the bootstrap stale: crs_encoder_ci and the
-- leaderboard then show no interval beside the current point estimate. docs/METHODS.md §10.
create or replace view bootstrap_freshness as
with stored as (
    select panel, resample, min(input_digest) as input_digest,
           count(distinct encoder_id) as n_encoders
    from bootstrap_intervals
    group by panel, resample
),
members as (
    select distinct panel, resample, encoder_id
    from bootstrap_intervals
    where encoder_id is not null
),
current_digest as (
    select m.panel, m.resample,
           md5(string_agg(m.encoder_id || '=' || d.digest, ',' order by m.encoder_id)) as current_digest
    from members m
    join encoder_run_digest d on d.encoder_id = m.encoder_id
    group by m.panel, m.resample
)
select s.panel, s.resample, s.n_encoders, s.input_digest, c.current_digest,
       s.input_digest is null or c.current_digest is null or s.input_digest <> c.current_digest as stale
from stored s
left join current_digest c on c.panel = s.panel and c.resample = s.resample;

comment on view bootstrap_freshness is 'One row per stored bootstrap (panel, resample): the digest of the runs it read, the digest of the same encoders'' runs now, and stale = they differ (its intervals no longer belong to the current point estimates; rerun crsbench analyze bootstrap --panel P). docs/METHODS.md §10.';
comment on column bootstrap_freshness.panel is 'Frozen panel (or cohort) of the stored bootstrap. docs/METHODS.md §8.1.';
comment on column bootstrap_freshness.resample is 'What the bootstrap resampled: images+seeds, seeds or images. docs/METHODS.md §10.';
comment on column bootstrap_freshness.n_encoders is 'Encoders with intervals in the stored bootstrap; count. docs/METHODS.md §10.';
comment on column bootstrap_freshness.input_digest is 'Digest of the runs the bootstrap read, recorded when it ran (NULL: stored before digests were kept). docs/METHODS.md §10.';
comment on column bootstrap_freshness.current_digest is 'Digest of the same encoders'' runs now (from encoder_run_digest). docs/METHODS.md §10.';
comment on column bootstrap_freshness.stale is 'True when the runs changed since the bootstrap ran (digests differ or none was recorded): its intervals must not be read as those of the current scores. docs/METHODS.md §10.';
