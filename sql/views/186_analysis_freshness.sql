-- One row per stored analysis output (table analyses): whether the inputs it read are still the
-- current ones. Its recorded digest (analyses.input_digest) covers the inputs it names in
-- analyses.input_encoders: an encoder's runs (encoder_run_digest) by its encoder_id, a dataset's
-- images and labels (dataset_image_digest) as images:<dataset_id> for an analysis that reads image
-- files rather than runs (the shortcut audit), or every encoder's runs when NULL. It is compared
-- with the same digest now; stale = they differ (or none was recorded): the table describes inputs
-- that have since changed. docs/METHODS.md §10.
create or replace view analysis_freshness as
with inputs as (
    select encoder_id as input, digest, true as runs from encoder_run_digest
    union all
    select 'images:' || dataset_id as input, digest, false as runs from dataset_image_digest
),
current_digest as (
    select a.analysis, a.table_name,
           md5(string_agg(d.input || '=' || d.digest, ',' order by d.input)) as current_digest
    from analyses a
    join inputs d
      on (a.input_encoders is null and d.runs) or list_contains(a.input_encoders, d.input)
    group by a.analysis, a.table_name
)
select a.analysis, a.table_name, a.created_at, a.input_digest, c.current_digest,
       a.input_digest is null or c.current_digest is null or a.input_digest <> c.current_digest as stale
from analyses a
left join current_digest c on c.analysis = a.analysis and c.table_name = a.table_name;

comment on view analysis_freshness is 'One row per stored analysis output table: the digest of the inputs it read (runs, or image files for the shortcut audit), the digest now, and stale = they differ (rerun crsbench analyze NAME). docs/METHODS.md §10.';
comment on column analysis_freshness.analysis is 'Registered analysis name (crsbench analyze NAME). docs/METHODS.md §11.';
comment on column analysis_freshness.table_name is 'Output table it wrote (analysis_<name>_<part>). docs/METHODS.md §11.';
comment on column analysis_freshness.created_at is 'When the analysis ran. docs/METHODS.md §11.';
comment on column analysis_freshness.input_digest is 'Digest of the inputs it read when it ran: the runs of its encoders, or the images of its datasets (NULL: stored before digests were kept). docs/METHODS.md §10.';
comment on column analysis_freshness.current_digest is 'The same digest over the current inputs (encoder_run_digest, dataset_image_digest). docs/METHODS.md §10.';
comment on column analysis_freshness.stale is 'True when the inputs changed since the analysis ran: its table no longer describes the current runs or images. docs/METHODS.md §10.';
