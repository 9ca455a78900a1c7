-- One row per stored analysis output (table analyses): whether the runs it read are still the
-- current ones. Its recorded digest (analyses.input_digest: the encoder_run_digest of the
-- encoders it names, analyses.input_encoders, or of every encoder when NULL) is compared with the
-- same digest now; stale = they differ (or none was recorded): the table describes runs that have
-- since changed. docs/METHODS.md §10.
create or replace view analysis_freshness as
with current_digest as (
    select a.analysis, a.table_name,
           md5(string_agg(d.encoder_id || '=' || d.digest, ',' order by d.encoder_id)) as current_digest
    from analyses a
    join encoder_run_digest d
      on a.input_encoders is null or list_contains(a.input_encoders, d.encoder_id)
    group by a.analysis, a.table_name
)
select a.analysis, a.table_name, a.created_at, a.input_digest, c.current_digest,
       a.input_digest is null or c.current_digest is null or a.input_digest <> c.current_digest as stale
from analyses a
left join current_digest c on c.analysis = a.analysis and c.table_name = a.table_name;

comment on view analysis_freshness is 'One row per stored analysis output table: the digest of the runs it read, the digest now, and stale = they differ (rerun crsbench analyze NAME). docs/METHODS.md §10.';
comment on column analysis_freshness.analysis is 'Registered analysis name (crsbench analyze NAME). docs/METHODS.md §11.';
comment on column analysis_freshness.table_name is 'Output table it wrote (analysis_<name>_<part>). docs/METHODS.md §11.';
comment on column analysis_freshness.created_at is 'When the analysis ran. docs/METHODS.md §11.';
comment on column analysis_freshness.input_digest is 'Digest of every encoder''s runs when it ran (NULL: stored before digests were kept). docs/METHODS.md §10.';
comment on column analysis_freshness.current_digest is 'The same digest over the current runs of the same encoders (encoder_run_digest). docs/METHODS.md §10.';
comment on column analysis_freshness.stale is 'True when the runs changed since the analysis ran: its table no longer describes the current runs. docs/METHODS.md §10.';
